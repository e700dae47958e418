package io.github.panamaverbs.cm;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Objects;

/**
 * A listening connection ID on its own event channel: the server side of {@link Connection}.
 * {@link #accept(Connection.Config, Duration)} takes the next connection request.
 */
public final class Listener implements AutoCloseable {
    private final EventChannel channel;
    private final CmId id;

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
        return Connection.accept(request, config, timeout);
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
     * open and must be closed before it (they share its channel).
     */
    @Override
    public void close() {
        id.close();
        channel.close();
    }

    @Override
    public String toString() {
        return "Listener[" + id + "]";
    }
}
