package io.github.panamaverbs.verbs;

/**
 * An asynchronous event of a device ({@code struct ibv_async_event}), from
 * {@link Context#nextAsyncEvent(java.time.Duration)}.
 *
 * @param type     what happened
 * @param resource the queue pair, completion queue or shared receive queue it concerns, or null for
 *                 port and device events (or an object this binding did not create)
 * @param port     the port number for port events, else 0
 */
public record AsyncEvent(AsyncEventType type, Resource resource, int port) {
    /** {@return the queue pair this event concerns, or null} */
    public QueuePair queuePair() {
        return resource instanceof QueuePair qp ? qp : null;
    }

    /** {@return the shared receive queue this event concerns, or null} */
    public SharedReceiveQueue sharedReceiveQueue() {
        return resource instanceof SharedReceiveQueue srq ? srq : null;
    }

    /** {@return the completion queue this event concerns, or null} */
    public CompletionQueue completionQueue() {
        return resource instanceof CompletionQueue cq ? cq : null;
    }
}
