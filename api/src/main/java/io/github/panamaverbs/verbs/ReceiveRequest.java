package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.github.panamaverbs.bindings.ibv_recv_wr;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A receive work request ({@code struct ibv_recv_wr} with its {@code ibv_sge} list), built once
 * off-heap and reposted without allocation; see {@link SendRequest} for the pattern.
 *
 * <pre>{@code
 * ReceiveRequest recv = new ReceiveRequest(1).id(7).sge(mr, 0, 4096);
 * qp.postReceive(recv);
 * }</pre>
 * Not thread-safe.
 */
public final class ReceiveRequest {
    static final long WR_SIZE = ibv_recv_wr.sizeof();
    private static final long WR_ID = ibv_recv_wr.wr_id$offset();
    private static final long NEXT = ibv_recv_wr.next$offset();
    private static final long SG_LIST = ibv_recv_wr.sg_list$offset();
    private static final long NUM_SGE = ibv_recv_wr.num_sge$offset();

    final MemorySegment segment;
    final MemorySegment badWr;
    private final ScatterGather sgl;
    ReceiveRequest next;

    /** A request with room for {@code maxSge} scatter/gather entries, in memory the GC frees. */
    public ReceiveRequest(int maxSge) {
        this(maxSge, Arena.ofAuto());
    }

    /** A request with room for {@code maxSge} scatter/gather entries, allocated in {@code arena}. */
    public ReceiveRequest(int maxSge, Arena arena) {
        if (maxSge < 1) {
            throw new IllegalArgumentException("maxSge must be at least 1, not " + maxSge);
        }
        this.segment = arena.allocate(WR_SIZE + 8 + ScatterGather.SGE_SIZE * maxSge, 8);
        this.badWr = segment.asSlice(WR_SIZE, 8);
        this.sgl = new ScatterGather(segment, SG_LIST, NUM_SGE, segment.asSlice(WR_SIZE + 8, ScatterGather.SGE_SIZE * maxSge));
    }

    /** {@code wr_id}: returned in the completion. */
    public ReceiveRequest id(long wrId) {
        segment.set(JAVA_LONG, WR_ID, wrId);
        return this;
    }

    /** {@code wr_id}. */
    public long id() {
        return segment.get(JAVA_LONG, WR_ID);
    }

    /** Sets a single scatter/gather entry: receive into {@code length} bytes at {@code offset} of {@code region}. */
    public ReceiveRequest sge(MemoryRegion region, long offset, int length) {
        sgl.clear();
        sgl.add(region, offset, length);
        return this;
    }

    /** Appends a scatter/gather entry. */
    public ReceiveRequest addSge(MemoryRegion region, long offset, int length) {
        sgl.add(region, offset, length);
        return this;
    }

    /** Replaces scatter/gather entry {@code index} (which must exist or be the next one). */
    public ReceiveRequest setSge(int index, MemoryRegion region, long offset, int length) {
        sgl.set(index, region, offset, length);
        return this;
    }

    /** The number of scatter/gather entries set. */
    public int sgeCount() {
        return sgl.count();
    }

    /** {@code next}: posts {@code request} right after this one; null ends the chain. */
    public ReceiveRequest next(ReceiveRequest request) {
        for (ReceiveRequest r = request; r != null; r = r.next) {
            if (r == this) {
                throw new IllegalArgumentException("chaining " + request + " would make a cycle");
            }
        }
        this.next = request;
        segment.set(ADDRESS, NEXT, request == null ? MemorySegment.NULL : request.segment);
        return this;
    }

    /** The next request in the chain, or null. */
    public ReceiveRequest next() {
        return next;
    }

    void checkChain() {
        int n = 0;
        for (ReceiveRequest r = this; r != null; r = r.next) {
            r.sgl.check(n++);
        }
    }

    int indexOf(long address) {
        int i = 0;
        for (ReceiveRequest r = this; r != null && i < SendRequest.MAX_CHAIN; r = r.next, i++) {
            if (r.segment.address() == address) {
                return i;
            }
        }
        return -1;
    }

    @Override
    public String toString() {
        return "ReceiveRequest[wr_id=" + id() + ", sges=" + sgl.count() + "]";
    }
}
