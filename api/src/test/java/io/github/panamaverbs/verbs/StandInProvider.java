package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.github.panamaverbs.bindings.ibv_context;
import io.github.panamaverbs.bindings.ibv_context_ops;
import io.github.panamaverbs.bindings.ibv_cq;
import io.github.panamaverbs.bindings.ibv_qp;
import io.github.panamaverbs.internal.Native;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * A provider that is not there, for measuring the typed API's own data path at the host CPU's speed
 * (JMH's {@code CallShapes}): a {@link Context}, {@link ProtectionDomain}, {@link CompletionQueue}
 * and {@link QueuePair} over structs in native memory, whose {@code context->ops} point at the
 * {@code poll_cq} and {@code post_send} the caller gives (JMH's stand-ins in {@code pvbench.c}). No
 * libibverbs verb runs: the objects are made and freed here, and only the data path
 * ({@link CompletionQueue#poll}, {@link QueuePair#postSend}, {@link QueuePair#postReceive}) is meant
 * to be called; {@code req_notify_cq} fails with EOPNOTSUPP, and the control-path verbs (queries,
 * registration, state changes) must not be called on them. Test-only: in the api's test jar.
 */
public final class StandInProvider implements AutoCloseable {
    private static final int EOPNOTSUPP = 95;
    private static final MethodHandle EVENTFD = Native.LINKER.downcallHandle(
            Native.LINKER.defaultLookup().find("eventfd").orElseThrow(), FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle CLOSE = Native.LINKER.downcallHandle(
            Native.LINKER.defaultLookup().find("close").orElseThrow(), FunctionDescriptor.of(JAVA_INT, JAVA_INT));

    private final Arena memory = Arena.ofShared();
    private final int asyncFd;
    private final Context context;
    private final ProtectionDomain pd;
    private final CompletionQueue cq;
    private final QueuePair qp;
    private final MemorySegment cqStruct;
    private final MemorySegment qpStruct;

    /**
     * @param pollCq   {@code int poll_cq(struct ibv_cq *, int, struct ibv_wc *)}
     * @param postSend {@code int post_send(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **)},
     *                 also the receive queues' post
     * @param cqSize   the bytes of the stand-in's completion queue (at least {@code sizeof(struct ibv_cq)}),
     *                 zeroed: what {@code pollCq} reads beyond the {@code ibv_cq}
     * @param qpSize   the same for the queue pair ({@code sizeof(struct ibv_qp)} at least)
     */
    public StandInProvider(MemorySegment pollCq, MemorySegment postSend, long cqSize, long qpSize) {
        if (cqSize < ibv_cq.sizeof() || qpSize < ibv_qp.sizeof()) {
            throw new IllegalArgumentException("the stand-in's structs must hold an ibv_cq and an ibv_qp");
        }
        try {
            asyncFd = (int) EVENTFD.invokeExact(0, 0);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        MemorySegment ctx = memory.allocate(ibv_context.layout());
        MemorySegment ops = ibv_context.ops(ctx);
        ibv_context_ops.poll_cq(ops, pollCq);
        ibv_context_ops.post_send(ops, postSend);
        ibv_context_ops.post_recv(ops, postSend);
        ibv_context_ops.post_srq_recv(ops, postSend);
        ibv_context_ops.req_notify_cq(ops, notSupported());
        ibv_context.async_fd(ctx, asyncFd);
        ibv_context.abi_compat(ctx, MemorySegment.NULL); // a compat context: no verbs_context behind it
        context = Context.borrowed(MemorySegment.ofAddress(ctx.address()), new Device("standin0", 0x0123456789abcdefL,
                NodeType.CA, TransportType.IB, "uverbs-standin", "/dev/null", "/dev/null"));
        pd = new ProtectionDomain(context, memory.allocate(io.github.panamaverbs.bindings.ibv_pd.layout()), freed -> { });
        cqStruct = memory.allocate(cqSize, 8);
        ibv_cq.context(cqStruct, ctx);
        ibv_cq.cqe(cqStruct, 1024);
        cq = new CompletionQueue(context, MemorySegment.ofAddress(cqStruct.address()), null, freed -> { });
        qpStruct = memory.allocate(qpSize, 8);
        ibv_qp.context(qpStruct, ctx);
        ibv_qp.qp_num(qpStruct, 0x11);
        ibv_qp.qp_type(qpStruct, QpType.RC.value);
        qp = new QueuePair(pd, new QpInitAttributes(QpType.RC, cq, cq).maxSendWr(64).maxRecvWr(64),
                init -> MemorySegment.ofAddress(qpStruct.address()), freed -> { }, null, QpState.RTS);
    }

    /** An upcall that answers {@code req_notify_cq} with EOPNOTSUPP. */
    private MemorySegment notSupported() {
        try {
            MethodHandle target = MethodHandles.lookup().findStatic(StandInProvider.class, "notify",
                    MethodType.methodType(int.class, MemorySegment.class, int.class));
            return Native.LINKER.upcallStub(target, FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), memory);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    private static int notify(MemorySegment cq, int solicitedOnly) {
        return EOPNOTSUPP;
    }

    /** {@return the context, over the stand-in's {@code ibv_context}} */
    public Context context() {
        return context;
    }

    /** {@return the protection domain} */
    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /** {@return the completion queue (both queues of {@link #queuePair()})} */
    public CompletionQueue completionQueue() {
        return cq;
    }

    /** {@return an RC queue pair in RTS} */
    public QueuePair queuePair() {
        return qp;
    }

    /** {@return the completion queue's struct, for reading what the stand-in wrote} */
    public MemorySegment completionQueueStruct() {
        return cqStruct;
    }

    /** {@return the queue pair's struct, for reading what the stand-in wrote} */
    public MemorySegment queuePairStruct() {
        return qpStruct;
    }

    /** Closes the objects (in the closing rule's order) and frees their memory. */
    @Override
    public void close() {
        if (!qp.isClosed()) {
            qp.close();
        }
        if (!cq.isClosed()) {
            cq.close();
        }
        if (!pd.isClosed()) {
            pd.close();
        }
        if (!context.isClosed()) {
            context.close();
        }
        try {
            int rc = (int) CLOSE.invokeExact(asyncFd);
            assert rc == 0;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        memory.close();
    }
}
