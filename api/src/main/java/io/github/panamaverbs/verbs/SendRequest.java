package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.github.panamaverbs.bindings.ibv_send_wr;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Set;

/**
 * A send work request ({@code struct ibv_send_wr} with its {@code ibv_sge} list), built once off-heap
 * and changed in place: posting it again costs no allocation. Setters write straight into the C
 * struct and return {@code this}.
 *
 * <pre>{@code
 * SendRequest write = new SendRequest(1)
 *         .opcode(SendOpcode.RDMA_WRITE).signaled(true)
 *         .sge(mr, 0, 64)
 *         .rdma(remoteAddress, remoteKey);
 * qp.postSend(write);      // again and again
 * }</pre>
 *
 * <p>Every scatter/gather entry is checked against its {@link MemoryRegion} when set (the range) and
 * when posted (the region and its memory still alive), so a bad entry never reaches the device.
 * Requests can be chained with {@link #next(SendRequest)} and posted in one call. Not thread-safe.
 */
public final class SendRequest {
    static final long WR_SIZE = ibv_send_wr.sizeof();
    private static final long WR_ID = ibv_send_wr.wr_id$offset();
    private static final long NEXT = ibv_send_wr.next$offset();
    private static final long SG_LIST = ibv_send_wr.sg_list$offset();
    private static final long NUM_SGE = ibv_send_wr.num_sge$offset();
    private static final long OPCODE = ibv_send_wr.opcode$offset();
    private static final long SEND_FLAGS = ibv_send_wr.send_flags$offset();
    private static final long IMM_DATA = ibv_send_wr.imm_data$offset();
    private static final long WR = ibv_send_wr.wr$offset();
    private static final long RDMA_ADDR = WR + ibv_send_wr.wr.rdma$offset() + ibv_send_wr.wr.rdma.remote_addr$offset();
    private static final long RDMA_RKEY = WR + ibv_send_wr.wr.rdma$offset() + ibv_send_wr.wr.rdma.rkey$offset();
    private static final long ATOMIC_ADDR = WR + ibv_send_wr.wr.atomic$offset() + ibv_send_wr.wr.atomic.remote_addr$offset();
    private static final long ATOMIC_COMPARE_ADD = WR + ibv_send_wr.wr.atomic$offset() + ibv_send_wr.wr.atomic.compare_add$offset();
    private static final long ATOMIC_SWAP = WR + ibv_send_wr.wr.atomic$offset() + ibv_send_wr.wr.atomic.swap$offset();
    private static final long ATOMIC_RKEY = WR + ibv_send_wr.wr.atomic$offset() + ibv_send_wr.wr.atomic.rkey$offset();
    private static final long UD_AH = WR + ibv_send_wr.wr.ud$offset() + ibv_send_wr.wr.ud.ah$offset();
    private static final long UD_QPN = WR + ibv_send_wr.wr.ud$offset() + ibv_send_wr.wr.ud.remote_qpn$offset();
    private static final long UD_QKEY = WR + ibv_send_wr.wr.ud$offset() + ibv_send_wr.wr.ud.remote_qkey$offset();
    /** Longest chain accepted: a guard against cycles. */
    static final int MAX_CHAIN = 1 << 16;

    /** The work request; the bad_wr slot and the SGE array follow it in the same allocation. */
    final MemorySegment segment;
    final MemorySegment badWr;
    private final ScatterGather sgl;
    private AddressHandle ah;
    SendRequest next;

    /** A request with room for {@code maxSge} scatter/gather entries, in memory the GC frees. */
    public SendRequest(int maxSge) {
        this(maxSge, Arena.ofAuto());
    }

    /** A request with room for {@code maxSge} scatter/gather entries, allocated in {@code arena}. */
    public SendRequest(int maxSge, Arena arena) {
        if (maxSge < 1) {
            throw new IllegalArgumentException("maxSge must be at least 1, not " + maxSge);
        }
        this.segment = arena.allocate(WR_SIZE + 8 + ScatterGather.SGE_SIZE * maxSge, 8);
        this.badWr = segment.asSlice(WR_SIZE, 8);
        this.sgl = new ScatterGather(segment, SG_LIST, NUM_SGE, segment.asSlice(WR_SIZE + 8, ScatterGather.SGE_SIZE * maxSge));
    }

    /** {@code wr_id}: returned in the completion. */
    public SendRequest id(long wrId) {
        segment.set(JAVA_LONG, WR_ID, wrId);
        return this;
    }

    /** {@code wr_id}. */
    public long id() {
        return segment.get(JAVA_LONG, WR_ID);
    }

    /** {@code opcode}. */
    public SendRequest opcode(SendOpcode opcode) {
        segment.set(JAVA_INT, OPCODE, opcode.value);
        return this;
    }

    /** {@code opcode}. */
    public SendOpcode opcode() {
        return SendOpcode.of(segment.get(JAVA_INT, OPCODE));
    }

    /** {@code send_flags}, all at once. */
    public SendRequest flags(Set<SendFlag> flags) {
        segment.set(JAVA_INT, SEND_FLAGS, SendFlag.mask(flags));
        return this;
    }

    /** {@code send_flags}. */
    public Set<SendFlag> flags() {
        return SendFlag.of(segment.get(JAVA_INT, SEND_FLAGS));
    }

    private SendRequest flag(SendFlag flag, boolean on) {
        int f = segment.get(JAVA_INT, SEND_FLAGS);
        segment.set(JAVA_INT, SEND_FLAGS, on ? f | flag.value : f & ~flag.value);
        return this;
    }

