package io.github.panamaverbs.channel;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The client of an {@link RpcServer}: calls over one {@link MessageChannel}, any number at a time
 * from any number of (virtual) threads, multiplexed by request id. A call blocks its thread until
 * the reply, its timeout, or the end of the channel; {@link #callAsync} returns a future instead.
 * Replies are read by the callers themselves, one at a time (leader and followers): the caller that
 * reads the channel hands each reply to its call and goes on until its own has come, then wakes
 * another waiting caller to read on; the others park until their reply or their turn comes. A lone
 * caller thus posts, polls and takes its reply on its own thread, with no hand-over.
 *
 * <p>A request and a reply each travel as one message of the channel, with a 4-byte header (the
 * request's id, and the reply's status in its lowest bit), in a slot up to {@link #maxPayloadSize()} bytes. A larger
 * request, up to {@link #maxRequestSize()}, is written once into registered memory that the server
 * reads by the channel's rendezvous (an RDMA READ), and so is a larger reply of a server that allows
 * them ({@link RpcServer#start(InetSocketAddress, MessageChannel.Config, int, RpcServer.Handler)}),
 * with nothing different for the caller or the handler. A {@link Response} is a view of the
 * channel's receive ring (or of the memory a larger reply was read into): close it when read, as it
 * holds one of the peer's credits until then.
 */
public final class RpcClient implements AutoCloseable {
    /**
     * The bytes of the header each request and reply carry in its channel message (one int: the
     * request's id, shifted left, and the reply's status in the lowest bit): a channel of
     * {@link MessageChannel.Config#messageSize(int)} bytes carries requests and replies of up to
     * that many bytes less these.
     */
    public static final int HEADER = 4;
    static final int OK = 0;
    static final int FAILED = 1;
    private static final long READ_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    /** The calls sent and not answered, by id; a power of two (ids that collide go to {@link #overflow}). */
    private static final int TABLE = 256;

    private final MessageChannel channel;
    private final AtomicReferenceArray<Call> calls = new AtomicReferenceArray<>(TABLE);
    private final Map<Integer, Call> overflow = new ConcurrentHashMap<>();
    private final AtomicInteger ids = new AtomicInteger();
    /** The callers waiting for their reply (in {@link #await}), the one reading the channel among them. */
    private final AtomicInteger awaiting = new AtomicInteger();
    /** Held by the caller that reads the channel. */
    private final ReentrantLock reading = new ReentrantLock();
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

    /**
     * {@return the largest request or reply that travels in a slot of the ring}: larger ones go by
     * the channel's rendezvous, up to {@link #maxRequestSize()} for a request and this side's
     * {@link MessageChannel.Config#largestMessage(int)} less the header for a reply
     */
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
        Objects.requireNonNull(request, "request");
        long deadline = System.nanoTime() + Objects.requireNonNull(timeout, "timeout").toNanos();
        Call call;
        try {
            call = send(request, deadline, timeout);
        } catch (RpcException e) {
            throw failed(e);
        }
        awaiting.incrementAndGet();
        try {
            return await(call, deadline, timeout);
        } catch (RpcException e) {
            forget(call);
            if (!call.settle(e) && call.outcome instanceof Response late) {
                late.close(); // the reply came as the wait gave up: its slot goes back
            }
            if (awaiting.get() > 1) {
                promote(); // this caller may have been woken to read: another reads instead
            }
            throw failed(e);
        } finally {
            awaiting.decrementAndGet();
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
            Object outcome = call.outcome;
            if (outcome != null) {
                return result(outcome);
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw timedOut(call.id, timeout);
            }
            if (reading.tryLock()) {
                try {
                    for (long now = System.nanoTime(); call.outcome == null && deadline - now > 0; ) {
                        if (readOnce(deadline - now > READ_SLICE_NANOS ? now + READ_SLICE_NANOS : deadline)
                                && Thread.currentThread().isVirtual()) {
                            Thread.yield(); // the caller just woken may run (and call again) on this carrier
                        }
                        if (call.outcome == null) {
                            now = System.nanoTime();
                        }
                    }
                } finally {
                    reading.unlock();
                    if (awaiting.get() > 1) { // read after the unlock: a caller counted before it failed to lock is seen
                        promote();
                    }
                }
            } else {
                LockSupport.parkNanos(this, left); // until the reply, or our turn to read
                if (Thread.interrupted()) {
                    Thread.currentThread().interrupt();
                    throw new RpcException(RpcException.Kind.CLOSED, "call " + call.id + " on " + channel + " interrupted", null);
                }
            }
        }
    }

    private static Response result(Object outcome) {
        if (outcome instanceof RpcException e) {
            throw e;
        }
        return (Response) outcome;
    }

    /**
     * Wakes one caller still waiting, to read the channel in turn: one whose request is sent, so
     * that it is, or is about to be, parked in {@link #await} (a caller still waiting for credit to
     * send would spend the turn there, while the credit it waits for comes only as replies are read).
     */
    private void promote() {
        Thread me = Thread.currentThread();
        for (int i = 0; i < TABLE; i++) {
            if (wake(calls.get(i), me)) {
                return;
            }
        }
        for (Call c : overflow.values()) {
            if (wake(c, me)) {
                return;
            }
        }
    }

    private static boolean wake(Call c, Thread me) {
        if (c != null && c.outcome == null && c.waiter != me) {
            LockSupport.unpark(c.waiter);
            return true;
        }
        return false;
    }

    /** A call sent: its id, the thread that waits for it, and its reply or failure once settled. */
    private static final class Call {
        final int id;
        final Thread waiter = Thread.currentThread();
        /** The {@link Response}, or the {@link RpcException}; null until settled. */
        volatile Object outcome;
        private static final VarHandle OUTCOME;

        static {
            try {
                OUTCOME = MethodHandles.lookup().findVarHandle(Call.class, "outcome", Object.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        Call(int id) {
            this.id = id;
        }

        /** Settles the call with {@code outcome} unless it is settled already; returns whether it did. */
        boolean settle(Object result) {
            return OUTCOME.compareAndSet(this, null, result);
        }

        /** Settles it with a reply or failure from another thread than the caller's, and wakes the caller. */
        void finish(Object result) {
            if (settle(result)) {
                if (waiter != Thread.currentThread()) { // the reader's own call: it is awake
                    LockSupport.unpark(waiter);
                }
            } else if (result instanceof Response r) {
                r.close();
            }
        }
    }

    /** Makes {@code call} findable by its id, before its request is posted (the reply may come at once). */
    private void register(Call call) {
        if (!calls.compareAndSet(call.id & (TABLE - 1), null, call)) {
            overflow.put(call.id, call);
        }
    }

    /** Takes the call of reply {@code id}: null if it gave up waiting. */
    private Call take(int id) {
        int i = id & (TABLE - 1);
        Call c = calls.get(i);
        if (c != null && c.id == id && calls.compareAndSet(i, c, null)) {
            return c;
        }
        return overflow.isEmpty() ? null : overflow.remove(id);
    }

    /** No reply is looked for any more for {@code call}. */
    private void forget(Call call) {
        if (!calls.compareAndSet(call.id & (TABLE - 1), call, null)) {
            overflow.remove(call.id, call);
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

    private RpcException timedOut(int id, Duration timeout) {
        return new RpcException(RpcException.Kind.TIMEOUT, "call " + id + " on " + channel + ": no reply within " + timeout, null);
    }

    /** Sends one request, its call registered first. */
    private Call send(MemorySegment request, long deadline, Duration timeout) {
        long size = request.byteSize();
        if (size > maxRequestSize()) {
            throw new IllegalArgumentException("a request of " + size + " bytes is larger than the "
                    + maxRequestSize() + " that " + channel + " carries (the server's largest message less the " + HEADER + "-byte header)");
        }
        Call call = new Call(ids.incrementAndGet() & Integer.MAX_VALUE); // 31 bits: the header's int holds it shifted
        try {
            // in a slot, or, larger, in registered memory that the server reads by rendezvous: written once
            MessageChannel.Outgoing out = channel.claimUntil(HEADER + (int) size, deadline);
            if (out == null) {
                throw noCredit(call.id, timeout);
            }
            MemorySegment m = out.segment();
            m.set(ValueLayout.JAVA_INT_UNALIGNED, 0, call.id << 1 | OK);
            MemorySegment.copy(request, 0, m, HEADER, size);
            enter(call, out);
            out.commit(HEADER + (int) size);
        } catch (ChannelException e) {
            forget(call);
            throw closed(e);
        }
        return call;
    }

    /** Registers {@code call} unless the client has ended (then gives {@code out}'s room back and throws). */
    private void enter(Call call, MessageChannel.Outgoing out) {
        register(call);
        RpcException end = ended;
        if (end != null) {
            forget(call);
            out.close();
            throw end;
        }
    }

    private RpcException noCredit(int id, Duration timeout) {
        return new RpcException(RpcException.Kind.TIMEOUT, "call " + id + " on " + channel
                + ": no credit to send within " + timeout + " (the server is not keeping up)", null);
    }

    private RpcException closed(ChannelException e) {
        return new RpcException(RpcException.Kind.CLOSED, e.getMessage(), e);
    }

    /**
     * Reads the channel until {@code deadline} at most, and hands a reply to its call; returns
     * whether that call was another thread's.
     */
    private boolean readOnce(long deadline) {
        MessageChannel.Received r;
        try {
            r = channel.receiveUntil(deadline);
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
        int word = m.get(ValueLayout.JAVA_INT_UNALIGNED, 0);
        int id = word >>> 1;
        int status = word & 1;
        Call call = take(id);
        if (call == null) {
            r.close(); // a call that timed out
            return false;
        }
        if (status == OK) {
            call.finish(new Response(r));
        } else {
            String message = new String(m.asSlice(HEADER).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
            r.close();
            call.finish(new RpcException(RpcException.Kind.REMOTE, "call " + id + " on " + channel
                    + " failed on the server: " + message, null));
        }
        return call.waiter != Thread.currentThread();
    }

    /** Fails every pending call and every later one with {@code e}. */
    private void end(RpcException e) {
        ended = e;
        for (int i = 0; i < TABLE; i++) {
            Call c = calls.getAndSet(i, null);
            if (c != null) {
                c.finish(e);
            }
        }
        for (Integer id : overflow.keySet()) {
            Call c = overflow.remove(id);
            if (c != null) {
                c.finish(e);
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
