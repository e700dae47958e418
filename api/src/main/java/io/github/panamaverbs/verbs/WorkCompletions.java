package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

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
 * Not thread-safe: use one batch per polling thread. A poll overwrites what the previous one read.
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
    // enum ibv_wc_flags: the C ABI's bits, written out so that this class loads without rdma-core
    // (EnumValuesTest checks them against the bindings).
    static final int IBV_WC_GRH = 1;
    static final int IBV_WC_WITH_IMM = 1 << 1;
    static final int IBV_WC_WITH_INV = 1 << 3;

    /** Most completions one batch may hold (no device's completion queue holds more). */
    static final int MAX_CAPACITY = 1 << 22;

    final MemorySegment segment;
    /** What a poll passes to C: as {@link WorkRequest#callWr}, the plain address of memory the GC frees, else {@link #segment}. */
    final MemorySegment callSegment;
    /** The address of memory the GC frees, for a confined view's raw poll; 0 for a caller's arena (polled through {@link #callSegment}). */
    final long callAddress;
    final int capacity;
    int count;

    /**
     * A batch of {@code capacity} completions in memory the garbage collector frees.
     *
     * @param capacity the most completions one poll reads, 1 to 2<sup>22</sup>
     * @throws IllegalArgumentException if {@code capacity} is out of range
     */
    public WorkCompletions(int capacity) {
        this(capacity, null, true);
    }

    /**
     * A batch of {@code capacity} completions allocated in {@code arena}.
     *
     * @param capacity the most completions one poll reads, 1 to 2<sup>22</sup>
     * @param arena    where the batch's memory is allocated; polling into the batch fails once it is closed
     * @throws IllegalArgumentException if {@code capacity} is out of range
     * @throws IllegalStateException    if {@code arena} is closed
     */
    public WorkCompletions(int capacity, Arena arena) {
        this(capacity, Objects.requireNonNull(arena, "arena"), false);
    }

    private WorkCompletions(int capacity, Arena arena, boolean gc) {
        if (capacity <= 0 || capacity > MAX_CAPACITY) {
            throw new IllegalArgumentException("capacity must be in [1, " + MAX_CAPACITY + "], not " + capacity);
        }
        this.capacity = capacity;
        try {
            this.segment = (gc ? Arena.ofAuto() : arena).allocate(ibv_wc.layout(), capacity);
        } catch (IllegalStateException e) {
            throw new IllegalStateException("cannot allocate a WorkCompletions batch in a closed arena", e);
        }
        this.callSegment = gc ? MemorySegment.ofAddress(segment.address()) : segment;
        this.callAddress = gc ? segment.address() : 0;
    }

    /** {@return how many completions the batch holds: the most one poll reads} */
    public int capacity() {
        return capacity;
    }

    /** {@return how many completions the last poll returned: the valid indexes are below it} */
    public int count() {
        return count;
    }

    long at(int i) {
        return Objects.checkIndex(i, count) * SIZE;
    }

    // The fields of completion i; a batch whose arena is closed is named ("... has been freed"), not
    // left to FFM's bare "Already closed".

    private long getLong(int i, long field) {
        try {
            return segment.get(JAVA_LONG, at(i) + field);
        } catch (IllegalStateException e) {
            throw freed(e);
        }
    }

    private int getInt(int i, long field) {
        try {
            return segment.get(JAVA_INT, at(i) + field);
        } catch (IllegalStateException e) {
            throw freed(e);
        }
    }

    private short getShort(int i, long field) {
        try {
            return segment.get(JAVA_SHORT, at(i) + field);
        } catch (IllegalStateException e) {
            throw freed(e);
        }
    }

    private byte getByte(int i, long field) {
        try {
            return segment.get(JAVA_BYTE, at(i) + field);
        } catch (IllegalStateException e) {
            throw freed(e);
        }
    }

    private IllegalStateException freed(IllegalStateException e) {
        return segment.scope().isAlive() ? e
                : new IllegalStateException("the memory of the WorkCompletions batch has been freed (its arena is closed)", e);
    }

    /**
     * {@return {@code wr_id}: the id of the work request that completed}
     *
     * @param i the index of the completion, from 0, below {@link #count()}
     * @throws IndexOutOfBoundsException if {@code i} is not in [0, {@link #count()})
     */
    public long wrId(int i) {
        return getLong(i, WR_ID);
    }

    /**
     * {@return {@code status}: {@link WcStatus#SUCCESS}, or why the request failed}
     *
     * @param i the index of the completion, from 0, below {@link #count()}
     * @throws IndexOutOfBoundsException if {@code i} is not in [0, {@link #count()})
     */
    public WcStatus status(int i) {
        return WcStatus.of(getInt(i, STATUS));
    }

    /**
     * {@return {@code opcode}: what completed; meaningful only when {@link #status(int)} is SUCCESS}
     *
     * @param i the index of the completion, from 0, below {@link #count()}
     * @throws IndexOutOfBoundsException if {@code i} is not in [0, {@link #count()})
     */
    public WcOpcode opcode(int i) {
        return WcOpcode.of(getInt(i, OPCODE));
    }

    /**
     * {@return {@code vendor_err}: the provider's own error code}
     *
     * @param i the index of the completion, from 0, below {@link #count()}
     * @throws IndexOutOfBoundsException if {@code i} is not in [0, {@link #count()})
     */
    public int vendorError(int i) {
        return getInt(i, VENDOR_ERR);
    }

    /**
     * {@return {@code byte_len}: the bytes received (receives) or transferred}
     *
     * @param i the index of the completion, from 0, below {@link #count()}
     * @throws IndexOutOfBoundsException if {@code i} is not in [0, {@link #count()})
     */
    public int byteLength(int i) {
        return getInt(i, BYTE_LEN);
    }

    /**
     * {@return {@code imm_data}, in host order ({@code ntohl} done); valid when {@link #hasImmediate(int)}}
     *
     * @param i the index of the completion, from 0, below {@link #count()}
     * @throws IndexOutOfBoundsException if {@code i} is not in [0, {@link #count()})
     */
    public int immediate(int i) {
        return Integer.reverseBytes(getInt(i, IMM_DATA));
    }

    /**
     * {@return {@code qp_num}: the local queue pair that completed the request}
     *
     * @param i the index of the completion, from 0, below {@link #count()}
     * @throws IndexOutOfBoundsException if {@code i} is not in [0, {@link #count()})
     */
    public int qpNumber(int i) {
        return getInt(i, QP_NUM);
    }

    /**
     * {@return {@code src_qp}: the sending queue pair of a UD receive}
     *
     * @param i the index of the completion, from 0, below {@link #count()}
     * @throws IndexOutOfBoundsException if {@code i} is not in [0, {@link #count()})
     */
    public int sourceQp(int i) {
        return getInt(i, SRC_QP);
    }

    /**
     * {@return {@code wc_flags}: {@code IBV_WC_GRH}, {@code IBV_WC_WITH_IMM}, …}
     *
     * @param i the index of the completion, from 0, below {@link #count()}
     * @throws IndexOutOfBoundsException if {@code i} is not in [0, {@link #count()})
     */
    public int flags(int i) {
        return getInt(i, WC_FLAGS);
    }

    /**
     * {@return whether {@code IBV_WC_WITH_IMM} is set: the completion carries immediate data}
     *
     * @param i the index of the completion, from 0, below {@link #count()}
     * @throws IndexOutOfBoundsException if {@code i} is not in [0, {@link #count()})
     */
    public boolean hasImmediate(int i) {
        return (flags(i) & IBV_WC_WITH_IMM) != 0;
    }

    /**
     * {@return whether {@code IBV_WC_WITH_INV} is set: a received {@code SEND_WITH_INV} invalidated
     * {@link #invalidatedRkey(int)} here} Soft-RoCE (rxe, as of Linux 6.1) passes the kernel's flags
     * through unconverted and sets bit 2 instead (the kernel's {@code IB_WC_WITH_INVALIDATE}, which is
     * {@code IBV_WC_IP_CSUM_OK} here), so this is false there; {@link #invalidatedRkey(int)} is right.
     *
     * @param i the index of the completion, from 0, below {@link #count()}
     * @throws IndexOutOfBoundsException if {@code i} is not in [0, {@link #count()})
     */
    public boolean hasInvalidated(int i) {
        return (flags(i) & IBV_WC_WITH_INV) != 0;
    }

    /**
     * {@return {@code invalidated_rkey}: the local key a received {@code SEND_WITH_INV} invalidated
     * (it shares memory with {@code imm_data} and is not byte-swapped); valid when
     * {@link #hasInvalidated(int)}}
     *
     * @param i the index of the completion, from 0, below {@link #count()}
     * @throws IndexOutOfBoundsException if {@code i} is not in [0, {@link #count()})
     */
    public int invalidatedRkey(int i) {
        return getInt(i, IMM_DATA);
    }

    /**
     * {@return whether {@code IBV_WC_GRH} is set: a UD receive buffer starts with the 40-byte GRH}
     *
     * @param i the index of the completion, from 0, below {@link #count()}
     * @throws IndexOutOfBoundsException if {@code i} is not in [0, {@link #count()})
     */
    public boolean hasGrh(int i) {
        return (flags(i) & IBV_WC_GRH) != 0;
    }

    /**
     * {@return {@code pkey_index}: the partition key index (UD and GSI receives)}
     *
     * @param i the index of the completion, from 0, below {@link #count()}
     * @throws IndexOutOfBoundsException if {@code i} is not in [0, {@link #count()})
     */
    public int pkeyIndex(int i) {
        return Short.toUnsignedInt(getShort(i, PKEY_INDEX));
    }

    /**
     * {@return {@code slid}: the source LID (InfiniBand)}
     *
     * @param i the index of the completion, from 0, below {@link #count()}
     * @throws IndexOutOfBoundsException if {@code i} is not in [0, {@link #count()})
     */
    public int sourceLid(int i) {
        return Short.toUnsignedInt(getShort(i, SLID));
    }

    /**
     * {@return {@code sl}: the service level}
     *
     * @param i the index of the completion, from 0, below {@link #count()}
     * @throws IndexOutOfBoundsException if {@code i} is not in [0, {@link #count()})
     */
    public int serviceLevel(int i) {
        return Byte.toUnsignedInt(getByte(i, SL));
    }

    /**
     * {@return {@code dlid_path_bits}: the destination LID path bits (InfiniBand)}
     *
     * @param i the index of the completion, from 0, below {@link #count()}
     * @throws IndexOutOfBoundsException if {@code i} is not in [0, {@link #count()})
     */
    public int dlidPathBits(int i) {
        return Byte.toUnsignedInt(getByte(i, DLID_PATH_BITS));
    }

    @Override
    public String toString() {
        if (!segment.scope().isAlive()) {
            return "WorkCompletions[freed]";
        }
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
