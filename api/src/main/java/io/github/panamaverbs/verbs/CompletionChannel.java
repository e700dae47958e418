package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_comp_channel;
import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Native;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.function.BooleanSupplier;

/**
 * A completion event channel ({@code struct ibv_comp_channel}): a file descriptor on which completion
 * queues that asked for notification ({@link CompletionQueue#requestNotification(boolean)}) report
 * that a completion arrived, so a thread can sleep instead of spinning.
 *
 * <pre>{@code
 * cq.requestNotification(false);
 * ... post ...
 * Optional<CompletionQueue> woke = channel.awaitEvent(Duration.ofSeconds(5));
 * woke.ifPresent(q -> { q.requestNotification(false); q.poll(wc); ... });
 * }</pre>
 */
public final class CompletionChannel extends Resource {
    private static final MethodHandle CREATE = Native.withErrno(
            Verbs.ibv_create_comp_channel$address(), Verbs.ibv_create_comp_channel$descriptor());
    private static final MethodHandle DESTROY = Native.withErrno(
            Verbs.ibv_destroy_comp_channel$address(), Verbs.ibv_destroy_comp_channel$descriptor());
    private static final MethodHandle GET_CQ_EVENT = Native.withErrno(
            Verbs.ibv_get_cq_event$address(), Verbs.ibv_get_cq_event$descriptor());

    private final Context context;

    CompletionChannel(Context context) {
        super(create(context), ibv_comp_channel.sizeof(), context);
        this.context = context;
        try {
            Native.setNonBlocking(fd(), "comp_channel");
            afterCreate();
        } catch (RuntimeException | Error e) {
            abandon(e); // closes the channel's file descriptor: its context stays closable
            throw e;
        }
    }

    private static MemorySegment create(Context context) {
        MemorySegment ctx = checkOpen(context);
        try {
            return Native.create("ibv_create_comp_channel", Native.NO_HINT,
                    c -> (MemorySegment) CREATE.invokeExact(c.errno(), ctx));
        } catch (IllegalStateException e) {
            throw closed(e, context);
        }
    }

    /** {@return the context it was created in} */
    public Context context() {
        return context;
    }

    /**
     * The channel's file descriptor, for use with an event loop. It is non-blocking.
     *
     * @return the file descriptor
     * @throws IllegalStateException if the channel is closed
     */
    public int fd() {
        return read(ibv_comp_channel::fd);
    }

    /**
     * Waits for the next completion event ({@code ibv_get_cq_event}) and acknowledges it
     * ({@code ibv_ack_cq_events}, batched: every 32 events of a queue, and the rest before the queue
     * is destroyed), never longer than {@code timeout}. Notification is one-shot: call
     * {@link CompletionQueue#requestNotification(boolean)} again before polling, to not miss the
     * next completion. Several threads may wait: each event goes to one of them, and the others go
     * on waiting until their own timeouts (the channel's file descriptor is non-blocking).
     *
     * @param timeout the longest to wait; zero or negative to look once without waiting
     * @return the completion queue that has new completions, or empty on timeout
     * @throws IllegalStateException if the channel is closed, also while waiting (noticed within about
     *                               50 ms), if the thread is interrupted while waiting (its interrupt
     *                               status stays set), or if the event names a completion queue this
     *                               binding does not know
     * @throws VerbsException        if {@code ibv_get_cq_event} or {@code poll(2)} fails
     */
    public Optional<CompletionQueue> awaitEvent(Duration timeout) {
        return awaitEvent(timeout, null);
    }

    /**
     * {@link #awaitEvent(Duration)} for {@link CompletionQueue#await}: also wakes, with
     * IllegalStateException, when {@code waiter} (the queue the caller waits for, or null) is closed.
     */
    Optional<CompletionQueue> awaitEvent(Duration timeout, CompletionQueue waiter) {
        long deadline = Native.deadline(Objects.requireNonNull(timeout, "timeout"));
        int fd = fd();
        BooleanSupplier open = waiter == null ? this::isOpen : () -> {
            if (!waiter.isOpen()) {
                throw new IllegalStateException(waiter + " was closed while a thread waited for its completions");
            }
            return isOpen();
        };
        while (Native.awaitReadable(fd, deadline, toString(), open)) {
            MemorySegment ch = handle();
            Native.WaitScratch scratch = Native.waitScratch();
            int rc;
            try {
                rc = (int) GET_CQ_EVENT.invokeExact(scratch.errno, ch, scratch.out1, scratch.out2);
            } catch (IllegalStateException e) {
                throw closed(e);
            } catch (Throwable t) {
                throw Native.rethrow(t);
            }
            if (rc != 0) {
                int errno = Native.errno(scratch.errno);
                if (errno == Errno.EAGAIN) {
                    continue; // another waiter took it
                }
                throw Native.fail("ibv_get_cq_event", errno, Native.NO_HINT);
            }
            MemorySegment cqPtr = scratch.out1.get(ADDRESS, 0);
            CompletionQueue cq = context.completionQueueAt(cqPtr.address());
            if (cq != null) {
                cq.eventRead(cqPtr);
            } else {
                CompletionQueue.ackEvents(cqPtr, 1);
                throw new IllegalStateException("completion event for an unknown completion queue at 0x"
                        + Long.toHexString(cqPtr.address()));
            }
            return Optional.of(cq);
        }
        return Optional.empty();
    }

    @Override
    void destroy(MemorySegment address) {
        Native.check("ibv_destroy_comp_channel", e -> e == Errno.EBUSY ? "a completion queue still uses it" : null,
                c -> (int) DESTROY.invokeExact(c.errno(), address));
    }

    @Override
    public String toString() {
        return "CompletionChannel[" + context.device().name() + "]";
    }
}
