package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_srq;
import io.github.panamaverbs.bindings.ibv_srq_attr;
import io.github.panamaverbs.bindings.ibv_srq_init_attr;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * A shared receive queue ({@code struct ibv_srq}): one pool of receive buffers for many queue pairs
 * (named in {@link QueuePair.Config#sharedReceiveQueue(SharedReceiveQueue)}). {@link #arm(int)} asks
 * for an {@link AsyncEventType#SRQ_LIMIT_REACHED} event when it runs low.
 */
public final class SharedReceiveQueue extends Resource {
    private static final MethodHandle CREATE = Native.withErrno(
            Verbs.ibv_create_srq$address(), Verbs.ibv_create_srq$descriptor());
    private static final MethodHandle DESTROY = Native.withErrno(
            Verbs.ibv_destroy_srq$address(), Verbs.ibv_destroy_srq$descriptor());
    private static final MethodHandle MODIFY = Native.withErrno(
            Verbs.ibv_modify_srq$address(), Verbs.ibv_modify_srq$descriptor());
    private static final MethodHandle QUERY = Native.withErrno(
            Verbs.ibv_query_srq$address(), Verbs.ibv_query_srq$descriptor());

    /**
     * {@code struct ibv_srq_attr}.
     *
     * @param maxWr  receives it holds
     * @param maxSge SGEs per receive
     * @param limit  the armed limit (0: not armed)
     */
    public record Attributes(int maxWr, int maxSge, int limit) {
    }

    private final Context context;
    private final MemorySegment srq;
    private final MemorySegment postFn;

    SharedReceiveQueue(ProtectionDomain pd, int maxWr, int maxSge) {
        super(create(pd, maxWr, maxSge), ibv_srq.sizeof(), pd);
        this.context = pd.context();
        this.srq = handle();
        this.postFn = DataPath.op(context, DataPath.POST_SRQ_RECV);
        context.register(this, srq.address());
    }

    private static MemorySegment create(ProtectionDomain pd, int maxWr, int maxSge) {
        if (maxWr < 1 || maxSge < 1) {
            throw new IllegalArgumentException("maxWr and maxSge must be positive");
        }
        MemorySegment pdHandle = checkOpen(pd);
        try (Arena call = Arena.ofConfined()) {
            MemorySegment init = call.allocate(ibv_srq_init_attr.layout());
            MemorySegment attr = ibv_srq_init_attr.attr(init);
            ibv_srq_attr.max_wr(attr, maxWr);
            ibv_srq_attr.max_sge(attr, maxSge);
            MemorySegment errno = Native.errnoSegment(call);
            MemorySegment srq = (MemorySegment) CREATE.invokeExact(errno, pdHandle, init);
            if (srq.address() == 0) {
                throw Native.fail("ibv_create_srq", Native.errno(errno));
            }
            return srq;
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    /** {@code ibv_post_srq_recv}: posts {@code request} and those chained after it. Allocates nothing. */
    public void postReceive(ReceiveRequest request) {
        request.checkChain();
        int rc;
        try {
            rc = (int) DataPath.POST.invokeExact(postFn, srq, request.segment, request.badWr);
        } catch (IllegalStateException e) {
            throw isOpen() ? e : new IllegalStateException(this + " is closed", e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
        if (rc != 0) {
            int index = QueuePair.badIndex(request.badWr, request.indexOf(request.badWr.get(ADDRESS, 0).address()));
            throw QueuePair.postFailed("ibv_post_srq_recv", Math.abs(rc), index, this,
                    Math.abs(rc) == Errno.ENOMEM ? "; the queue is full" : "");
        }
    }

    /**
     * {@code ibv_modify_srq(IBV_SRQ_LIMIT)}: arms the queue: when fewer than {@code limit} receives
     * remain, the context reports {@link AsyncEventType#SRQ_LIMIT_REACHED} once (then arm again).
     */
    public void arm(int limit) {
        MemorySegment s = handle();
        try (Arena call = Arena.ofConfined()) {
            MemorySegment attr = call.allocate(ibv_srq_attr.layout());
            ibv_srq_attr.srq_limit(attr, limit);
            MemorySegment errno = Native.errnoSegment(call);
            int rc = (int) MODIFY.invokeExact(errno, s, attr, Verbs.IBV_SRQ_LIMIT());
            Native.check("ibv_modify_srq", rc, errno);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    /** {@code ibv_query_srq}. */
    public Attributes query() {
        MemorySegment s = handle();
        try (Arena call = Arena.ofConfined()) {
            MemorySegment attr = call.allocate(ibv_srq_attr.layout());
            MemorySegment errno = Native.errnoSegment(call);
            int rc = (int) QUERY.invokeExact(errno, s, attr);
            Native.check("ibv_query_srq", rc, errno);
            return new Attributes(ibv_srq_attr.max_wr(attr), ibv_srq_attr.max_sge(attr), ibv_srq_attr.srq_limit(attr));
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    @Override
    void destroy(MemorySegment address) {
        context.unregister(address.address());
        Native.destroy("ibv_destroy_srq", DESTROY, address);
    }

    @Override
    public String toString() {
        return "SharedReceiveQueue[" + context.device().name() + "]";
    }
}
