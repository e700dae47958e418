package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_srq;
import io.github.panamaverbs.bindings.ibv_srq_attr;
import io.github.panamaverbs.bindings.ibv_srq_init_attr;
import io.github.panamaverbs.internal.DataPath;
import io.github.panamaverbs.internal.Native;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Objects;
import java.lang.ref.Reference;

/**
 * A shared receive queue ({@code struct ibv_srq}): one pool of receive buffers for many queue pairs
 * (named in {@link QpInitAttributes#sharedReceiveQueue(SharedReceiveQueue)}). {@link #arm(int)} asks
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

    private final ProtectionDomain pd;
    private final Context context;
    private final MemorySegment postFn;

    SharedReceiveQueue(ProtectionDomain pd, int maxWr, int maxSge) {
        super(create(pd, maxWr, maxSge), ibv_srq.sizeof(), pd);
        this.pd = pd;
        this.context = pd.context();
        try {
            this.postFn = context.op(DataPath.POST_SRQ_RECV);
            context.register(this, ptr().address());
            afterCreate();
        } catch (RuntimeException | Error e) {
            abandon(e); // destroys the shared receive queue: its protection domain stays closable
            throw e;
        }
    }

    private static MemorySegment create(ProtectionDomain pd, int maxWr, int maxSge) {
        if (maxWr < 1 || maxSge < 1) {
            throw new IllegalArgumentException("maxWr and maxSge must be positive, not " + maxWr + " and " + maxSge);
        }
        MemorySegment pdHandle = checkOpen(pd);
        try {
            return Native.call(c -> {
                MemorySegment init = c.allocate(ibv_srq_init_attr.layout());
                MemorySegment attr = ibv_srq_init_attr.attr(init);
                ibv_srq_attr.max_wr(attr, maxWr);
                ibv_srq_attr.max_sge(attr, maxSge);
                return Native.create("ibv_create_srq", Native.MEMLOCK,
                        x -> (MemorySegment) CREATE.invokeExact(x.errno(), pdHandle, init));
            });
        } catch (IllegalStateException e) {
            throw closed(e, pd);
        }
    }

    /** {@return the protection domain it was created in} */
    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /**
     * {@code ibv_post_srq_recv}: posts {@code request} and those chained after it. Allocates nothing.
     * The buffers belong to the device until the receive's completion is polled; the request object
     * may be changed and posted again as soon as this returns.
     *
     * @param request the first request of the chain
     * @throws IllegalStateException if this queue, or a memory region of the chain, is closed, or the
     *                               memory of a request or of a region was freed
     * @throws VerbsException        naming the first request that was not posted and why
     */
    public void postReceive(ReceiveRequest request) {
        Objects.requireNonNull(request, "request").checkChain(null);
        int rc;
        try {
            rc = (int) DataPath.POST.invokeExact(postFn, ptr(), request.callWr, request.callBadWr);
        } catch (IllegalStateException e) {
            throw closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        } finally {
            Reference.reachabilityFence(request);
        }
        if (rc != 0) {
            throw request.postFailed("ibv_post_srq_recv", rc, this, null);
        }
    }

    /**
     * {@code ibv_modify_srq(IBV_SRQ_LIMIT)}: arms the queue: when fewer than {@code limit} receives
     * remain, the context reports {@link AsyncEventType#SRQ_LIMIT_REACHED} once (then arm again).
     *
     * @param limit the number of receives below which the event is reported
     * @throws IllegalStateException if the queue is closed
     * @throws VerbsException        if {@code ibv_modify_srq} fails, e.g. for a limit above the queue's size
     */
    public void arm(int limit) {
        MemorySegment s = handle();
        check("ibv_modify_srq", Native.NO_HINT, c -> {
            MemorySegment attr = c.allocate(ibv_srq_attr.layout());
            ibv_srq_attr.srq_limit(attr, limit);
            return (int) MODIFY.invokeExact(c.errno(), s, attr, Verbs.IBV_SRQ_LIMIT());
        });
    }

    /**
     * {@code ibv_query_srq}: its size and armed limit.
     *
     * @return the attributes
     * @throws IllegalStateException if the queue is closed
     * @throws VerbsException        if {@code ibv_query_srq} fails
     */
    public SrqAttributes query() {
        MemorySegment s = handle();
        return call(c -> {
            MemorySegment attr = c.allocate(ibv_srq_attr.layout());
            Native.checkStatus("ibv_query_srq", Native.NO_HINT, (int) QUERY.invokeExact(c.errno(), s, attr), c);
            return new SrqAttributes(ibv_srq_attr.max_wr(attr), ibv_srq_attr.max_sge(attr), ibv_srq_attr.srq_limit(attr));
        });
    }

    @Override
    void destroy(MemorySegment address) {
        Native.check("ibv_destroy_srq", Native.NO_HINT, c -> (int) DESTROY.invokeExact(c.errno(), address));
        context.unregister(address.address());
    }

    @Override
    public String toString() {
        return "SharedReceiveQueue[" + context.device().name() + "]";
    }
}
