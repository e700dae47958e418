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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The client of an {@link RpcServer}: calls over one {@link MessageChannel}, any number at a time
 * from any number of (virtual) threads, multiplexed by request id. A call blocks its thread until
 * the reply, its timeout, or the end of the channel; {@link #callAsync} returns a future instead.
 * Replies are read by the callers themselves, one at a time (leader and followers): the caller that
 * reads the channel hands each reply to its call and goes on until its own has come, then wakes
 * another waiting caller to read on; the others park until their reply or their turn comes. A lone
 * caller thus posts, polls and takes its reply on its own thread, with no hand-over.
 *
 * <p>A request and a reply each travel as one message of the channel, with a 12-byte header (the
 * request's id, and the reply's status). A reply fits a slot ({@link #maxPayloadSize()}); a request
 * may be larger, up to {@link #maxRequestSize()}: it then goes by the channel's rendezvous (the
 * server reads it with an RDMA READ), with nothing different for the caller or the handler. A
 * {@link Response} is a view of the channel's receive ring: close it when read, as it holds one of
 * the peer's credits until then.
 */
public final class RpcClient implements AutoCloseable {
    /**
     * The bytes of the header each request and reply carry in its channel message (the request id,
     * then the status): a channel of {@link MessageChannel.Config#messageSize(int)} bytes carries
     * requests and replies of up to that many bytes less these.
     */
    public static final int HEADER = 12;
    static final int OK = 0;
    static final int FAILED = 1;
    private static final long READ_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private final MessageChannel channel;
    private final Map<Long, CompletableFuture<Response>> pending = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();
    /** Held by the caller that reads the channel. */
    private final java.util.concurrent.locks.ReentrantLock reading = new java.util.concurrent.locks.ReentrantLock();
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
    }

    /** {@return the largest reply this client takes, and request it sends in a slot of the ring} */
    public int maxPayloadSize() {
        return channel.slotSize() - HEADER;
    }

    /**
     * {@return the largest request this client sends}: the server's
     * {@link MessageChannel.Config#largestMessage(int)} less the header (those above
     * {@link #maxPayloadSize()} go by rendezvous)
     */
    public int maxRequestSize() {
        return channel.maxMessageSize() - HEADER;
    }

    /** {@return the channel under the client} */
    public MessageChannel channel() {
        return channel;
    }

    /**
     * Calls the server with {@code request} and waits for its reply.
     *
     * @param request the request's bytes, at most {@link #maxRequestSize()}
     * @param timeout the longest to wait for credit to send and then for the reply
     * @return the reply, a view of the receive ring: close it once read
     * @throws RpcException             if the handler threw ({@link RpcException.Kind#REMOTE}), no reply came
     *                                  in time ({@link RpcException.Kind#TIMEOUT}) or the channel ended
     *                                  ({@link RpcException.Kind#CLOSED})
     * @throws IllegalArgumentException if {@code request} is larger than {@link #maxRequestSize()}
     */
    public Response call(MemorySegment request, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        Call call;
        try {
            call = send(request, timeout);
        } catch (RpcException e) {
            throw failed(e);
        }
        try {
            return await(call, deadline, timeout);
        } catch (RpcException e) {
            pending.remove(call.id());
            if (!call.reply().cancel(false) && !call.reply().isCompletedExceptionally()) {
                call.reply().join().close(); // the reply came as the wait gave up: its slot goes back
            }
            promote(); // this caller may have been woken to read: another reads instead
            throw failed(e);
        }
    }

    /** Commits the Flight Recorder event of a failed call; returns {@code e}. */
    private RpcException failed(RpcException e) {
        ChannelEvents.RpcError event = new ChannelEvents.RpcError();
        if (event.shouldCommit()) {
            event.channel = channel.toString();
            event.kind = e.kind().name();
            event.message = e.getMessage();
            event.commit();
        }
        return e;
    }

    /** Waits for {@code call}'s reply, reading the channel while no other caller does. */
    private Response await(Call call, long deadline, Duration timeout) {
        while (true) {
            if (call.reply().isDone()) {
                return result(call);
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw timedOut(call.id(), timeout);
            }
            if (reading.tryLock()) {
                try {
                    while (!call.reply().isDone() && deadline - System.nanoTime() > 0) {
                        if (readOnce(Math.min(deadline - System.nanoTime(), READ_SLICE_NANOS)) && Thread.currentThread().isVirtual()) {
                            Thread.yield(); // the caller just woken may run (and call again) on this carrier
                        }
                    }
                } finally {
                    reading.unlock();
                    promote();
                }
            } else {
                java.util.concurrent.locks.LockSupport.parkNanos(this, left); // until the reply, or our turn to read
                if (Thread.interrupted()) {
                    Thread.currentThread().interrupt();
                    throw new RpcException(RpcException.Kind.CLOSED, "call " + call.id() + " on " + channel + " interrupted", null);
                }
            }
        }
    }

    private static Response result(Call call) {
        try {
            return call.reply().join();
        } catch (java.util.concurrent.CompletionException e) {
            throw (RpcException) e.getCause();
        }
    }

    /**
     * Wakes one caller still waiting, to read the channel in turn: one whose request is sent, so
     * that it is, or is about to be, parked in {@link #await} (a caller still waiting for credit to
     * send would spend the turn there, while the credit it waits for comes only as replies are read).
     */
    private void promote() {
        for (CompletableFuture<Response> f : pending.values()) {
            if (f instanceof Pending p && p.sent && !p.isDone() && p.waiter != null && p.waiter != Thread.currentThread()) {
                java.util.concurrent.locks.LockSupport.unpark(p.waiter);
                return;
            }
        }
    }

    /** A call's reply, with the thread that waits for it (woken when it completes). */
    private static final class Pending extends CompletableFuture<Response> {
        final Thread waiter;
        /** Set once the request is posted: from then on the caller waits in {@link #await}. */
        volatile boolean sent;

        Pending(Thread waiter) {
            this.waiter = waiter;
        }

        void finish(Response r, RpcException e) {
            if (e == null ? complete(r) : completeExceptionally(e)) {
                if (waiter != null && waiter != Thread.currentThread()) { // the reader's own call: it is awake
                    java.util.concurrent.locks.LockSupport.unpark(waiter);
                }
            } else if (r != null) {
                r.close();
            }
        }
    }

    /**
     * {@link #call}, returning at once: a virtual thread of its own posts the request (copied from
     * {@code request} there, so keep it unchanged until the future completes) and waits for the reply.
     *
     * @param request the request's bytes, at most {@link #maxRequestSize()}
     * @param timeout the longest to wait for credit to send and then for the reply
     * @return the reply's future; it fails with {@link RpcException}
     */
    public CompletableFuture<Response> callAsync(MemorySegment request, Duration timeout) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(timeout, "timeout");
        CompletableFuture<Response> f = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> { // a virtual thread waits (and reads in its turn) for it
            try {
                f.complete(call(request, timeout));
            } catch (RuntimeException | Error e) {
                f.completeExceptionally(e);
            }
        });
        return f;
    }

    private RpcException timedOut(long id, Duration timeout) {
        return new RpcException(RpcException.Kind.TIMEOUT, "call " + id + " on " + channel + ": no reply within " + timeout, null);
    }

    private record Call(long id, Pending reply) {
    }

    /** Registers and sends one request. */
    private Call send(MemorySegment request, Duration timeout) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(timeout, "timeout");
        if (request.byteSize() > maxRequestSize()) {
            throw new IllegalArgumentException("a request of " + request.byteSize() + " bytes is larger than the "
                    + maxRequestSize() + " that " + channel + " carries (the server's largest message less the " + HEADER + "-byte header)");
        }
        long id = ids.incrementAndGet();
        Pending reply = new Pending(Thread.currentThread());
        pending.put(id, reply);
        RpcException end = ended;
        if (end != null) {
            pending.remove(id);
            throw end;
        }
        try {
            if (request.byteSize() > maxPayloadSize()) {
                sendLarge(id, request, timeout);
                reply.sent = true;
                return new Call(id, reply);
            }
            MessageChannel.Outgoing out = channel.claim(timeout);
            if (out == null) {
                pending.remove(id);
                throw noCredit(id, timeout);
            }
            MemorySegment slot = out.segment();
            slot.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, id);
            slot.set(ValueLayout.JAVA_INT_UNALIGNED, 8, OK);
            slot.asSlice(HEADER, request.byteSize()).copyFrom(request);
            out.commit(HEADER + (int) request.byteSize());
            reply.sent = true;
        } catch (ChannelException e) {
            pending.remove(id);
            throw closed(e);
        }
        return new Call(id, reply);
    }

    /** A request larger than a slot: header and bytes sent as one message, by the channel's rendezvous. */
    private void sendLarge(long id, MemorySegment request, Duration timeout) {
        boolean sent;
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment message = arena.allocate(HEADER + request.byteSize());
            message.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, id);
            message.set(ValueLayout.JAVA_INT_UNALIGNED, 8, OK);
            message.asSlice(HEADER).copyFrom(request);
            sent = channel.send(message, timeout);
        }
        if (!sent) {
            pending.remove(id);
            throw noCredit(id, timeout);
        }
    }

    private RpcException noCredit(long id, Duration timeout) {
        return new RpcException(RpcException.Kind.TIMEOUT, "call " + id + " on " + channel
                + ": no credit to send within " + timeout + " (the server is not keeping up)", null);
    }

    private RpcException closed(ChannelException e) {
        return new RpcException(RpcException.Kind.CLOSED, e.getMessage(), e);
    }

    /**
     * Reads the channel for at most {@code nanos}, and hands a reply to its call; returns whether
     * that call was another thread's.
     */
    private boolean readOnce(long nanos) {
        MessageChannel.Received r;
        try {
            r = channel.receive(Duration.ofNanos(nanos));
        } catch (ChannelException e) {
            end(closed(e));
            return false;
        }
        if (r == null) {
            return false;
        }
        MemorySegment m = r.segment();
        if (m.byteSize() < HEADER) {
            r.close();
            end(new RpcException(RpcException.Kind.CLOSED, channel + ": a reply of " + m.byteSize()
                    + " bytes, shorter than the header: the peer is not an RpcServer", null));
            channel.close();
            return false;
        }
        long id = m.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
        int status = m.get(ValueLayout.JAVA_INT_UNALIGNED, 8);
        CompletableFuture<Response> f = pending.remove(id);
        if (!(f instanceof Pending reply)) {
            r.close(); // a call that timed out
            return false;
        }
        if (status == OK) {
            reply.finish(new Response(r), null);
        } else {
            String message = new String(m.asSlice(HEADER).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
            r.close();
            reply.finish(null, new RpcException(RpcException.Kind.REMOTE, "call " + id + " on " + channel
                    + " failed on the server: " + message, null));
        }
        return reply.waiter != Thread.currentThread();
    }

    /** Fails every pending call and every later one with {@code e}. */
    private void end(RpcException e) {
        ended = e;
        for (Long id : pending.keySet()) {
            CompletableFuture<Response> f = pending.remove(id);
            if (f instanceof Pending p) {
                p.finish(null, e);
            }
        }
    }

    /** Closes the channel: pending calls fail with {@link RpcException.Kind#CLOSED}. */
    @Override
    public void close() {
        try {
            channel.close();
        } finally {
            end(new RpcException(RpcException.Kind.CLOSED, channel + " is closed", null));
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
