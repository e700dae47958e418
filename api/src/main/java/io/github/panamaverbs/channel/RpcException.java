package io.github.panamaverbs.channel;

import io.github.panamaverbs.verbs.RdmaException;

/**
 * A call of an {@link RpcClient} failed: the server's handler threw (its message is carried), no
 * reply came within the call's timeout, or the channel ended (closed, or the peer gone: every
 * pending call fails so, naming the peer).
 */
public final class RpcException extends RdmaException {
    private static final long serialVersionUID = 1L;

    /** Why the call failed. */
    public enum Kind {
        /** The server's handler threw; the message carries its message. */
        REMOTE,
        /** No reply within the call's timeout (a late reply is dropped). */
        TIMEOUT,
        /** The channel was closed, or the peer is gone. */
        CLOSED
    }

    /** Why the call failed. */
    private final Kind kind;

    RpcException(Kind kind, String message, Throwable cause) {
        super(message);
        this.kind = kind;
        if (cause != null) {
            initCause(cause);
        }
    }

    /** {@return why the call failed} */
    public Kind kind() {
        return kind;
    }
}
