package io.github.panamaverbs.channel;

import io.github.panamaverbs.cm.Listener;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * An RPC server: accepts {@link RpcClient}s' channels on a {@link Listener} and answers each request
 * with its {@link Handler}, which reads the request where it arrived (the channel's receive ring)
 * and writes the response where it leaves (a claimed slot of the send ring): no copy (a request
 * larger than a slot is read by the channel's rendezvous into registered memory first). A server
 * started with a largest reply above a slot gives the handler registered memory of that size
 * instead: a reply that fits a slot is then copied into one, a larger one goes by rendezvous (the
 * client reads it where the handler wrote it). Each channel is served by one virtual thread, in the
 * order the requests come; the accepting is one more.
 */
public final class RpcServer implements AutoCloseable {
    private static final Duration SLICE = Duration.ofSeconds(1);
    private static final long SLICE_NANOS = SLICE.toNanos();

    /** Answers one request. */
    @FunctionalInterface
    public interface Handler {
        /**
         * Answers {@code request} into {@code response}.
         *
         * @param request  the request's bytes (read-only, valid during the call)
         * @param response where the reply goes: a slot of the send ring, or registered memory of the
         *                 server's largest reply ({@link RpcServer#maxPayloadSize()} bytes, fewer for a
         *                 client that takes less)
         * @return how many bytes of {@code response} are the reply
         * @throws Exception to fail the call: the client's call throws {@link RpcException} with
         *                   {@link RpcException.Kind#REMOTE}, carrying this exception's message
         */
        int handle(MemorySegment request, MemorySegment response) throws Exception;
    }

    private final Listener listener;
    private final MessageChannel.Config config;
    private final Handler handler;
    /** The largest reply a handler may write; -1: what a slot holds (the replies travel in slots only). */
    private final int largestReply;
    private final Set<MessageChannel> channels = ConcurrentHashMap.newKeySet();
    private final Thread acceptor;
    private volatile boolean closed;

    /**
     * Binds to {@code local} and serves every client that connects, until closed.
     *
     * @param local   the address and port to listen on
     * @param config  the channels' sizes
     * @param handler answers the requests
     * @return the server; close it
     */
    public static RpcServer start(InetSocketAddress local, MessageChannel.Config config, Handler handler) {
        return start(local, config, -1, handler);
    }

    /**
     * {@link #start(InetSocketAddress, MessageChannel.Config, Handler)}, with replies of up to
     * {@code largestReply} bytes: the handler writes into registered memory of that size (one per
     * reply being sent, reused once the client has read it), a reply that fits a slot is copied into
     * one, and a larger one goes by rendezvous. A client takes replies up to its own
     * {@link MessageChannel.Config#largestMessage(int)} less the header; the handler of its calls gets
     * that much room when it is less.
     *
     * @param local        the address and port to listen on
     * @param config       the channels' sizes
     * @param largestReply the largest reply a handler may write, in bytes
     * @param handler      answers the requests
     * @return the server; close it
     * @throws IllegalArgumentException if {@code largestReply} is negative or above 2^31 - 8 less the header
     */
    public static RpcServer start(InetSocketAddress local, MessageChannel.Config config, int largestReply, Handler handler) {
        if (largestReply < -1 || largestReply > Integer.MAX_VALUE - 8 - RpcClient.HEADER) {
            throw new IllegalArgumentException("the largest reply must be in [0, 2^31 - 8 - " + RpcClient.HEADER + "], not " + largestReply);
        }
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(handler, "handler");
        return new RpcServer(Listener.bind(local, 64), config, largestReply, handler);
    }

    private RpcServer(Listener listener, MessageChannel.Config config, int largestReply, Handler handler) {
        this.listener = listener;
        this.config = config;
        this.handler = handler;
        this.largestReply = largestReply;
        this.acceptor = Thread.ofVirtual().name("rpc-server " + listener.localAddress()).start(this::acceptAll);
    }

    /** {@return the address and port the server listens on} */
    public InetSocketAddress localAddress() {
        return listener.localAddress();
    }

    /**
     * {@return the largest response a handler may write}: the channels' message size less the
     * header, or the largest reply the server was started with
     */
    public int maxPayloadSize() {
        return largestReply >= 0 ? largestReply : config.messageSize - RpcClient.HEADER;
    }

    private void acceptAll() {
        while (!closed) {
            MessageChannel channel;
            try {
                channel = MessageChannel.accept(listener, config, SLICE);
            } catch (RuntimeException e) {
                continue; // no request in this slice, a client that failed to connect, or the listener closed
            }
            channels.add(channel);
            if (closed) {
                closeQuietly(channel);
                return;
            }
            Thread.ofVirtual().name("rpc-serve " + channel).start(() -> serve(channel));
        }
    }

    private void serve(MessageChannel channel) {
        // the reply's room: a slot, or the largest reply that both this server and the client allow
        int room = largestReply < 0 ? channel.slotSize() - RpcClient.HEADER
                : Math.max(0, Math.min(largestReply, channel.maxMessageSize() - RpcClient.HEADER));
        try {
            while (true) {
                serveOne(channel, room);
            }
        } catch (ChannelException | IllegalStateException e) {
            // the client went, or the server is closing (its rings freed under a handler)
        } finally {
            channels.remove(channel);
            closeQuietly(channel);
        }
    }

    /**
     * Waits for one request, at most a {@link #SLICE}, and answers it. A method of its own, so that
     * the JIT compiles it after a few hundred requests (the loop around it would be compiled only
     * after tens of thousands).
     */
    private void serveOne(MessageChannel channel, int room) {
        MessageChannel.Received r = channel.receiveUntil(System.nanoTime() + SLICE_NANOS);
        if (r != null) {
            try (r) { // released with the reply's post, or here when there is none
                answer(channel, r, room);
            }
        }
    }

    private void answer(MessageChannel channel, MessageChannel.Received request, int room) {
        MemorySegment message = request.segment();
        if (message.byteSize() < RpcClient.HEADER) {
            return; // not a request of this protocol
        }
        int id = message.get(ValueLayout.JAVA_INT_UNALIGNED, 0) & ~1; // the request's id, shifted: the reply's status goes below it
        MessageChannel.Outgoing out = channel.claimFor(RpcClient.HEADER + room, SLICE_NANOS);
        while (out == null) { // the client returns credit as it reads replies
            out = channel.claimFor(RpcClient.HEADER + room, SLICE_NANOS);
        }
        try (MessageChannel.Outgoing reply = out) { // given back if the handler throws an Error
            reply(request, message, id, reply, room);
        }
    }

    /** Runs the handler on {@code message} into {@code out}'s room and posts the reply, releasing {@code request} first. */
    private void reply(MessageChannel.Received request, MemorySegment message, int id, MessageChannel.Outgoing out, int room) {
        MemorySegment m = out.segment();
        int status = RpcClient.OK;
        int length;
        try {
            length = handler.handle(message.asSlice(RpcClient.HEADER), m.asSlice(RpcClient.HEADER, room));
            if (length < 0 || length > room) {
                throw new IllegalStateException("the handler returned " + length + " bytes of a " + room + "-byte response");
            }
        } catch (Exception e) {
            status = RpcClient.FAILED;
            byte[] text = String.valueOf(e).getBytes(StandardCharsets.UTF_8);
            length = Math.min(text.length, room);
            MemorySegment.copy(text, 0, m, ValueLayout.JAVA_BYTE, RpcClient.HEADER, length);
        }
        m.set(ValueLayout.JAVA_INT_UNALIGNED, 0, id | status);
        out.commit(RpcClient.HEADER + length, request);
    }

    private static void closeQuietly(MessageChannel channel) {
        try {
            channel.close();
        } catch (RuntimeException ignored) {
            // closing on the way out: nothing more to do
        }
    }

    /** Stops accepting and closes every channel (their clients' pending calls fail). */
    @Override
    public void close() {
        closed = true;
        try {
            acceptor.join(TimeUnit.SECONDS.toMillis(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (MessageChannel c : channels) {
            closeQuietly(c);
        }
        listener.close();
    }

    @Override
    public String toString() {
        return "RpcServer[" + listener.localAddress() + "]";
    }
}
