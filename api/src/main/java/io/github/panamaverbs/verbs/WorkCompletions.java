package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_wc;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * A reusable batch of work completions: a pre-allocated {@code struct ibv_wc[]} that
 * {@link CompletionQueue#poll(WorkCompletions)} fills, read through index-based accessors that
 * allocate nothing.
 *
 * <pre>{@code
 * WorkCompletions wc = new WorkCompletions(16);
 * int n = cq.poll(wc);
 * for (int i = 0; i < n; i++) {
 *     if (wc.status(i) != WcStatus.SUCCESS) { ... wc.status(i).description() ... }
 *     long id = wc.wrId(i);
 * }
 * }</pre>
 * Not thread-safe: use one batch per polling thread.
 */
public final class WorkCompletions {
    static final long SIZE = ibv_wc.sizeof();
    private static final long WR_ID = ibv_wc.wr_id$offset();
    private static final long STATUS = ibv_wc.status$offset();
    private static final long OPCODE = ibv_wc.opcode$offset();
    private static final long VENDOR_ERR = ibv_wc.vendor_err$offset();
    private static final long BYTE_LEN = ibv_wc.byte_len$offset();
    private static final long IMM_DATA = ibv_wc.imm_data$offset();
    private static final long QP_NUM = ibv_wc.qp_num$offset();
    private static final long SRC_QP = ibv_wc.src_qp$offset();
    private static final long WC_FLAGS = ibv_wc.wc_flags$offset();
    private static final long PKEY_INDEX = ibv_wc.pkey_index$offset();
    private static final long SLID = ibv_wc.slid$offset();
    private static final long SL = ibv_wc.sl$offset();
    private static final long DLID_PATH_BITS = ibv_wc.dlid_path_bits$offset();
    private static final int WITH_IMM = Verbs.IBV_WC_WITH_IMM();
    private static final int GRH = Verbs.IBV_WC_GRH();

    /** Most completions one batch may hold (no device's completion queue holds more). */
    static final int MAX_CAPACITY = 1 << 22;

    final MemorySegment segment;
    final int capacity;
    int count;

    /** A batch of {@code capacity} completions in memory the garbage collector frees. */
    public WorkCompletions(int capacity) {
        this(capacity, Arena.ofAuto());
    }

    /** A batch of {@code capacity} completions allocated in {@code arena}. */
    public WorkCompletions(int capacity, Arena arena) {
        if (capacity <= 0 || capacity > MAX_CAPACITY) {
            throw new IllegalArgumentException("capacity must be in [1, " + MAX_CAPACITY + "], not " + capacity);
        }
        Objects.requireNonNull(arena, "arena");
        this.capacity = capacity;
        this.segment = arena.allocate(ibv_wc.layout(), capacity);
    }

    /** How many completions the batch holds. */
    public int capacity() {
        return capacity;
    }

    /** How many completions the last poll returned. */
    public int count() {
        return count;
    }

    private long at(int i) {
        return Objects.checkIndex(i, count) * SIZE;
    }

    /** {@code wr_id}: the id of the work request that completed. */
    public long wrId(int i) {
        return segment.get(JAVA_LONG, at(i) + WR_ID);
    }

    /** {@code status}. */
    public WcStatus status(int i) {
        return WcStatus.of(segment.get(JAVA_INT, at(i) + STATUS));
    }

    /** {@code opcode}: meaningful only when {@link #status(int)} is SUCCESS. */
    public WcOpcode opcode(int i) {
        return WcOpcode.of(segment.get(JAVA_INT, at(i) + OPCODE));
    }

    /** {@code vendor_err}: the provider's own error code. */
    public int vendorError(int i) {
        return segment.get(JAVA_INT, at(i) + VENDOR_ERR);
    }

    /** {@code byte_len}: bytes received (receives) or transferred. */
    public int byteLength(int i) {
        return segment.get(JAVA_INT, at(i) + BYTE_LEN);
    }

    /** {@code imm_data}, in host order ({@code ntohl} done); valid when {@link #hasImmediate(int)}. */
    public int immediate(int i) {
        return Integer.reverseBytes(segment.get(JAVA_INT, at(i) + IMM_DATA));
    }

    /** {@code qp_num}: the local queue pair that completed the request. */
    public int qpNumber(int i) {
        return segment.get(JAVA_INT, at(i) + QP_NUM);
    }

    /** {@code src_qp}: the sending queue pair of a UD receive. */
    public int sourceQp(int i) {
        return segment.get(JAVA_INT, at(i) + SRC_QP);
    }

    /** {@code wc_flags}: {@code IBV_WC_GRH}, {@code IBV_WC_WITH_IMM}, … */
    public int flags(int i) {
        return segment.get(JAVA_INT, at(i) + WC_FLAGS);
    }

    /** Whether {@code IBV_WC_WITH_IMM} is set: the completion carries immediate data. */
    public boolean hasImmediate(int i) {
        return (flags(i) & WITH_IMM) != 0;
    }

    /** Whether {@code IBV_WC_GRH} is set: a UD receive buffer starts with the 40-byte GRH. */
    public boolean hasGrh(int i) {
        return (flags(i) & GRH) != 0;
    }

    /** {@code pkey_index}. */
    public int pkeyIndex(int i) {
        return Short.toUnsignedInt(segment.get(JAVA_SHORT, at(i) + PKEY_INDEX));
    }

    /** {@code slid}: the source LID (InfiniBand). */
    public int sourceLid(int i) {
        return Short.toUnsignedInt(segment.get(JAVA_SHORT, at(i) + SLID));
    }

    /** {@code sl}: the service level. */
    public int serviceLevel(int i) {
        return Byte.toUnsignedInt(segment.get(JAVA_BYTE, at(i) + SL));
    }

    /** {@code dlid_path_bits}. */
    public int dlidPathBits(int i) {
        return Byte.toUnsignedInt(segment.get(JAVA_BYTE, at(i) + DLID_PATH_BITS));
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("WorkCompletions[");
        for (int i = 0; i < count; i++) {
            sb.append(i == 0 ? "" : ", ").append("{wr_id=").append(wrId(i)).append(", ").append(status(i));
            if (status(i) == WcStatus.SUCCESS) {
                sb.append(", ").append(opcode(i)).append(", byte_len=").append(byteLength(i));
            }
            sb.append('}');
        }
        return sb.append(']').toString();
    }
}
