package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Native;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.github.panamaverbs.bindings.ibv_context;
import io.github.panamaverbs.bindings.ibv_context_ops;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The hot-path downcalls, in one place.
 *
 * <p>{@code ibv_post_send}, {@code ibv_post_recv}, {@code ibv_post_srq_recv}, {@code ibv_poll_cq}
 * and {@code ibv_req_notify_cq} are {@code static inline} in verbs.h: each calls a function pointer
 * of the provider found in {@code context->ops}. These handles take that pointer as their first
 * argument; each queue pair and completion queue resolves its pointers once, when it is created
 * ({@link #op(Context, long)}), never per call.
 *
 * <p>They are plain downcalls by default. {@link Linker.Option#critical(boolean) Critical} downcalls
 * (no thread-state transition; {@code -Dpanamaverbs.critical=true}) were measured with JMH on rxe
 * and kept off: an empty poll was within noise of the plain call, but a 64-byte RDMA write posted
 * and polled to completion took 370 µs with critical calls against 61 µs without (C: 68 µs). rxe's
 * post rings its doorbell with a system call; why that is slower from a critical call was not found.
 */
final class DataPath {
    static final boolean CRITICAL = Boolean.getBoolean("panamaverbs.critical");

    /** int (*post_send / post_recv / post_srq_recv)(qp_or_srq, wr, bad_wr) */
    static final MethodHandle POST = handle(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    /** int (*poll_cq)(struct ibv_cq *, int num_entries, struct ibv_wc *) */
    static final MethodHandle POLL_CQ = handle(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
    /** int (*req_notify_cq)(struct ibv_cq *, int solicited_only) */
    static final MethodHandle REQ_NOTIFY_CQ = handle(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));

    static final long POST_SEND = ibv_context_ops.post_send$offset();
    static final long POST_RECV = ibv_context_ops.post_recv$offset();
    static final long POST_SRQ_RECV = ibv_context_ops.post_srq_recv$offset();
    static final long POLL = ibv_context_ops.poll_cq$offset();
    static final long REQ_NOTIFY = ibv_context_ops.req_notify_cq$offset();

    private DataPath() {
    }

    static MethodHandle handle(FunctionDescriptor descriptor) {
        return CRITICAL
                ? Native.LINKER.downcallHandle(descriptor, Linker.Option.critical(false))
                : Native.LINKER.downcallHandle(descriptor);
    }

    /** The provider's function at {@code offset} in {@code context->ops}; throws if it has none. */
    static MemorySegment op(Context context, long offset) {
        MemorySegment ctx = context.handle();
        MemorySegment fn = ctx.get(ADDRESS, ibv_context.ops$offset() + offset);
        if (fn.address() == 0) {
            throw new VerbsException("ibv_context_ops", Errno.EOPNOTSUPP,
                    context.device().name() + " does not implement this operation");
        }
        return fn;
    }
}
