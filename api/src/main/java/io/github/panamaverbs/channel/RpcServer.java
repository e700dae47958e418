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
 * larger than a slot is read by the channel's rendezvous into registered memory first). Each channel
 * is served by one virtual thread, in the order the requests come; the accepting is one more.
 */
public final class RpcServer implements AutoCloseable {
    private static final Duration SLICE = Duration.ofSeconds(1);

    /** Answers one request. */
    @FunctionalInterface
    public interface Handler {
        /**
         * Answers {@code request} into {@code response}.
         *
         * @param request  the request's bytes (read-only, valid during the call)
         * @param response where the reply goes, {@link RpcServer#maxPayloadSize()} bytes of the send ring
         * @return how many bytes of {@code response} are the reply
         * @throws Exception to fail the call: the client's call throws {@link RpcException} with
         *                   {@link RpcException.Kind#REMOTE}, carrying this exception's message
         */
        int handle(MemorySegment request, MemorySegment response) throws Exception;
    }

    private final Listener listener;
    private final MessageChannel.Config config;
    private final Handler handler;
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
        return new RpcServer(Listener.bind(local, 64), config, handler);
    }

    private RpcServer(Listener listener, MessageChannel.Config config, Handler handler) {
        this.listener = listener;
        this.config = Objects.requireNonNull(config, "config");
        this.handler = Objects.requireNonNull(handler, "handler");
        this.acceptor = Thread.ofVirtual().name("rpc-server " + listener.localAddress()).start(this::acceptAll);
    }

    /** {@return the address and port the server listens on} */
    public InetSocketAddress localAddress() {
        return listener.localAddress();
    }

    /** {@return the largest response a handler may write} (the channels' message size less the header) */
    public int maxPayloadSize() {
        return config.messageSize - RpcClient.HEADER;
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
        try {
            while (true) {
                serveOne(channel);
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
    private void serveOne(MessageChannel channel) {
        MessageChannel.Received r = channel.receive(SLICE);
        if (r != null) {
            try (r) {
                answer(channel, r.segment());
            }
        }
    }

    private void answer(MessageChannel channel, MemorySegment message) {
        if (message.byteSize() < RpcClient.HEADER) {
            return; // not a request of this protocol
        }
        long id = message.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
        MessageChannel.Outgoing out = channel.claim(SLICE);
        while (out == null) { // the client returns credit as it reads replies
            out = channel.claim(SLICE);
        }
        MemorySegment slot = out.segment();
        int status = RpcClient.OK;
        int length;
        try {
            length = handler.handle(message.asSlice(RpcClient.HEADER), slot.asSlice(RpcClient.HEADER));
            if (length < 0 || length > slot.byteSize() - RpcClient.HEADER) {
                throw new IllegalStateException("the handler returned " + length + " bytes of a " + (slot.byteSize() - RpcClient.HEADER)
                        + "-byte response");
            }
        } catch (Exception e) {
            status = RpcClient.FAILED;
            byte[] text = String.valueOf(e).getBytes(StandardCharsets.UTF_8);
            length = (int) Math.min(text.length, slot.byteSize() - RpcClient.HEADER);
            MemorySegment.copy(text, 0, slot, ValueLayout.JAVA_BYTE, RpcClient.HEADER, length);
        }
        slot.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, id);
        slot.set(ValueLayout.JAVA_INT_UNALIGNED, 8, status);
        out.commit(RpcClient.HEADER + length);
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
