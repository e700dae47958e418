package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_comp_channel;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.time.Duration;
import java.util.Optional;

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
    }

    private static MemorySegment create(Context context) {
        MemorySegment ctx = checkOpen(context);
        try (Arena call = Arena.ofConfined()) {
            MemorySegment errno = Native.errnoSegment(call);
            MemorySegment ch = (MemorySegment) CREATE.invokeExact(errno, ctx);
            if (ch.address() == 0) {
                throw Native.fail("ibv_create_comp_channel", Native.errno(errno));
            }
            return ch;
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    /** The channel's file descriptor, for use with an event loop. */
    public int fd() {
        return ibv_comp_channel.fd(handle());
    }

    /**
     * Waits for the next completion event ({@code ibv_get_cq_event}) and acknowledges it
     * ({@code ibv_ack_cq_events}), never longer than {@code timeout}. Notification is one-shot: call
     * {@link CompletionQueue#requestNotification(boolean)} again before polling, to not miss the
     * next completion.
     *
     * @return the completion queue that has new completions, or empty on timeout
     */
    public Optional<CompletionQueue> awaitEvent(Duration timeout) {
        if (!Native.awaitReadable(fd(), timeout, "comp_channel")) {
            return Optional.empty();
        }
        MemorySegment ch = handle();
        try (Arena call = Arena.ofConfined()) {
            MemorySegment errno = Native.errnoSegment(call);
            MemorySegment cqOut = call.allocate(ADDRESS);
            MemorySegment ctxOut = call.allocate(ADDRESS);
            int rc = (int) GET_CQ_EVENT.invokeExact(errno, ch, cqOut, ctxOut);
            Native.check("ibv_get_cq_event", rc, errno);
            MemorySegment cqPtr = cqOut.get(ADDRESS, 0);
            CompletionQueue cq = context.completionQueueAt(cqPtr.address());
            CompletionQueue.ackEvents(cqPtr, 1);
            if (cq == null) {
                throw new IllegalStateException("completion event for an unknown completion queue at 0x"
                        + Long.toHexString(cqPtr.address()));
            }
            return Optional.of(cq);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    @Override
    void destroy(MemorySegment address) {
        Native.destroy("ibv_destroy_comp_channel", DESTROY, address);
    }

    @Override
    public String toString() {
        return "CompletionChannel[" + context.device().name() + "]";
    }
}
