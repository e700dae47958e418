package io.github.panamaverbs.cm;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.rdma_cm_event;
import io.github.panamaverbs.bindings.rdma_conn_param;
import io.github.panamaverbs.bindings.rdma_event_channel;
import io.github.panamaverbs.bindings.rdma_ud_param;
import io.github.panamaverbs.access.VerbsAccess;
import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Lifetime;
import io.github.panamaverbs.internal.Jfr;
import io.github.panamaverbs.internal.Native;
import io.github.panamaverbs.internal.NativeLibraries;
import io.github.panamaverbs.verbs.QpState;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A connection-manager event channel ({@code struct rdma_event_channel}): the file descriptor on
 * which librdmacm reports what happens to the {@link CmId}s created on it. Events are read with a
 * timeout ({@link #nextEvent(Duration)}, or per ID with {@link CmId#nextEvent(Duration)}), copied
 * into a {@link CmEvent} and acknowledged by the API exactly once, before they are returned; an
 * event read for another ID than the one asked for waits in the channel until that ID asks.
 *
 * <p>Closing rule: the channel closes after every ID created on it.
 */
public final class EventChannel implements AutoCloseable {
    /** Made on first use, after {@link NativeLibraries#require()}: this class loads without rdma-core. */
    private static final class Handles {
        static final MethodHandle CREATE = Native.withErrno(
                Verbs.rdma_create_event_channel$address(), Verbs.rdma_create_event_channel$descriptor());
        static final MethodHandle DESTROY = Native.plain(
                Verbs.rdma_destroy_event_channel$address(), Verbs.rdma_destroy_event_channel$descriptor());
        static final MethodHandle GET_EVENT = Native.withErrno(
                Verbs.rdma_get_cm_event$address(), Verbs.rdma_get_cm_event$descriptor());
        static final MethodHandle ACK_EVENT = Native.withErrno(
                Verbs.rdma_ack_cm_event$address(), Verbs.rdma_ack_cm_event$descriptor());
    }
    private static final long CONN = rdma_cm_event.param$offset();
    /** How often a waiting thread looks for its event among those another thread read. */
    private static final long QUEUE_CHECK_NANOS = 20_000_000L;

    final Lifetime handle;
    private final int fd;
    /** The IDs of this channel by C address, so that events name the Java object. */
    private final Map<Long, CmId> ids = new ConcurrentHashMap<>();
    /** Events read but not yet taken by the thread that waits for them. */
    private final ArrayDeque<CmEvent> pending = new ArrayDeque<>();

    private EventChannel(MemorySegment channel) {
        Native.prepareWaits();
        this.handle = new Lifetime(this, channel, rdma_event_channel.sizeof(),
                address -> Native.call(c -> {
                    Handles.DESTROY.invokeExact(address);
                    return null;
                }));
        this.fd = rdma_event_channel.fd(handle.handle());
        Native.setNonBlocking(fd, "rdma_cm event channel");
    }

    /**
     * {@code rdma_create_event_channel}.
     *
     * @return the channel; close it after every ID created on it
     * @throws io.github.panamaverbs.verbs.VerbsException ENODEV when the host has no RDMA device, or if
     *                                                    rdma-core's libraries cannot be loaded
     */
    public static EventChannel create() {
        NativeLibraries.require();
        return new EventChannel(Native.create("rdma_create_event_channel", e -> e == Errno.ENODEV
                ? "no RDMA device: load rdma_rxe or siw, or run under scripts/with-rdma" : null,
                c -> (MemorySegment) Handles.CREATE.invokeExact(c.errno())));
    }

    /**
     * {@code rdma_create_id}: a new connection ID on this channel, not yet bound to a device.
     *
     * @param space {@link PortSpace#TCP} for a reliable connection, {@link PortSpace#UDP} for datagrams
     * @return the ID; close it before this channel
     * @throws IllegalStateException                      if the channel is closed
     * @throws io.github.panamaverbs.verbs.VerbsException if {@code rdma_create_id} fails
     */
    public CmId createId(PortSpace space) {
        return CmId.create(this, Objects.requireNonNull(space, "space"));
    }

    /**
     * {@return the file descriptor, for an event loop of the caller's own} It is non-blocking; read
     * the events with {@link #nextEvent(Duration)}.
     */
    public int fd() {
        return fd;
    }

    /** The C object; throws {@link IllegalStateException} once closed. */
    MemorySegment pointer() {
        return handle.handle();
    }

    void add(CmId id, long address) {
        ids.put(address, id);
    }

    void remove(CmId id, long address) {
        ids.remove(address, id);
        synchronized (pending) {
            pending.removeIf(e -> e.id() == id && e.type() != CmEventType.CONNECT_REQUEST);
        }
    }

    /** Whether a connect request for {@code listener} was read and waits to be taken. */
    boolean hasPendingRequest(CmId listener) {
        synchronized (pending) {
            return pending.stream().anyMatch(e -> e.listener() == listener);
        }
    }

    /** Connect requests read for {@code listener} and not taken: they go when it closes. */
    java.util.List<CmEvent> takeRequests(CmId listener) {
        java.util.List<CmEvent> taken = new java.util.ArrayList<>();
        synchronized (pending) {
            for (Iterator<CmEvent> it = pending.iterator(); it.hasNext(); ) {
                CmEvent e = it.next();
                if (e.listener() == listener) {
                    taken.add(e);
                    it.remove();
                }
            }
        }
        return taken;
    }

    /**
     * The next event of any ID of this channel, waiting at most {@code timeout}: read
     * ({@code rdma_get_cm_event}), copied and acknowledged.
     *
     * @param timeout the longest to wait; zero or negative to look once without waiting
     * @return the event, or empty when none came in time
     * @throws IllegalStateException                      if the channel is closed, also while waiting
     * @throws io.github.panamaverbs.verbs.VerbsException if reading or acknowledging an event fails
     */
    public Optional<CmEvent> nextEvent(Duration timeout) {
        return next(null, Native.deadline(Objects.requireNonNull(timeout, "timeout")));
    }

    /** Whether {@link #watch()} made the event loop read this channel's events. */
    private volatile boolean watched;
    /** What the event loop runs when a watched channel is readable. */
    private final Runnable readIfOpen = this::readIfOpen;

    private void readIfOpen() {
        if (!handle.isClosed()) {
            readAvailable();
        }
    }

    /**
     * Has the process's event loop read this channel's events as they come, also while no thread
     * waits for one: a DISCONNECTED then moves its connection's queue pair to ERR at once, so that a
     * thread that only polls sees its outstanding requests flushed. For the channels this package
     * owns ({@link Connection}'s and {@link Listener}'s): an application that reads a channel with
     * its own event loop ({@link #fd()}) needs its events to stay readable there.
     */
    void watch() {
        if (!watched) {
            watched = true;
            Native.watch(fd, readIfOpen);
        }
    }

    /** The next event for {@code id} (connect requests: for the listener), or any when null. */
    Optional<CmEvent> next(CmId id, long deadline) {
        while (true) {
            if (id != null && id.isClosed()) {
                throw new IllegalStateException(id + " is closed: it has no events to wait for");
            }
            CmEvent e = take(id);
            if (e != null) {
                return Optional.of(e);
            }
            // Short slices: another thread may read this ID's event into the queue meanwhile. The fd
            // is looked at least once, also with a timeout of zero.
            long now = System.nanoTime();
            long sliceEnd = now + Math.max(0, Math.min(deadline - now, QUEUE_CHECK_NANOS));
            if (Native.awaitReadable(fd, sliceEnd, id != null ? id.toString() : toString(),
                    () -> !handle.isClosed() && (id == null || !id.isClosed()))) {
                readAvailable();
            } else if (System.nanoTime() - deadline >= 0) {
                return Optional.ofNullable(take(id));
            }
        }
    }

    private CmEvent take(CmId id) {
        synchronized (pending) {
            for (Iterator<CmEvent> it = pending.iterator(); it.hasNext(); ) {
                CmEvent e = it.next();
                CmId owner = e.type() == CmEventType.CONNECT_REQUEST ? e.listener() : e.id();
                if (id == null || owner == id) {
                    it.remove();
                    return e;
                }
            }
            return null;
        }
    }

    /** Reads every event the channel has now (the fd is non-blocking), acknowledging each. */
    private void readAvailable() {
        MemorySegment ch = pointer();
        synchronized (this) {
            while (true) {
                CmEvent e = Native.call(c -> {
                    MemorySegment out = c.allocate(ValueLayout.ADDRESS);
                    int rc = (int) Handles.GET_EVENT.invokeExact(c.errno(), ch, out);
                    if (rc != 0) {
                        int errno = c.lastErrno();
                        if (errno == Errno.EAGAIN) {
                            return null;
                        }
                        throw Native.fail("rdma_get_cm_event", errno, Native.NO_HINT);
                    }
                    MemorySegment event = out.get(ValueLayout.ADDRESS, 0).reinterpret(rdma_cm_event.sizeof());
                    try {
                        return decode(event);
                    } finally {
                        Native.checkStatus("rdma_ack_cm_event", Native.NO_HINT, (int) Handles.ACK_EVENT.invokeExact(c.errno(), event), c);
                    }
                });
                if (e == null) {
                    return;
                }
                synchronized (pending) {
                    pending.add(e);
                }
            }
        }
    }

    /** Copies what the event says before it is acknowledged (which frees its private data). */
    private CmEvent decode(MemorySegment event) {
        CmEventType type = CmEventType.of(rdma_cm_event.event(event));
        int status = rdma_cm_event.status(event);
        long idAddress = rdma_cm_event.id(event).address();
        CmId listener = null;
        CmId id;
        if (type == CmEventType.CONNECT_REQUEST) {
            listener = ids.get(rdma_cm_event.listen_id(event).address());
            id = CmId.incoming(this, rdma_cm_event.id(event), listener);
        } else {
            id = ids.get(idAddress);
        }
        boolean datagram = id != null && id.portSpace() == PortSpace.UDP;
        MemorySegment param = event.asSlice(CONN, datagram ? rdma_ud_param.sizeof() : rdma_conn_param.sizeof());
        MemorySegment data = datagram ? rdma_ud_param.private_data(param) : rdma_conn_param.private_data(param);
        int length = Byte.toUnsignedInt(datagram ? rdma_ud_param.private_data_len(param) : rdma_conn_param.private_data_len(param));
        byte[] privateData = new byte[data.address() == 0 || type == CmEventType.MULTICAST_JOIN
                || type == CmEventType.MULTICAST_ERROR ? 0 : length];
        if (privateData.length > 0) { // (multicast events carry the join's context pointer there, not data)
            MemorySegment.copy(data.reinterpret(length), ValueLayout.JAVA_BYTE, 0, privateData, 0, length);
        }
        boolean hasAddress = datagram && (type == CmEventType.ESTABLISHED || type == CmEventType.MULTICAST_JOIN) && status == 0;
        CmEvent e = datagram
                ? new CmEvent(type, status, id, listener, privateData, 0, 0, rdma_ud_param.qp_num(param),
                        rdma_ud_param.qkey(param), hasAddress
                        ? VerbsAccess.get().addressVector(rdma_ud_param.ah_attr(param)) : null)
                : new CmEvent(type, status, id, listener, privateData,
                        Byte.toUnsignedInt(rdma_conn_param.responder_resources(param)),
                        Byte.toUnsignedInt(rdma_conn_param.initiator_depth(param)), rdma_conn_param.qp_num(param), 0, null);
        Jfr.CmEvent recorded = new Jfr.CmEvent();
        if (recorded.shouldCommit()) {
            recorded.type = type.name();
            recorded.status = status;
            recorded.portSpace = id == null ? null : id.portSpace().name();
            recorded.remoteQpNumber = e.remoteQpNumber();
            recorded.privateDataLength = privateData.length;
            recorded.commit();
        }
        if (id != null && id.queuePairOrNull() != null) {
            if (type == CmEventType.ESTABLISHED) {
                VerbsAccess.get().stateChanged(id.queuePairOrNull(), QpState.RTS);
            } else if (type == CmEventType.REJECTED || type == CmEventType.CONNECT_ERROR) {
                VerbsAccess.get().stateChanged(id.queuePairOrNull(), QpState.ERR); // librdmacm flushed it
            } else if (type == CmEventType.DISCONNECTED) {
                try {
                    // the connection is over: flush what is outstanding
                    VerbsAccess.get().connectionGone(id.queuePairOrNull());
                } catch (RuntimeException ignored) {
                    // closed meanwhile
                }
            }
        }
        return e;
    }

    /**
     * {@code rdma_destroy_event_channel}.
     *
     * @throws IllegalStateException if an ID of this channel is still open, or it is closed already
     */
    @Override
    public void close() {
        if (watched) {
            Native.unwatch(fd); // before the descriptor is closed: its number may be reused
        }
        try {
            handle.close();
        } catch (RuntimeException | Error e) {
            if (watched && !handle.isClosed()) {
                Native.watch(fd, readIfOpen); // it stays open: watched again
            }
            throw e;
        }
    }

    /** {@return whether it has been closed} */
    public boolean isClosed() {
        return handle.isClosed();
    }

    @Override
    public String toString() {
        return "EventChannel[fd=" + fd + "]";
    }
}
