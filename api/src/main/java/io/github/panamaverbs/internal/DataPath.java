package io.github.panamaverbs.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.github.panamaverbs.bindings.ibv_context;
import io.github.panamaverbs.bindings.ibv_context_ops;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.regex.Pattern;

/**
 * The hot-path downcalls, in one place.
 *
 * <p>{@code ibv_post_send}, {@code ibv_post_recv}, {@code ibv_post_srq_recv}, {@code ibv_poll_cq}
 * and {@code ibv_req_notify_cq} are {@code static inline} in verbs.h: each calls a function pointer
 * of the provider found in {@code context->ops}. These handles take that pointer as their first
 * argument; each queue pair and completion queue resolves its pointers once, when it is created
 * ({@link #op(MemorySegment, long)}), never per call.
 *
 * <p>A classic completion queue's {@code poll_cq}, and an extended queue's {@code next_poll},
 * {@code end_poll} and read accessors, are {@link Linker.Option#critical(boolean) critical}
 * downcalls: no thread-state transition, which on the host CPU took a poll from 22.6 to 15.0 ns
 * (JMH {@code CallShapes}, the typed API's argument shapes). Providers poll in user space (a ring
 * in memory shared with the device or the kernel) with no system call or callback, which a critical
 * call requires, and none of these calls waits for a lock that a thread can hold while it runs
 * Java code (see {@link #POLL_CQ_EX}). Posts, {@code ibv_start_poll} and {@code req_notify_cq}
 * stay plain downcalls: rxe's post rings its doorbell and its notify arms the queue with a system
 * call, and a 64-byte RDMA write posted and polled to completion took 370 µs with every data-path
 * call critical against 61 µs with none (JMH on rxe; C: 68 µs). {@code -Dpanamaverbs.critical=none}
 * makes every call plain, {@code all} (or {@code true}) every one critical; {@code poll} is the
 * default; {@code all} is for measuring only, as it makes {@code ibv_start_poll} critical too.
 */
public final class DataPath {
    /** -Dpanamaverbs.critical: {@code poll} (the default), {@code all} (or {@code true}), {@code none} (or {@code false}). */
    private static final String MODE = mode(System.getProperty("panamaverbs.critical", "poll"));
    /** Whether the posts and req_notify_cq are critical downcalls. */
    public static final boolean CRITICAL = MODE.equals("all");
    /** Whether the completion queue's polls and reads are critical downcalls. */
    public static final boolean CRITICAL_POLL = !MODE.equals("none");

    /** int (*post_send / post_recv / post_srq_recv)(qp_or_srq, wr, bad_wr) */
    public static final MethodHandle POST = handle(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    /** int (*poll_cq)(struct ibv_cq *, int num_entries, struct ibv_wc *) */
    public static final MethodHandle POLL_CQ = pollHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
    /**
     * The same for an extended queue: a plain downcall, as its {@code ibv_start_poll}, which returns
     * holding the queue's lock until {@code ibv_end_poll} (rxe, mlx5). A critical call spinning on
     * that lock would keep its thread from a safepoint while the holder, running Java code between
     * the two, waits at it: the JVM would hang. A plain call spins as native code, which a safepoint
     * does not wait for.
     */
    public static final MethodHandle POLL_CQ_EX = handle(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
    /**
     * The raw forms, for the confined views ({@code CompletionQueue.Confined}, {@code QueuePair.Confined}):
     * the queue and the request or batch as plain addresses, no arena acquired. The view keeps the
     * queue alive (it cannot close while the view is open) and is used by its owner thread only; it
     * passes a caller's arena's memory through the segment forms above, so that FFM still refuses a
     * closed arena.
     */
    public static final MethodHandle POST_RAW = handle(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    /**
     * {@link #POST_RAW} as a critical downcall (unless {@code none}): for the providers whose post writes
     * the request into memory the device reads and rings its doorbell with a store, entering no kernel
     * ({@link #postsInUserSpace}), on queue pairs without {@code ibv_wr_*} send operations (a
     * {@code SendBatch} of another thread holds the send queue's lock while it runs Java code; a
     * critical call waiting for that lock would keep the JVM from its safepoint).
     */
    public static final MethodHandle POST_RAW_CRITICAL = make(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG),
            !MODE.equals("none"));
    /** The providers whose posts stay in user space: a store to a mapped doorbell (mlx5, mlx4, bnxt_re, hns, efa, irdma, qedr, erdma, mana). */
    private static final Pattern USER_SPACE_POSTS = Pattern.compile("/lib(mlx5|mlx4|bnxt_re|hns|efa|irdma|qedr|erdma|mana)[-.]");
    /** {@link #POLL_CQ} with the queue and the completions as addresses. */
    public static final MethodHandle POLL_CQ_RAW = pollHandle(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_LONG));
    /** {@link #POLL_CQ_EX} with the queue and the completions as addresses. */
    public static final MethodHandle POLL_CQ_EX_RAW = handle(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_LONG));
    /** int (*req_notify_cq)(struct ibv_cq *, int solicited_only) */
    public static final MethodHandle REQ_NOTIFY_CQ = handle(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));

    public static final long POST_SEND = ibv_context_ops.post_send$offset();
    public static final long POST_RECV = ibv_context_ops.post_recv$offset();
    public static final long POST_SRQ_RECV = ibv_context_ops.post_srq_recv$offset();
    public static final long POLL = ibv_context_ops.poll_cq$offset();
    public static final long REQ_NOTIFY = ibv_context_ops.req_notify_cq$offset();

    private DataPath() {
    }

    private static String mode(String value) {
        return switch (value) {
            case "true", "all" -> "all";
            case "false", "none" -> "none";
            case "poll" -> "poll";
            default -> throw new IllegalArgumentException("-Dpanamaverbs.critical=" + value
                    + ": expected poll (the default), all or none");
        };
    }

    /** A downcall of a post (or another call that may enter the kernel): critical only with {@code all}. */
    public static MethodHandle handle(FunctionDescriptor descriptor) {
        return make(descriptor, CRITICAL);
    }

    /** A downcall of the completion queue's polls and reads: critical unless {@code none}. */
    public static MethodHandle pollHandle(FunctionDescriptor descriptor) {
        return make(descriptor, CRITICAL_POLL);
    }

    private static MethodHandle make(FunctionDescriptor descriptor, boolean critical) {
        return critical
                ? Native.LINKER.downcallHandle(descriptor, Linker.Option.critical(false))
                : Native.LINKER.downcallHandle(descriptor);
    }

    /**
     * Whether the provider function {@code postFn} belongs to a provider whose posts enter no kernel
     * (its library's file name, from {@code /proc/self/maps}: read it once per context). Soft-RoCE and
     * SoftiWARP post with a system call, and an unknown provider is taken to.
     */
    public static boolean postsInUserSpace(MemorySegment postFn) {
        return Quirks.mappedFile(postFn.address()).map(DataPath::isUserSpacePostLibrary).orElse(false);
    }

    /** Whether the library at {@code file} (a path) is one of the providers whose posts stay in user space. */
    static boolean isUserSpacePostLibrary(String file) {
        return USER_SPACE_POSTS.matcher(file).find();
    }

    /**
     * The provider's function at {@code offset} in {@code context->ops} of the {@code ibv_context}
     * {@code context}, or {@link MemorySegment#NULL} if it has none.
     */
    public static MemorySegment op(MemorySegment context, long offset) {
        return context.get(ADDRESS, ibv_context.ops$offset() + offset);
    }
}
