package io.github.panamaverbs.cm;

/**
 * A connection could not be made or was lost: the peer rejected it, did not answer in time, could
 * not be resolved, or disconnected. {@link #event()} is the event that said so, null for a timeout.
 * A {@link io.github.panamaverbs.verbs.RdmaException}, as {@link io.github.panamaverbs.verbs.VerbsException} is.
 */
public final class ConnectionException extends io.github.panamaverbs.verbs.RdmaException {
    private static final long serialVersionUID = 1L;

    private final transient CmEvent event;
    /** Whether the peer refused the connection. */
    private final boolean refused;

    ConnectionException(String message, CmEvent event) {
        this(message, event, event != null && event.type() == CmEventType.REJECTED);
    }

    ConnectionException(String message, CmEvent event, boolean refused) {
        super(message);
        this.event = event;
        this.refused = refused;
    }

    /** {@return the event that ended the attempt, or null when nothing came in time (or on iWARP's immediate refusal)} */
    public CmEvent event() {
        return event;
    }

    /**
     * Whether the peer refused: a REJECTED event (nobody listening, or the application said no), or
     * on iWARP a connect that failed at once with ECONNREFUSED.
     *
     * @return true if the peer refused the connection
     */
    public boolean isRejected() {
        return refused;
    }
}
