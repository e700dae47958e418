package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.ibv_recv_wr;
import java.lang.foreign.Arena;
import java.util.Objects;

/**
 * A receive work request ({@code struct ibv_recv_wr} with its {@code ibv_sge} list), built once
 * off-heap and reposted without allocation; see {@link SendRequest} for the pattern.
 *
 * <pre>{@code
 * ReceiveRequest recv = new ReceiveRequest(1).id(7).sge(mr, 0, 4096);
 * qp.postReceive(recv);
 * }</pre>
 * Not thread-safe: one thread at a time. Once posted, the request may be changed and posted again;
 * the memory its entries name belongs to the device until the receive's completion is polled.
 */
public final class ReceiveRequest extends WorkRequest<ReceiveRequest> {
    static final long WR_SIZE = ibv_recv_wr.sizeof();

    /**
     * A request with room for {@code maxSge} scatter/gather entries, in memory the GC frees.
     *
     * @param maxSge the room for scatter/gather entries, 1 to 65536
     * @throws IllegalArgumentException if {@code maxSge} is out of range
     */
    public ReceiveRequest(int maxSge) {
        super(maxSge, null, WR_SIZE, ibv_recv_wr.wr_id$offset(), ibv_recv_wr.next$offset(), ibv_recv_wr.sg_list$offset(),
                ibv_recv_wr.num_sge$offset());
    }

    /**
     * A request with room for {@code maxSge} scatter/gather entries, allocated in {@code arena}.
     * Once the arena is closed, posting the request throws {@link IllegalStateException}.
     *
     * @param maxSge the room for scatter/gather entries, 1 to 65536
     * @param arena  where the request's memory is allocated
     * @throws IllegalArgumentException if {@code maxSge} is out of range
     * @throws IllegalStateException    if {@code arena} is closed
     */
    public ReceiveRequest(int maxSge, Arena arena) {
        super(maxSge, Objects.requireNonNull(arena, "arena"), WR_SIZE, ibv_recv_wr.wr_id$offset(), ibv_recv_wr.next$offset(),
                ibv_recv_wr.sg_list$offset(), ibv_recv_wr.num_sge$offset());
    }

    @Override
    boolean checkOwn(int index, QpType type) {
        return false;
    }

    @Override
    public String toString() {
        return isAlive() ? "ReceiveRequest[wr_id=" + id() + ", sges=" + sgeCount() + "]" : "ReceiveRequest[freed]";
    }
}
