package io.github.panamaverbs.verbs;


import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_cq;
import io.github.panamaverbs.internal.DataPath;
import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Native;
import io.github.panamaverbs.internal.Quirks;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.ref.Reference;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * A completion queue ({@code struct ibv_cq}): where the device reports finished work requests.
 * {@link #poll(WorkCompletions)} reads them without allocating; with a {@link CompletionChannel}, a
 * thread may instead sleep until {@link #requestNotification(boolean) notified}.
 *
 * <p>Several threads may poll one queue (each completion goes to one of them), each with its own
 * {@link WorkCompletions}. Closing it is refused while a queue pair still reports to it.
 *
 * <p>An {@link ExtendedCompletionQueue} ({@code ibv_create_cq_ex}) is one too, and adds reading
 * completions in place, one at a time, with the provider's own accessors.
 */
public sealed class CompletionQueue extends Resource permits ExtendedCompletionQueue {
    private static final MethodHandle CREATE = Native.withErrno(
            Verbs.ibv_create_cq$address(), Verbs.ibv_create_cq$descriptor());
    private static final MethodHandle DESTROY = Native.withErrno(
            Verbs.ibv_destroy_cq$address(), Verbs.ibv_destroy_cq$descriptor());
    private static final MethodHandle RESIZE = Native.withErrno(
            Verbs.ibv_resize_cq$address(), Verbs.ibv_resize_cq$descriptor());
    private static final MethodHandle ACK = Native.plain(
            Verbs.ibv_ack_cq_events$address(), Verbs.ibv_ack_cq_events$descriptor());

    /** Completion events acknowledged together ({@code ibv_ack_cq_events} takes a lock in libibverbs). */
    static final int ACK_BATCH = 32;

    final Context context;
    private final CompletionChannel channel;
    /** Guards {@link #unacked} and {@link #destroying}. */
    private final Object events = new Object();
    /** Events of this queue read from its channel and not yet acknowledged. */
    private int unacked;
    /** Set while {@code ibv_destroy_cq} runs: it waits until every event read is acknowledged. */
    private boolean destroying;
    private final MemorySegment pollFn;
    private final MemorySegment notifyFn;
    /** Frees a queue made elsewhere; null for {@code ibv_destroy_cq}. */
    private final Consumer<MemorySegment> destroyer;

    /**
     * SoftiWARP: the queue pairs of this queue's error completions are told
     * ({@link QueuePair#errorSeen}), so that a post that would never complete there is refused
     * ({@link Quirks#SIW_POST_IN_ERROR_NEVER_COMPLETES}); false elsewhere, and the poll does nothing more.
     */
    private final boolean noteErrors;

    CompletionQueue(Context context, int entries, CompletionChannel channel, int compVector) {
        this(context, create(context, entries, channel, compVector), channel, null);
    }

    /**
     * A classic queue over {@code created}, an {@code ibv_cq} made elsewhere; destroyed by
     * {@code destroyer}, or by {@code ibv_destroy_cq} when it is null.
     */
    CompletionQueue(Context context, MemorySegment created, CompletionChannel channel, Consumer<MemorySegment> destroyer) {
        super(created, ibv_cq.sizeof(), context, channel);
        this.context = context;
        this.channel = channel;
        this.destroyer = destroyer;
        this.noteErrors = context.has(Quirks.SIW_POST_IN_ERROR_NEVER_COMPLETES);
        try {
            this.pollFn = context.op(DataPath.POLL);
            this.notifyFn = context.op(DataPath.REQ_NOTIFY);
            context.register(this, ptr().address());
            afterCreate();
        } catch (RuntimeException | Error e) {
            abandon(e); // destroys the completion queue: its context and channel stay closable
            throw e;
        }
    }

    /**
     * For {@link ExtendedCompletionQueue}: the queue {@code created} ({@code struct ibv_cq_ex}); the
     * subclass registers it and calls {@link #afterCreate()} once its own fields are set.
     */
    CompletionQueue(Context context, MemorySegment created, CompletionChannel channel) {
        super(created, io.github.panamaverbs.bindings.ibv_cq_ex.sizeof(), context, channel);
        this.context = context;
        this.channel = channel;
        this.destroyer = null;
        this.noteErrors = context.has(Quirks.SIW_POST_IN_ERROR_NEVER_COMPLETES);
        try {
            this.pollFn = context.op(DataPath.POLL);
            this.notifyFn = context.op(DataPath.REQ_NOTIFY);
        } catch (RuntimeException | Error e) {
            abandon(e);
            throw e;
        }
    }

    /** The provider's poll_cq, for {@link ExtendedCompletionQueue#poll}. */
    final MemorySegment pollFn() {
        return pollFn;
    }

    static void checkArguments(Context context, int entries, CompletionChannel channel, int compVector) {
        if (entries <= 0) {
            throw new IllegalArgumentException("a completion queue needs at least one entry, not " + entries);
        }
        if (channel != null && channel.context() != context) {
            throw new IllegalArgumentException(channel + " belongs to another context than " + context);
        }
        if (compVector < 0 || compVector >= Math.max(1, context.numCompVectors())) {
            throw new IllegalArgumentException("completion vector " + compVector + " is not in [0, "
                    + context.numCompVectors() + ")");
        }
    }

    private static MemorySegment create(Context context, int entries, CompletionChannel channel, int compVector) {
        if (entries <= 0) {
            throw new IllegalArgumentException("a completion queue needs at least one entry, not " + entries);
        }
        MemorySegment ctx = checkOpen(context);
        MemorySegment ch = channel == null ? MemorySegment.NULL : checkOpen(channel);
        checkArguments(context, entries, channel, compVector);
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
     * @throws IllegalStateException if this queue is closed, or the batch's memory was freed
     * @throws VerbsException        if the provider reports an error (not a failed completion: those are data)
     */
    public int poll(WorkCompletions batch) {
        Objects.requireNonNull(batch, "batch");
        int n;
        try {
            n = (int) DataPath.POLL_CQ.invokeExact(pollFn, ptr(), batch.capacity, batch.callSegment);
        } catch (IllegalStateException e) {
            throw pollRefused(e, batch);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        } finally {
            Reference.reachabilityFence(batch);
        }
        return polled(batch, n);
    }

    /**
     * The calling thread's view of this queue: its {@link Confined#poll} costs what the bare provider
     * call does (no arena is acquired), and only this thread may use or close it. This queue cannot
     * close while the view is open: close the view first, in the thread that made it (try-with-resources);
     * a view whose thread has ended is closed by this queue's close. One view per polling thread is the usual shape (thread per queue).
     *
     * @return the view, confined to the calling thread
     * @throws IllegalStateException if this queue is closed
     */
    public Confined confined() {
        return new Confined(this);
    }

    /**
     * A view of a completion queue confined to one thread, for the fastest poll: see
     * {@link CompletionQueue#confined()}. Every call from another thread, or after {@link #close()},
     * throws {@link IllegalStateException}.
     */
    public static final class Confined extends ConfinedView {
        private final CompletionQueue queue;
        private final long address;

        private Confined(CompletionQueue queue) {
            super(queue, ibv_cq.sizeof());
            this.queue = queue;
            this.address = queue.ptr().address();
        }

        /**
         * {@link CompletionQueue#poll}, from the owner thread. A batch in memory the GC frees is passed
         * as an address; a batch of a caller's arena goes through the queue's checked poll, so that a
         * closed arena is still refused.
         *
         * @param batch where the completions go; its {@link WorkCompletions#count()} becomes the result
         * @return how many completions were read; 0 when the queue is empty
         * @throws IllegalStateException if called by another thread, if the view is closed, or the batch's memory was freed
         * @throws VerbsException        if the provider reports an error
         */
        public int poll(WorkCompletions batch) {
            check();
            return queue.pollConfined(address, batch);
        }

        /** {@return the queue} */
        public CompletionQueue queue() {
            return queue;
        }

        @Override
        public String toString() {
            return "CompletionQueue.Confined[" + queue.context.device().name() + ", " + threadName(owner()) + "]";
        }
    }

    /** {@link Confined#poll}: the queue at {@code address} is open while its view is. */
    int pollConfined(long address, WorkCompletions batch) {
        long wc = batch.callAddress;
        if (wc == 0) {
            return poll(batch);
        }
        int n;
        try {
            n = (int) DataPath.POLL_CQ_RAW.invokeExact(pollFn, address, batch.capacity, wc);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        } finally {
            Reference.reachabilityFence(batch);
        }
        return polled(batch, n);
    }

    /** What a poll throws when FFM refused one of its segments: the batch's freed memory, or this queue closed. */
    final IllegalStateException pollRefused(IllegalStateException e, WorkCompletions batch) {
        return isOpen() && !batch.segment.scope().isAlive()
                ? new IllegalStateException("the memory of the WorkCompletions batch has been freed (its arena is closed)", e)
                : closed(e);
    }

    /** After poll_cq returned {@code n} into {@code batch}: its count, or the provider's error. */
    final int polled(WorkCompletions batch, int n) {
        if (n < 0) {
            batch.count = 0;
            throw Native.fail("ibv_poll_cq", -n, Native.NO_HINT);
        }
        batch.count = n;
        if (noteErrors) {
            noteErrors(batch, n);
        }
        return n;
    }

    /**
     * Refuses a call that takes the provider's queue lock on a thread that holds it already: nothing
     * here; an {@link ExtendedCompletionQueue} between startPoll() and endPoll() on this thread.
     */
    void requireNoCursorOnThisThread(String call) {
    }

    /** Tells the queue pair of each error completion of {@code batch} that it may be in ERR (SoftiWARP only). */
    private void noteErrors(WorkCompletions batch, int n) {
        for (int i = 0; i < n; i++) {
            if (batch.status(i) != WcStatus.SUCCESS) {
                QueuePair qp = context.queuePairNumbered(batch.qpNumber(i));
                if (qp != null) {
                    qp.errorSeen = true;
                }
            }
        }
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
        requireNoCursorOnThisThread("requestNotification");
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
     * Waits for completions of this queue through its completion channel, never longer than
     * {@code timeout}, in the order the verbs require: polls; if nothing is there, asks for
     * notification and polls again (a completion that arrived in between is found then, not lost
     * until the next one), then waits for the channel's event and polls. A virtual thread that waits
     * here parks and leaves its carrier to others (see {@link CompletionChannel#awaitEvent}); busy
     * polling with {@link #poll(WorkCompletions)} stays the fastest path.
     *
     * <p>The queue must be the only one on its channel: an event of another queue would be consumed
     * here. With a shared channel, wait with {@link CompletionChannel#awaitEvent} and poll the queue
     * it names.
     *
     * @param batch   where the completions go
     * @param timeout the longest to wait
     * @return the number of completions polled into {@code batch}; 0 if none came in time
     * @throws IllegalStateException if the queue has no completion channel or shares it with another
     *                               queue, if the queue or the channel is closed (also while waiting:
     *                               a close wakes the waiter within about 50 ms), if the thread is
     *                               interrupted while waiting (its interrupt status stays set), or,
     *                               for an extended queue, between its
     *                               {@link ExtendedCompletionQueue#startPoll()} and
     *                               {@link ExtendedCompletionQueue#endPoll()} on this thread
     * @throws VerbsException        if polling, {@code ibv_req_notify_cq} or {@code ibv_get_cq_event} fails
     */
    public int await(WorkCompletions batch, Duration timeout) {
        Objects.requireNonNull(batch, "batch");
        requireNoCursorOnThisThread("await");
        long deadline = Native.deadline(Objects.requireNonNull(timeout, "timeout"));
        if (channel == null) {
            throw new IllegalStateException(this + " has no completion channel to wait on: create it with one, or poll");
        }
        int sharing = channel.countUsers(CompletionQueue.class);
        if (sharing != 1) {
            throw new IllegalStateException(this + " shares " + channel + " with " + (sharing - 1) + " other completion "
                    + "queue(s), whose events a wait here would consume: wait with CompletionChannel.awaitEvent");
        }
        int n = poll(batch);
        while (n == 0) {
            requestNotification(false);
            n = poll(batch);
            if (n > 0) {
                break; // the notification stays armed: a later wait may see its event and find nothing, and wait again
            }
            if (channel.awaitEvent(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())), this).isEmpty()) {
                return 0;
            }
            n = poll(batch);
            if (n == 0 && System.nanoTime() - deadline >= 0) {
                return 0;
            }
        }
        return n;
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
        requireNoCursorOnThisThread("resize");
        MemorySegment cq = handle();
        check("ibv_resize_cq", e -> e == Errno.EINVAL ? entries + " entries is more than the device's max_cqe, "
                + "or fewer than the completions it holds now" : null,
                c -> (int) RESIZE.invokeExact(c.errno(), cq, entries));
    }

    /**
     * Counts an event of this queue read from its channel ({@code cq} is its C struct), and
     * acknowledges the events counted every {@link #ACK_BATCH} (and all of them before the queue is
     * destroyed, which waits for that), as libibverbs advises for a busy channel.
     */
    void eventRead(MemorySegment cq) {
        int n = 0;
        synchronized (events) {
            if (destroying) {
                n = 1; // ibv_destroy_cq is waiting for this one
            } else if (++unacked == ACK_BATCH) {
                n = unacked;
                unacked = 0;
            }
        }
        if (n > 0) {
            ackEvents(cq, n);
        }
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
        int n;
        synchronized (events) {
            destroying = true;
            n = unacked;
            unacked = 0;
        }
        if (n > 0) {
            ackEvents(address, n);
        }
        try {
            if (destroyer != null) {
                destroyer.accept(address);
            } else {
                Native.check("ibv_destroy_cq", e -> e == Errno.EBUSY ? "a queue pair still reports to it" : null,
                        c -> (int) DESTROY.invokeExact(c.errno(), address));
            }
        } catch (RuntimeException | Error e) {
            synchronized (events) {
                destroying = false; // it stays open: later events are counted again
            }
            throw e;
        }
        context.unregister(address.address());
    }

    @Override
    public String toString() {
        return "CompletionQueue[" + context.device().name() + "]";
    }
}
