package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_cq;
import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Native;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Objects;
import java.lang.ref.Reference;

/**
 * A completion queue ({@code struct ibv_cq}): where the device reports finished work requests.
 * {@link #poll(WorkCompletions)} reads them without allocating; with a {@link CompletionChannel}, a
 * thread may instead sleep until {@link #requestNotification(boolean) notified}.
 *
 * <p>Several threads may poll one queue (each completion goes to one of them), each with its own
 * {@link WorkCompletions}. Closing it is refused while a queue pair still reports to it.
 */
public final class CompletionQueue extends Resource {
    private static final MethodHandle CREATE = Native.withErrno(
            Verbs.ibv_create_cq$address(), Verbs.ibv_create_cq$descriptor());
    private static final MethodHandle DESTROY = Native.withErrno(
            Verbs.ibv_destroy_cq$address(), Verbs.ibv_destroy_cq$descriptor());
    private static final MethodHandle RESIZE = Native.withErrno(
            Verbs.ibv_resize_cq$address(), Verbs.ibv_resize_cq$descriptor());
    private static final MethodHandle ACK = Native.plain(
            Verbs.ibv_ack_cq_events$address(), Verbs.ibv_ack_cq_events$descriptor());

    private final Context context;
    private final CompletionChannel channel;
    private final MemorySegment pollFn;
    private final MemorySegment notifyFn;

    CompletionQueue(Context context, int entries, CompletionChannel channel, int compVector) {
        super(create(context, entries, channel, compVector), ibv_cq.sizeof(), context, channel);
        this.context = context;
        this.channel = channel;
        try {
            this.pollFn = DataPath.op(context, DataPath.POLL);
            this.notifyFn = DataPath.op(context, DataPath.REQ_NOTIFY);
            context.register(this, ptr().address());
            afterCreate();
        } catch (RuntimeException | Error e) {
            abandon(e); // destroys the completion queue: its context and channel stay closable
            throw e;
        }
    }

    private static MemorySegment create(Context context, int entries, CompletionChannel channel, int compVector) {
        if (entries <= 0) {
            throw new IllegalArgumentException("a completion queue needs at least one entry, not " + entries);
        }
        MemorySegment ctx = checkOpen(context);
        MemorySegment ch = channel == null ? MemorySegment.NULL : checkOpen(channel);
        if (channel != null && channel.context() != context) {
            throw new IllegalArgumentException(channel + " belongs to another context than " + context);
        }
        if (compVector < 0 || compVector >= Math.max(1, context.numCompVectors())) {
            throw new IllegalArgumentException("completion vector " + compVector + " is not in [0, "
                    + context.numCompVectors() + ")");
        }
        try {
            return Native.create("ibv_create_cq", e -> e == Errno.EINVAL
                            ? entries + " entries is more than the device's max_cqe" : Native.MEMLOCK.explain(e),
                    c -> (MemorySegment) CREATE.invokeExact(c.errno(), ctx, entries, MemorySegment.NULL, ch, compVector));
        } catch (IllegalStateException e) {
            throw closed(e, context, channel);
        }
    }

    /** {@return the context it was created in} */
    public Context context() {
        return context;
    }

    /** {@return the channel its events go to, or null} */
    public CompletionChannel channel() {
        return channel;
    }

    /**
     * {@code cqe}: how many completions it holds (at least what was asked).
     *
     * @return the capacity
     * @throws IllegalStateException if the queue is closed
     */
    public int capacity() {
        return read(ibv_cq::cqe);
    }

    /**
     * {@code ibv_poll_cq}: moves up to {@code batch.capacity()} completions into {@code batch}.
     * Allocates nothing. A completion polled gives the memory of its work request back to the caller
     * (see <a href="package-summary.html#buffers">when a posted buffer may be reused</a>).
     *
     * @param batch where the completions go; its {@link WorkCompletions#count()} becomes the result
     * @return how many completions were read; 0 when the queue is empty
     * @throws NullPointerException  if {@code batch} is null
     * @throws IllegalStateException if this queue is closed, or the batch's memory was freed
     * @throws VerbsException        if the provider reports an error (not a failed completion: those are data)
     */
    public int poll(WorkCompletions batch) {
        Objects.requireNonNull(batch, "batch");
        int n;
        try {
            n = (int) DataPath.POLL_CQ.invokeExact(pollFn, ptr(), batch.capacity, batch.callSegment);
        } catch (IllegalStateException e) {
            throw isOpen() && !batch.segment.scope().isAlive()
                    ? new IllegalStateException("the memory of the WorkCompletions batch has been freed (its arena is closed)", e)
                    : closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        } finally {
            Reference.reachabilityFence(batch);
        }
        if (n < 0) {
            batch.count = 0;
            throw Native.fail("ibv_poll_cq", -n, Native.NO_HINT);
        }
        batch.count = n;
        return n;
    }

    /**
     * {@code ibv_req_notify_cq}: asks for one event on the channel when the next completion arrives
     * (any, or only solicited ones).
     *
     * @param solicitedOnly true to be notified only of solicited completions (and errors), false for any
     * @throws IllegalStateException if the queue has no completion channel, or is closed
     * @throws VerbsException        if {@code ibv_req_notify_cq} fails
     */
    public void requestNotification(boolean solicitedOnly) {
        if (channel == null) {
            throw new IllegalStateException(this + " has no completion channel to notify");
        }
        int rc;
        try {
            rc = (int) DataPath.REQ_NOTIFY_CQ.invokeExact(notifyFn, ptr(), solicitedOnly ? 1 : 0);
        } catch (IllegalStateException e) {
            throw closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
        if (rc != 0) {
            throw Native.fail("ibv_req_notify_cq", rc, Native.NO_HINT);
        }
    }

    /**
     * {@code ibv_resize_cq}: changes the capacity to at least {@code entries}.
     *
     * @param entries the minimum number of completions it holds
     * @throws IllegalArgumentException if {@code entries} is not positive
     * @throws IllegalStateException    if the queue is closed
     * @throws VerbsException           if the provider cannot resize it: more than the device's
     *                                  {@code max_cqe}, fewer than it holds now, or not supported
     */
    public void resize(int entries) {
        if (entries <= 0) {
            throw new IllegalArgumentException("a completion queue needs at least one entry, not " + entries);
        }
        MemorySegment cq = handle();
        check("ibv_resize_cq", e -> e == Errno.EINVAL ? entries + " entries is more than the device's max_cqe, "
                + "or fewer than the completions it holds now" : null,
                c -> (int) RESIZE.invokeExact(c.errno(), cq, entries));
    }

    /** {@code ibv_ack_cq_events}. */
    static void ackEvents(MemorySegment cq, int n) {
        try {
            ACK.invokeExact(cq, n);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    @Override
    void destroy(MemorySegment address) {
        Native.check("ibv_destroy_cq", e -> e == Errno.EBUSY ? "a queue pair still reports to it" : null,
                c -> (int) DESTROY.invokeExact(c.errno(), address));
        context.unregister(address.address());
    }

    @Override
    public String toString() {
        return "CompletionQueue[" + context.device().name() + "]";
    }
}
