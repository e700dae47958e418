package io.github.panamaverbs.cm;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A listening connection ID on its own event channel: the server side of {@link Connection}.
 * {@link #accept(Connection.Config, Duration)} takes the next connection request.
 *
 * <pre>{@code
 * try (Listener listener = Listener.bind(new InetSocketAddress(7471), 8);
 *      Connection c = listener.accept(new Connection.Config(), Duration.ofSeconds(10))) {
 *     ...
 * }
 * }</pre>
 *
 * <p>The connections it accepts share its event channel: close them before it.
 */
public final class Listener implements AutoCloseable {
    private final EventChannel channel;
    private final CmId id;
    /** Who still uses the channel: the listener while it listens, and each connection accepted from it. */
    private final AtomicInteger channelUsers = new AtomicInteger(1);

    private Listener(EventChannel channel, CmId id) {
        this.channel = channel;
        this.id = id;
    }

    /**
     * Binds to {@code local} (address 0.0.0.0: every RDMA device; port 0: any) and listens.
     *
     * @param local   the local address and port
     * @param backlog the most connection requests waiting to be accepted
     * @return the listener; close it after the connections it accepted
     * @throws IllegalArgumentException                   if {@code local} is unresolved
     * @throws io.github.panamaverbs.verbs.VerbsException EADDRINUSE if the port is taken, or no device has that address
     */
    public static Listener bind(InetSocketAddress local, int backlog) {
        Objects.requireNonNull(local, "local");
        EventChannel channel = EventChannel.create();
        CmId id = null;
        try {
            channel.watch(); // the connections' channel: a DISCONNECTED flushes a queue pair even if nobody reads events
            id = channel.createId(PortSpace.TCP);
            id.bind(local);
            id.listen(backlog);
            return new Listener(channel, id);
        } catch (RuntimeException | Error e) {
            if (id != null) {
                id.close();
            }
            channel.close();
            throw e;
        }
    }

    /**
     * Waits for the next connection request and accepts it: creates its protection domain,
     * completion queue and queue pair, runs the config's hook, accepts, and waits until it is
     * established.
     *
     * @param config  the queue pair's sizes, the parameters offered and the hook run before accepting
     * @param timeout how long to wait for the request, and then again for the connection to be established
     * @return the established connection; close it before this listener
     * @throws ConnectionException                        if no request came within {@code timeout}, or the
     *                                                    connection failed
     * @throws IllegalStateException                      if the listener is closed
     * @throws io.github.panamaverbs.verbs.VerbsException if a verb fails while the connection is set up
     */
    public Connection accept(Connection.Config config, Duration timeout) {
        Objects.requireNonNull(config, "config");
        CmEvent request = id.awaitEvent(CmEventType.CONNECT_REQUEST, timeout);
        channelUsers.incrementAndGet();
        Runnable release = new Runnable() {
            private final AtomicBoolean done = new AtomicBoolean();

            @Override
            public void run() {
                if (done.compareAndSet(false, true)) {
                    releaseChannel();
                }
            }
        };
        try {
            return Connection.accept(request, config, timeout, release);
        } catch (RuntimeException | Error e) {
            try {
                release.run(); // (once: a failed accept has closed the connection, which may have run it)
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    private void releaseChannel() {
        if (channelUsers.decrementAndGet() == 0) {
            channel.close();
        }
    }

    /** {@return the listening ID, for the event API} */
    public CmId id() {
        return id;
    }

    /**
     * The address and port it listens on (the port chosen when it was bound to port 0).
     *
     * @return the local address
     * @throws IllegalStateException if the listener is closed
     */
    public InetSocketAddress localAddress() {
        return id.localAddress();
    }

    /**
     * Stops listening: requests not yet accepted are rejected. Connections accepted from it stay
     * open and usable; they share its event channel, which closes with the last of them.
     *
     * @throws IllegalStateException if already closed
     */
    @Override
    public void close() {
        id.close();
        releaseChannel();
    }

    @Override
    public String toString() {
        return "Listener[" + id + "]";
    }
}