    /** {@code IBV_SEND_SIGNALED}: produce a completion. */
    public SendRequest signaled(boolean on) {
        return flag(SendFlag.SIGNALED, on);
    }

    /** {@code IBV_SEND_SOLICITED}: wake a receiver waiting for solicited events. */
    public SendRequest solicited(boolean on) {
        return flag(SendFlag.SOLICITED, on);
    }

    /** {@code IBV_SEND_FENCE}: wait for earlier reads and atomics first. */
    public SendRequest fence(boolean on) {
        return flag(SendFlag.FENCE, on);
    }

    /** {@code IBV_SEND_INLINE}: copy the data into the request at post time (up to the QP's max_inline_data). */
    public SendRequest inline(boolean on) {
        return flag(SendFlag.INLINE, on);
    }

    /** Sets a single scatter/gather entry: {@code length} bytes at {@code offset} in {@code region}. */
    public SendRequest sge(MemoryRegion region, long offset, int length) {
        sgl.clear();
        sgl.add(region, offset, length);
        return this;
    }

    /** Appends a scatter/gather entry. */
    public SendRequest addSge(MemoryRegion region, long offset, int length) {
        sgl.add(region, offset, length);
        return this;
    }

    /** Replaces scatter/gather entry {@code index} (which must exist or be the next one). */
    public SendRequest setSge(int index, MemoryRegion region, long offset, int length) {
        sgl.set(index, region, offset, length);
        return this;
    }

    /**
     * Sends {@code data} inline: it is copied into the work request when posted, needs no memory
     * region, and may be reused as soon as {@code postSend} returns. Sets {@code IBV_SEND_INLINE}.
     */
    public SendRequest inlineData(MemorySegment data) {
        sgl.inline(data);
        return inline(true);
    }

    /** Removes all scatter/gather entries (a zero-length message). */
    public SendRequest clearSges() {
        sgl.clear();
        return this;
    }

    /** The number of scatter/gather entries set. */
    public int sgeCount() {
        return sgl.count();
    }

    /** {@code wr.rdma}: the remote address and key of an RDMA write or read. */
    public SendRequest rdma(long remoteAddress, int rkey) {
        segment.set(JAVA_LONG, RDMA_ADDR, remoteAddress);
        segment.set(JAVA_INT, RDMA_RKEY, rkey);
        return this;
    }

    /**
     * {@code wr.atomic}: the remote 8-byte word and operands of an atomic. For fetch-and-add,
     * {@code compareAdd} is the value added and {@code swap} is ignored; for compare-and-swap,
     * {@code swap} is stored if the word equals {@code compareAdd}. The old value lands in the SGE.
     */
    public SendRequest atomic(long remoteAddress, int rkey, long compareAdd, long swap) {
        if ((remoteAddress & 7) != 0) {
            throw new IllegalArgumentException("atomics need an 8-byte aligned remote address, not 0x"
                    + Long.toHexString(remoteAddress));
        }
        segment.set(JAVA_LONG, ATOMIC_ADDR, remoteAddress);
        segment.set(JAVA_LONG, ATOMIC_COMPARE_ADD, compareAdd);
        segment.set(JAVA_LONG, ATOMIC_SWAP, swap);
        segment.set(JAVA_INT, ATOMIC_RKEY, rkey);
        return this;
    }

    /** {@code imm_data}, given in host order ({@code htonl} is done here). */
    public SendRequest immediate(int value) {
        segment.set(JAVA_INT, IMM_DATA, Integer.reverseBytes(value));
        return this;
    }

    /** {@code wr.ud}: the destination of a UD send. */
    public SendRequest datagram(AddressHandle destination, int remoteQpn, int remoteQkey) {
        segment.set(ADDRESS, UD_AH, destination.ah);
        segment.set(JAVA_INT, UD_QPN, remoteQpn);
        segment.set(JAVA_INT, UD_QKEY, remoteQkey);
        this.ah = destination;
        return this;
    }

    /** {@code next}: posts {@code request} right after this one, in the same call; null ends the chain. */
    public SendRequest next(SendRequest request) {
        for (SendRequest r = request; r != null; r = r.next) {
            if (r == this) {
                throw new IllegalArgumentException("chaining " + request + " would make a cycle");
            }
        }
        this.next = request;
        segment.set(ADDRESS, NEXT, request == null ? MemorySegment.NULL : request.segment);
        return this;
    }

    /** The next request in the chain, or null. */
    public SendRequest next() {
        return next;
    }

    /**
     * Checks every request of the chain right before it is posted: each SGE's region is open and
     * its memory alive, each UD address handle open. Allocation-free.
     */
    void checkChain() {
        int n = 0;
        for (SendRequest r = this; r != null; r = r.next) {
            r.sgl.check(n);
            if (r.ah != null && !r.ah.isOpen()) {
                throw new IllegalStateException("work request " + n + " names " + r.ah + ", which is closed");
            }
            n++;
        }
    }

    /** The index in this chain of the request at {@code address}, or -1. */
    int indexOf(long address) {
        int i = 0;
        for (SendRequest r = this; r != null && i < MAX_CHAIN; r = r.next, i++) {
            if (r.segment.address() == address) {
                return i;
            }
        }
        return -1;
    }

    /** The request at {@code index} in this chain. */
    SendRequest at(int index) {
        SendRequest r = this;
        for (int i = 0; i < index && r != null; i++) {
            r = r.next;
        }
        return r;
    }

    @Override
    public String toString() {
        return "SendRequest[wr_id=" + id() + ", " + opcode() + ", sges=" + sgl.count() + "]";
    }
}
