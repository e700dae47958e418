package io.github.panamaverbs.cm;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A listening connection ID on its own event channel: the server side of {@link Connection}.
 * {@link #accept(Connection.Config, Duration)} takes the next connection request.
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
     * @throws io.github.panamaverbs.verbs.VerbsException EADDRINUSE if the port is taken, or no device has that address
     */
    public static Listener bind(InetSocketAddress local, int backlog) {
        Objects.requireNonNull(local, "local");
        EventChannel channel = EventChannel.create();
        CmId id = null;
        try {
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
     * @throws ConnectionException if no request came within {@code timeout}, or the connection failed
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

    /** The listening ID, for the event API. */
    public CmId id() {
        return id;
    }

    /** The address and port it listens on. */
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
