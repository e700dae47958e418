package io.github.panamaverbs.channel;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The client of an {@link RpcServer}: calls over one {@link MessageChannel}, any number at a time
 * from any number of (virtual) threads, multiplexed by request id. A call blocks its thread until
 * the reply, its timeout, or the end of the channel; {@link #callAsync} returns a future instead.
 * Replies are read by one virtual thread of the client, which parks while none is due.
 *
 * <p>A request and a reply each travel as one message of the channel, with a 12-byte header (the
 * request's id, and the reply's status), so the largest request or reply is
 * {@link #maxPayloadSize()}. A {@link Response} is a view of the channel's receive ring: close it
 * when read, as it holds one of the peer's credits until then.
 */
public final class RpcClient implements AutoCloseable {
    /** The header of a request and of a reply: the request id (long), then the status (int). */
    static final int HEADER = 12;
    static final int OK = 0;
    static final int FAILED = 1;
    private static final Duration READ_SLICE = Duration.ofSeconds(1);

    private final MessageChannel channel;
    private final Map<Long, CompletableFuture<Response>> pending = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();
    private final Thread reader;
    private volatile RpcException ended;

    /**
     * Connects to an {@link RpcServer} at {@code server}.
     *
     * @param server  the server's address and port
     * @param config  the channel's sizes
     * @param timeout the longest each step of connecting may take
     * @return the client; close it
     */
    public static RpcClient connect(InetSocketAddress server, MessageChannel.Config config, Duration timeout) {
        return new RpcClient(MessageChannel.connect(server, config, timeout));
    }

    /**
     * A client on {@code channel}, which it then owns (closes); nothing else may receive on it.
     *
     * @param channel a channel to an {@link RpcServer}
     */
    public RpcClient(MessageChannel channel) {
        this.channel = Objects.requireNonNull(channel, "channel");
        this.reader = Thread.ofVirtual().name("rpc-client " + channel).start(this::readReplies);
    }

    /** {@return the largest request this client sends, and reply it takes} */
    public int maxPayloadSize() {
        return channel.maxMessageSize() - HEADER;
    }

    /** {@return the channel under the client} */
    public MessageChannel channel() {
        return channel;
    }

    /**
     * Calls the server with {@code request} and waits for its reply.
     *
     * @param request the request's bytes, at most {@link #maxPayloadSize()}
     * @param timeout the longest to wait for credit to send and then for the reply
     * @return the reply, a view of the receive ring: close it once read
     * @throws RpcException             if the handler threw ({@link RpcException.Kind#REMOTE}), no reply came
     *                                  in time ({@link RpcException.Kind#TIMEOUT}) or the channel ended
     *                                  ({@link RpcException.Kind#CLOSED})
     * @throws IllegalArgumentException if {@code request} is larger than {@link #maxPayloadSize()}
     */
    public Response call(MemorySegment request, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        Call call = send(request, timeout);
        long id = call.id();
        try {
            return call.reply().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            pending.remove(id);
            throw timedOut(id, timeout);
        } catch (InterruptedException e) {
            pending.remove(id);
            Thread.currentThread().interrupt();
            throw new RpcException(RpcException.Kind.CLOSED, "call " + id + " on " + channel + " interrupted", e);
        } catch (ExecutionException e) {
            throw (RpcException) e.getCause();
        }
    }

    /**
     * {@link #call}, returning at once (after the request is posted, which may wait for credit).
     *
     * @param request the request's bytes, at most {@link #maxPayloadSize()}
     * @param timeout the longest to wait for credit to send and then for the reply
     * @return the reply's future; it fails with {@link RpcException}
     */
    public CompletableFuture<Response> callAsync(MemorySegment request, Duration timeout) {
        Call call;
        try {
            call = send(request, timeout);
        } catch (RpcException e) {
            return CompletableFuture.failedFuture(e);
        }
        long id = call.id();
        return call.reply().orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS).handle((r, e) -> {
            if (e == null) {
                return r;
            }
            pending.remove(id);
            throw e instanceof TimeoutException ? timedOut(id, timeout) : (RpcException) e;
        });
    }

    private RpcException timedOut(long id, Duration timeout) {
        return new RpcException(RpcException.Kind.TIMEOUT, "call " + id + " on " + channel + ": no reply within " + timeout, null);
    }

    private record Call(long id, CompletableFuture<Response> reply) {
    }

    /** Registers and sends one request. */
    private Call send(MemorySegment request, Duration timeout) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(timeout, "timeout");
        if (request.byteSize() > maxPayloadSize()) {
            throw new IllegalArgumentException("a request of " + request.byteSize() + " bytes is larger than the "
                    + maxPayloadSize() + " that " + channel + " carries (its message size less the " + HEADER + "-byte header)");
        }
        long id = ids.incrementAndGet();
        CompletableFuture<Response> reply = new CompletableFuture<>();
        pending.put(id, reply);
        RpcException end = ended;
        if (end != null) {
            pending.remove(id);
            throw end;
        }
        try {
            MessageChannel.Outgoing out = channel.claim(timeout);
            if (out == null) {
                pending.remove(id);
                throw new RpcException(RpcException.Kind.TIMEOUT, "call " + id + " on " + channel
                        + ": no credit to send within " + timeout + " (the server is not keeping up)", null);
            }
            MemorySegment slot = out.segment();
            slot.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, id);
            slot.set(ValueLayout.JAVA_INT_UNALIGNED, 8, OK);
            slot.asSlice(HEADER, request.byteSize()).copyFrom(request);
            out.commit(HEADER + (int) request.byteSize());
        } catch (ChannelException e) {
            pending.remove(id);
            throw closed(e);
        }
        return new Call(id, reply);
    }

    private RpcException closed(ChannelException e) {
        return new RpcException(RpcException.Kind.CLOSED, e.getMessage(), e);
    }

    private void readReplies() {
        try {
            while (true) {
                MessageChannel.Received r = channel.receive(READ_SLICE);
                if (r == null) {
                    continue;
                }
                MemorySegment m = r.segment();
                if (m.byteSize() < HEADER) {
                    r.close();
                    throw new ChannelException(channel + ": a reply of " + m.byteSize() + " bytes, shorter than the header");
                }
                long id = m.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
                int status = m.get(ValueLayout.JAVA_INT_UNALIGNED, 8);
                CompletableFuture<Response> reply = pending.remove(id);
                if (reply == null) {
                    r.close(); // a call that timed out
                } else if (status == OK) {
                    if (!reply.complete(new Response(r))) {
                        r.close();
                    }
                } else {
                    String message = new String(m.asSlice(HEADER).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
                    r.close();
                    reply.completeExceptionally(new RpcException(RpcException.Kind.REMOTE, "call " + id + " on " + channel
                            + " failed on the server: " + message, null));
                }
            }
        } catch (ChannelException e) {
            end(closed(e));
        } catch (RuntimeException | Error e) {
            end(new RpcException(RpcException.Kind.CLOSED, channel + ": the reply reader failed: " + e, e));
        }
    }

    /** Fails every pending call and every later one with {@code e}. */
    private void end(RpcException e) {
        ended = e;
        for (Long id : pending.keySet()) {
            CompletableFuture<Response> f = pending.remove(id);
            if (f != null) {
                f.completeExceptionally(e);
            }
        }
    }

    /** Closes the channel: pending calls fail with {@link RpcException.Kind#CLOSED}. */
    @Override
    public void close() {
        try {
            channel.close();
        } finally {
            try {
                reader.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public String toString() {
        return "RpcClient[" + channel + "]";
    }

    /** A reply: a read-only view of the channel's receive ring, valid until {@link #close()}. */
    public static final class Response implements AutoCloseable {
        private final MessageChannel.Received message;

        Response(MessageChannel.Received message) {
            this.message = message;
        }

        /** {@return the reply's bytes (the server handler's response)} */
        public MemorySegment segment() {
            return message.segment().asSlice(HEADER);
        }

        /** {@return the reply's size in bytes} */
        public int length() {
            return message.length() - HEADER;
        }

        /** Releases the receive slot (the peer's credit). */
        @Override
        public void close() {
            message.close();
        }
    }
}
