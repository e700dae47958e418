package io.github.panamaverbs.cm;

import io.github.panamaverbs.verbs.CompletionQueue;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.ProtectionDomain;
import io.github.panamaverbs.verbs.QpInitAttributes;
import io.github.panamaverbs.verbs.QpType;
import io.github.panamaverbs.verbs.QueuePair;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A reliable connection made in one call over the event API: its ID, a protection domain and a
 * completion queue on the ID's device, and the connected RC {@link QueuePair}.
 *
 * <pre>{@code
 * // client
 * try (Connection c = Connection.connect(new InetSocketAddress("10.0.0.1", 7471), new Connection.Config(), timeout)) {
 *     MemoryRegion mr = c.protectionDomain().allocateAndRegister(4096);
 *     c.queuePair().postSend(new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(mr, 0, 16));
 * }
 * // server
 * try (Listener l = Listener.bind(new InetSocketAddress(7471), 8);
 *      Connection c = l.accept(new Connection.Config(), timeout)) { ... }
 * }</pre>
 *
 * <p>Receives that must be in place before the peer can send (iWARP has no receiver-not-ready
 * retry: a send that finds no receive breaks the connection) are posted in
 * {@link Config#beforeConnect(Consumer)}, which runs when the queue pair exists and before the
 * connection is requested or accepted; memory registered there is best handed to the connection
 * with {@link #own}, so that it is closed with it (first), also when connecting fails.
 *
 * <p>The queue pair, completion queue and protection domain are ordinary verbs objects: post, poll
 * and register as with any others, from any thread, and close the memory regions that the
 * connection does not own before it.
 *
 * <p><b>A peer that goes.</b> The connection's events are read by the library's event loop as they
 * come, also while no thread waits for one: when the peer disconnects (or its process dies), the
 * DISCONNECTED event moves the queue pair to ERR at once, so that every outstanding request
 * completes with {@code WR_FLUSH_ERR}, and a thread that only polls sees it (in milliseconds on
 * Soft-RoCE and SoftiWARP). The event stays for {@link #awaitDisconnect} and {@link CmId#nextEvent}.
 */
public final class Connection implements AutoCloseable {

    /**
     * The queue pair's sizes, the connection parameters and the hook that runs before connecting.
     * The sizes are checked when the queue pair is created: a negative one makes {@code connect} or
     * {@code accept} throw {@link IllegalArgumentException}. Mutable and not thread-safe.
     */
    public static final class Config {
        int maxSendWr = 16;
        int maxRecvWr = 16;
        int maxSendSge = 1;
        int maxRecvSge = 1;
        int maxInlineData;
        int cqEntries;
        ConnectionParameters parameters = new ConnectionParameters();
        Consumer<Connection> beforeConnect = c -> { };
        Function<Context, ProtectionDomain> protectionDomain;
        Function<Context, CompletionQueue> completionQueue;

        /** Defaults: 16 sends and 16 receives of one SGE each, no inline data, a CQ for all of them, librdmacm's parameters. */
        public Config() {
        }

        /**
         * {@code cap.max_send_wr}: the depth of the send queue.
         *
         * @param n the number of work requests
         * @return this config
         */
        public Config maxSendWr(int n) {
            this.maxSendWr = n;
            return this;
        }

        /**
         * {@code cap.max_recv_wr}: the depth of the receive queue.
         *
         * @param n the number of work requests
         * @return this config
         */
        public Config maxRecvWr(int n) {
            this.maxRecvWr = n;
            return this;
        }

        /**
         * {@code cap.max_send_sge} and {@code cap.max_recv_sge}.
         *
         * @param send the most scatter/gather entries per send
         * @param recv the most scatter/gather entries per receive
         * @return this config
         */
        public Config maxSge(int send, int recv) {
            this.maxSendSge = send;
            this.maxRecvSge = recv;
            return this;
        }

        /**
         * {@code cap.max_inline_data}.
         *
         * @param n the most bytes a send may carry inline
         * @return this config
         */
        public Config maxInlineData(int n) {
            this.maxInlineData = n;
            return this;
        }

        /**
         * Entries of the completion queue.
         *
         * @param n the minimum number of completions it holds; 0 or less for the default, sends plus receives
         * @return this config
         */
        public Config completionQueueEntries(int n) {
            this.cqEntries = n;
            return this;
        }

        /**
         * The caller's protection domain for the connection, instead of one of its own: memory
         * registered once in it (one rkey) serves every connection on that device. The function is
         * given the device context that the connection's ID is bound to (librdmacm's, the same object
         * for every connection on a device), once the address is resolved (client) or the request
         * has come (server), and returns a protection domain of that context, typically one per
         * context kept in a map ({@code pds.computeIfAbsent(ctx, Context::allocateProtectionDomain)}).
         * The connection does not close it.
         *
         * @param pd gives the protection domain for a context
         * @return this config
         */
        public Config protectionDomain(Function<Context, ProtectionDomain> pd) {
            this.protectionDomain = Objects.requireNonNull(pd, "pd");
            return this;
        }

        /**
         * The caller's completion queue for the connection's sends and receives, instead of one of
         * its own: several connections may share one, and one made with a
         * {@link io.github.panamaverbs.verbs.CompletionChannel} can be waited on
         * ({@link CompletionQueue#await}). Given the context as for
         * {@link #protectionDomain(Function)}; the queue must be of that context and hold the
         * completions of every queue pair that shares it. The connection does not close it.
         *
         * @param cq gives the completion queue for a context
         * @return this config
         */
        public Config completionQueue(Function<Context, CompletionQueue> cq) {
            this.completionQueue = Objects.requireNonNull(cq, "cq");
            return this;
        }

        /**
         * What is offered to the peer, private data included.
         *
         * @param p the connection parameters
         * @return this config
         */
        public Config parameters(ConnectionParameters p) {
            this.parameters = Objects.requireNonNull(p, "parameters");
            return this;
        }

        /**
         * Runs once the queue pair exists, before connecting or accepting: post the first receives
         * here, answer with private data of the connection's own ({@link Connection#privateData(byte[])},
         * e.g. a region's address and rkey) and attach its state ({@link Connection#attach}). What it
         * throws ends the attempt (the connection is closed) and reaches the caller.
         *
         * @param hook given the connection, not yet connected
         * @return this config
         */
        public Config beforeConnect(Consumer<Connection> hook) {
            this.beforeConnect = Objects.requireNonNull(hook, "hook");
            return this;
        }
    }

    /** Closes or releases the event channel after the ID (null: the caller's channel). */
    private final Runnable releaseChannel;
    private final CmId id;
    private final ProtectionDomain pd;
    private final CompletionQueue cq;
    /** Whether {@link #pd} and {@link #cq} are this connection's own, closed with it (else the caller's). */
    private final boolean ownPd;
    private final boolean ownCq;
    private final QueuePair qp;
    /** Set by the hook: sent instead of the config's private data. */
    private volatile byte[] privateData;
    private volatile Object attachment;
    /** What the caller handed over with {@link #own}: closed first. */
    private final List<AutoCloseable> owned = new ArrayList<>();
    private byte[] peerPrivateData = new byte[0];
    private volatile boolean connected;

    private Connection(Runnable releaseChannel, CmId id, Config config) {
        this.releaseChannel = releaseChannel;
        this.id = id;
        Context ctx = id.context();
        List<AutoCloseable> made = new ArrayList<>();
        try {
            this.ownPd = config.protectionDomain == null;
            this.ownCq = config.completionQueue == null;
            this.pd = ownPd ? add(made, ctx.allocateProtectionDomain()) : callers(config.protectionDomain, ctx, "protection domain");
            this.cq = ownCq ? add(made, ctx.createCompletionQueue(config.cqEntries > 0 ? config.cqEntries
                    : Math.max(1, config.maxSendWr + config.maxRecvWr)))
                    : callers(config.completionQueue, ctx, "completion queue");
            if (!ownCq && cq.context() != ctx) {
                throw new IllegalArgumentException("the config's completion queue " + cq + " belongs to " + cq.context()
                        + ", not to " + ctx + " that the connection's ID is bound to");
            }
            this.qp = add(made, id.createQueuePair(pd, new QpInitAttributes(QpType.RC, cq, cq).maxSendWr(config.maxSendWr)
                    .maxRecvWr(config.maxRecvWr).maxSendSge(config.maxSendSge).maxRecvSge(config.maxRecvSge)
                    .maxInlineData(config.maxInlineData)));
        } catch (RuntimeException | Error e) {
            closeAll(made, e);
            throw e;
        }
    }

    /** What the config's function gives for {@code ctx}: never null. */
    private static <T> T callers(Function<Context, T> f, Context ctx, String what) {
        T t = f.apply(ctx);
        if (t == null) {
            throw new NullPointerException("the config's " + what + " function returned null for " + ctx);
        }
        return t;
    }

    private static <T extends AutoCloseable> T add(List<AutoCloseable> made, T r) {
        made.add(r);
        return r;
    }

    private static void closeAll(List<AutoCloseable> made, Throwable cause) {
        for (int i = made.size() - 1; i >= 0; i--) {
            try {
                made.get(i).close();
            } catch (Exception suppressed) {
                cause.addSuppressed(suppressed);
            }
        }
    }

    /**
     * Connects to {@code server}: resolves its address and route, creates the queue pair, runs the
     * {@link Config#beforeConnect} hook, connects and waits until the connection is established,
     * each of the three waits (address, route, established) within {@code timeout}. Nothing is left
     * open when it throws.
     *
     * @param server  the server's address and port
     * @param config  the queue pair's sizes, the parameters offered and the hook
     * @param timeout the longest each step may take; positive
     * @return the established connection; close it
     * @throws IllegalArgumentException                   if {@code timeout} is not positive, {@code server}
     *                                                    is unresolved, or a size in {@code config} is negative
     * @throws ConnectionException                        if the peer rejects (nobody listening, or its
     *                                                    application said no), cannot be reached or
     *                                                    resolved, or nothing happens in time
     * @throws io.github.panamaverbs.verbs.VerbsException if a call fails at once, e.g. ENODEV when the host
     *                                                    has no RDMA device
     */
    public static Connection connect(InetSocketAddress server, Config config, Duration timeout) {
        return connect(null, server, config, timeout);
    }

    /**
     * {@link #connect(InetSocketAddress, Config, Duration)} from the local address {@code source}
     * (which selects the device; null for any).
     *
     * @param source  the local address, or null for any
     * @param server  the server's address and port
     * @param config  the queue pair's sizes, the parameters offered and the hook
     * @param timeout the longest each step may take; positive
     * @return the established connection; close it
     * @throws IllegalArgumentException                   if {@code timeout} is not positive, an address is
     *                                                    unresolved, or a size in {@code config} is negative
     * @throws ConnectionException                        if the peer rejects, cannot be reached or resolved,
     *                                                    or nothing happens in time
     * @throws io.github.panamaverbs.verbs.VerbsException if a call fails at once
     */
    public static Connection connect(InetSocketAddress source, InetSocketAddress server, Config config, Duration timeout) {
        Objects.requireNonNull(server, "server");
        Objects.requireNonNull(config, "config");
        EventChannel channel = EventChannel.create();
        CmId id = null;
        Connection c = null;
        try {
            channel.watch(); // its own channel: a DISCONNECTED flushes the queue pair even if nobody reads events
            id = channel.createId(PortSpace.TCP);
            id.resolveAddress(source, server, timeout);
            id.resolveRoute(timeout);
            c = new Connection(channel::close, id, config);
            config.beforeConnect.accept(c);
            id.connect(c.parameters(config));
            CmEvent established = id.awaitEvent(CmEventType.ESTABLISHED, timeout);
            c.peerPrivateData = established.privateData();
            c.connected = true;
            return c;
        } catch (RuntimeException | Error e) {
            if (c != null) {
                c.closeQuietly(e);
            } else {
                if (id != null) {
                    try {
                        id.close();
                    } catch (RuntimeException suppressed) {
                        e.addSuppressed(suppressed);
                    }
                }
                channel.close();
            }
            throw e;
        }
    }

    /**
     * Accepts the connection that {@code request} (a CONNECT_REQUEST event, from a listening
     * {@link CmId} or {@link Listener}) asks for: creates its protection domain, completion queue and
     * queue pair, runs the hook, accepts and waits until it is established. The new connection shares
     * the listening ID's event channel, which must stay open until the connection is closed (a
     * {@link Listener} sees to that itself).
     *
     * @param request the CONNECT_REQUEST event
     * @param config  the queue pair's sizes, the parameters offered and the hook
     * @param timeout the longest to wait until the connection is established
     * @return the established connection
     * @throws IllegalArgumentException                   if {@code request} is not a CONNECT_REQUEST, or a
     *                                                    size in {@code config} is negative
     * @throws ConnectionException                        if it is not established within {@code timeout};
     *                                                    the request is then rejected or the connection closed
     * @throws IllegalStateException                      if the request's ID is closed or already has a queue pair
     * @throws io.github.panamaverbs.verbs.VerbsException if a verb fails while the connection is set up
     */
    public static Connection accept(CmEvent request, Config config, Duration timeout) {
        return accept(request, config, timeout, null);
    }

    /** {@link #accept(CmEvent, Config, Duration)}; {@code releaseChannel} runs once the connection is closed. */
    static Connection accept(CmEvent request, Config config, Duration timeout, Runnable releaseChannel) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(config, "config");
        if (request.type() != CmEventType.CONNECT_REQUEST) {
            throw new IllegalArgumentException("not a connection request: " + request);
        }
        Connection c = null;
        try {
            c = new Connection(releaseChannel, request.id(), config);
            c.peerPrivateData = request.privateData();
            config.beforeConnect.accept(c);
            request.id().accept(c.parameters(config));
            request.id().awaitEvent(CmEventType.ESTABLISHED, timeout);
            c.connected = true;
            return c;
        } catch (RuntimeException | Error e) {
            if (c != null) {
                c.closeQuietly(e);
            } else {
                try {
                    request.id().reject(new byte[0]);
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
                request.id().close();
            }
            throw e;
        }
    }

    /** The config's parameters, with the hook's private data if it gave some. */
    private ConnectionParameters parameters(Config config) {
        byte[] data = privateData;
        return data == null ? config.parameters : config.parameters.copy().privateData(data);
    }

    private void closeQuietly(Throwable cause) {
        try {
            close();
        } catch (RuntimeException suppressed) {
            cause.addSuppressed(suppressed);
        }
    }

    /**
     * Hands {@code resource} (typically a memory region registered in {@link #protectionDomain()}
     * from the {@link Config#beforeConnect} hook) to this connection: it is closed with the
     * connection, before the queue pair and the protection domain, also when connecting fails.
     * Resources handed over later are closed first.
     *
     * @param <T>      the resource's type
     * @param resource what to close with the connection
     * @return {@code resource}
     */
    public synchronized <T extends AutoCloseable> T own(T resource) {
        owned.add(Objects.requireNonNull(resource, "resource"));
        return resource;
    }

    /**
     * From the {@link Config#beforeConnect} hook: the private data to send with this connection's
     * request (client) or accept (server), instead of the config's; the peer reads it with
     * {@link #peerPrivateData()}. At most 56 bytes for a request and 196 for an accept on InfiniBand
     * and RoCE (checked when it is sent).
     *
     * @param data the bytes, copied
     * @return this connection
     * @throws IllegalStateException if the connection is established already (the hook has run)
     */
    public Connection privateData(byte[] data) {
        Objects.requireNonNull(data, "data");
        if (connected) {
            throw new IllegalStateException(this + " is established: private data is sent only while connecting "
                    + "(set it in the config's beforeConnect hook)");
        }
        privateData = data.clone();
        return this;
    }

    /**
     * Attaches the application's state to this connection (as {@code SelectionKey.attach} does),
     * e.g. from the {@link Config#beforeConnect} hook, where the state is made.
     *
     * @param state the object, or null for none
     * @return the object attached before, or null
     */
    public Object attach(Object state) {
        Object before = attachment;
        attachment = state;
        return before;
    }

    /** {@return the object {@link #attach} attached, or null} */
    public Object attachment() {
        return attachment;
    }

    /**
     * {@return the peer's address and port} (the client's ephemeral port on the server side)
     *
     * @throws IllegalStateException if the connection is closed
     */
    public InetSocketAddress peerAddress() {
        return id.remoteAddress();
    }

    /** {@return the connected RC queue pair} */
    public QueuePair queuePair() {
        return qp;
    }

    /**
     * {@return the protection domain of the queue pair: register the connection's buffers in it}
     * The caller's, when the config gave one.
     */
    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /** {@return the completion queue of both the sends and the receives} The caller's, when the config gave one. */
    public CompletionQueue completionQueue() {
        return cq;
    }

    /** {@return the connection ID} */
    public CmId id() {
        return id;
    }

    /**
     * {@return what the peer sent with its request (server side) or its accept (client side), a copy}
     * See {@link CmEvent#privateData()}.
     */
    public byte[] peerPrivateData() {
        return peerPrivateData.clone();
    }

    /**
     * Waits until the peer disconnects (or is gone), at most {@code timeout}. Other events of the
     * connection's ID that arrive meanwhile are dropped.
     *
     * @param timeout the longest to wait
     * @return true if DISCONNECTED arrived
     * @throws IllegalStateException                      if the event channel is closed
     * @throws io.github.panamaverbs.verbs.VerbsException if reading an event fails
     */
    public boolean awaitDisconnect(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            var e = id.nextEvent(Duration.ofNanos(left));
            if (e.isPresent() && e.get().type() == CmEventType.DISCONNECTED) {
                connected = false;
                return true;
            }
        }
    }

    /**
     * Disconnects (if still connected) and closes the queue pair, completion queue, protection
     * domain and ID (not the protection domain or completion queue the config gave) (and the event channel when it is the connection's own, or when the
     * {@link Listener} it came from was closed before it). Memory regions registered in the
     * protection domain must be closed first, or handed to {@link #own}.
     *
     * @throws IllegalStateException if something could not be closed (it carries each failure as a
     *                               suppressed exception), e.g. a memory region of the protection domain
     *                               is still open, or the connection is closed already
     */
    @Override
    public void close() {
        if (connected) {
            connected = false;
            try {
                id.disconnect();
            } catch (RuntimeException ignored) {
                // the peer went first: fine
            }
        }
        List<AutoCloseable> all = new ArrayList<>(List.of(id));
        if (ownPd) {
            all.add(pd);
        }
        if (ownCq) {
            all.add(cq);
        }
        all.add(qp);
        synchronized (this) {
            all.addAll(owned);
            owned.clear();
        }
        RuntimeException first = new IllegalStateException("closing " + this);
        closeAll(all, first);
        if (releaseChannel != null && first.getSuppressed().length == 0) {
            try {
                releaseChannel.run();
            } catch (RuntimeException e) {
                first.addSuppressed(e);
            }
        }
        if (first.getSuppressed().length > 0) {
            throw first;
        }
    }

    @Override
    public String toString() {
        return "Connection[" + id + ", " + qp + "]";
    }
}
