package io.github.panamaverbs.channel;

import io.github.panamaverbs.verbs.RdmaException;

/**
 * A {@link MessageChannel} can no longer carry messages: it was closed (by this side, or by the
 * peer), the peer is gone, or a transfer failed. The message names the peer. Every call blocked on
 * the channel fails with it, and every call after it.
 */
public final class ChannelException extends RdmaException {
    private static final long serialVersionUID = 1L;

    ChannelException(String message) {
        super(message);
    }
}
