package io.github.panamaverbs.cm;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.rdma_cm_id;
import io.github.panamaverbs.access.VerbsAccess;
import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Lifetime;
import io.github.panamaverbs.internal.Native;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.ProtectionDomain;
import io.github.panamaverbs.verbs.QpInitAttributes;
import io.github.panamaverbs.verbs.QpState;
import io.github.panamaverbs.verbs.QpType;
import io.github.panamaverbs.verbs.QueuePair;
import io.github.panamaverbs.verbs.TransportType;
import io.github.panamaverbs.verbs.VerbsException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.Optional;

/**
 * A connection ID ({@code struct rdma_cm_id}): the connection manager's socket. An active side
 * resolves the peer's IP address and route, creates its queue pair and connects; a passive side
 * binds, listens and accepts the IDs that {@link CmEventType#CONNECT_REQUEST} events bring.
 *
 * <pre>{@code
 * // client                                      // server
 * id.resolve(serverAddress, timeout);            listener.bind(new InetSocketAddress(port)); listener.listen(8);
 * ProtectionDomain pd = id.context()...;         CmEvent req = listener.awaitEvent(CONNECT_REQUEST, timeout);
 * QueuePair qp = id.createQueuePair(pd, init);   QueuePair qp = req.id().createQueuePair(pd, init);
 * id.connect(params);                            req.id().accept(params);
 * id.awaitEvent(ESTABLISHED, timeout);           req.id().awaitEvent(ESTABLISHED, timeout);
 * }</pre>
 *
 * <p>The queue pair is the ordinary {@link QueuePair}: posting and polling are the same whichever
 * way it was connected. librdmacm moves it through INIT, RTR and RTS itself.
 *
 * <p>Private data limits (bytes), checked here: on InfiniBand and RoCE 56 with a connect, 196 with
 * an accept and 148 with a reject ({@link PortSpace#UDP}: 180 and 136); on iWARP 255 and 252.
 *
 * <p>Closing rule: an ID closes after its queue pair; the channel after its IDs. Closing an ID that
 * never connected is fine; a connected one should {@link #disconnect()} first.
 */
public final class CmId implements AutoCloseable {
    private static final MethodHandle CREATE_ID = Native.withErrno(Verbs.rdma_create_id$address(), Verbs.rdma_create_id$descriptor());
    private static final MethodHandle DESTROY_ID = Native.withErrno(Verbs.rdma_destroy_id$address(), Verbs.rdma_destroy_id$descriptor());
    private static final MethodHandle RESOLVE_ADDR = Native.withErrno(Verbs.rdma_resolve_addr$address(), Verbs.rdma_resolve_addr$descriptor());
    private static final MethodHandle RESOLVE_ROUTE = Native.withErrno(Verbs.rdma_resolve_route$address(), Verbs.rdma_resolve_route$descriptor());
    private static final MethodHandle BIND = Native.withErrno(Verbs.rdma_bind_addr$address(), Verbs.rdma_bind_addr$descriptor());
    private static final MethodHandle LISTEN = Native.withErrno(Verbs.rdma_listen$address(), Verbs.rdma_listen$descriptor());
    private static final MethodHandle CONNECT = Native.withErrno(Verbs.rdma_connect$address(), Verbs.rdma_connect$descriptor());
    private static final MethodHandle ACCEPT = Native.withErrno(Verbs.rdma_accept$address(), Verbs.rdma_accept$descriptor());
    private static final MethodHandle REJECT = Native.withErrno(Verbs.rdma_reject$address(), Verbs.rdma_reject$descriptor());
    private static final MethodHandle DISCONNECT = Native.withErrno(Verbs.rdma_disconnect$address(), Verbs.rdma_disconnect$descriptor());
    private static final MethodHandle CREATE_QP = Native.withErrno(Verbs.rdma_create_qp$address(), Verbs.rdma_create_qp$descriptor());
    private static final MethodHandle DESTROY_QP = Native.withErrno(Verbs.ibv_destroy_qp$address(), Verbs.ibv_destroy_qp$descriptor());
    private static final MethodHandle JOIN = Native.withErrno(Verbs.rdma_join_multicast$address(), Verbs.rdma_join_multicast$descriptor());
    private static final MethodHandle LEAVE = Native.withErrno(Verbs.rdma_leave_multicast$address(), Verbs.rdma_leave_multicast$descriptor());

    /** {@code RDMA_UDP_QKEY}: the Q_Key of {@link PortSpace#UDP} queue pairs and multicast groups. */
    public static final int UDP_QKEY = 0x01234567; // written out so that reading it needs no rdma-core
    private static final long SOCKADDR = 128;
    /**
     * The most private data an iWARP connect, accept or reject carries: 251 bytes, measured on
     * SoftiWARP (Linux 6.1; 252 to 255 bytes make the connection fail: REJECTED with ECONNRESET for a
     * connect, CONNECT_ERROR with EINVAL for an accept), below librdmacm's own limit of 255.
     */
    private static final int IWARP_PRIVATE_DATA = 251;
    private static final long SRC_ADDR = rdma_cm_id.route$offset();
    private static final long DST_ADDR = rdma_cm_id.route$offset() + SOCKADDR;
    private static final short AF_INET = 2;
    private static final short AF_INET6 = 10;

    private final EventChannel channel;
    private final PortSpace space;
    private final Lifetime handle;
    private final long address;
    private volatile QueuePair qp;
    /** The addresses last seen by {@link #toString()}, so that a closed ID is still named by them. */
    private volatile String lastRoute;
    /** {@link #resolveAddress} succeeded: a route can be resolved. */
    private volatile boolean addressResolved;
    /** The multicast groups joined and not left. */
    private final Set<InetAddress> groups = ConcurrentHashMap.newKeySet();

    private CmId(EventChannel channel, MemorySegment id, PortSpace space) {
        this.channel = channel;
        this.space = space;
        this.address = id.address();
        this.handle = new Lifetime(this, id, rdma_cm_id.sizeof(), this::destroy, channel.handle);
        channel.add(this, address);
    }

    static CmId create(EventChannel channel, PortSpace space) {
        MemorySegment ch = channel.pointer();
        MemorySegment id = Native.call(c -> {
            MemorySegment out = c.allocate(ValueLayout.ADDRESS);
            Native.checkStatus("rdma_create_id", Native.NO_HINT,
                    (int) CREATE_ID.invokeExact(c.errno(), ch, out, MemorySegment.NULL, space.value), c);
            return out.get(ValueLayout.ADDRESS, 0);
        });
        return new CmId(channel, id, space);
    }

    /** The ID librdmacm made for an incoming connection (a CONNECT_REQUEST event). */
    static CmId incoming(EventChannel channel, MemorySegment id, CmId listener) {
        return new CmId(channel, id, listener != null ? listener.space : PortSpace.TCP);
    }

    private void destroy(MemorySegment id) {
        channel.remove(this, address);
        Native.check("rdma_destroy_id", Native.NO_HINT, c -> (int) DESTROY_ID.invokeExact(c.errno(), id));
    }

    private MemorySegment id() {
        return handle.handle();
    }

    /** {@return the port space it was created in} */
    public PortSpace portSpace() {
        return space;
    }

    /** {@return the channel its events arrive on} */
    public EventChannel channel() {
        return channel;
    }

    /**
     * {@code rdma_resolve_addr}: finds the local device that reaches {@code destination} (from
     * {@code source}'s device when given), and waits for the outcome.
     *
     * @param source      the local address to use, or null for any
     * @param destination the peer's address and port
     * @param timeout     how long librdmacm may take, and how long to wait for its event; positive
     * @throws IllegalArgumentException                   if {@code timeout} is not positive, or an address
     *                                                    is unresolved
     * @throws IllegalStateException                      if the ID is closed
     * @throws io.github.panamaverbs.verbs.VerbsException if {@code rdma_resolve_addr} fails at once
     * @throws ConnectionException                        with the ADDR_ERROR event, or when nothing came
     *                                                    within {@code timeout}
     */
    public void resolveAddress(InetSocketAddress source, InetSocketAddress destination, Duration timeout) {
        Objects.requireNonNull(destination, "destination");
        int millis = millis(timeout);
        MemorySegment id = id();
        Native.check("rdma_resolve_addr", e -> "resolving " + destination, c -> {
            MemorySegment src = source == null ? MemorySegment.NULL : sockaddr(c.arena(), source);
            return (int) RESOLVE_ADDR.invokeExact(c.errno(), id, src, sockaddr(c.arena(), destination), millis);
        });
        awaitEvent(CmEventType.ADDR_RESOLVED, timeout);
        addressResolved = true;
    }

    /**
     * {@code rdma_resolve_route}, after {@link #resolveAddress}: finds the path to the peer, and waits.
     *
     * @param timeout how long librdmacm may take, and how long to wait for its event; positive
     * @throws IllegalArgumentException                   if {@code timeout} is not positive
     * @throws IllegalStateException                      if the ID is closed, or its address is not resolved
     * @throws io.github.panamaverbs.verbs.VerbsException if {@code rdma_resolve_route} fails at once
     * @throws ConnectionException                        with the ROUTE_ERROR event, or when nothing came
     *                                                    within {@code timeout}
     */
    public void resolveRoute(Duration timeout) {
        int millis = millis(timeout);
        MemorySegment id = id();
        if (!addressResolved) {
            // librdmacm follows the device of the resolved address: without one it dereferences NULL
            throw new IllegalStateException("resolveRoute needs a resolved address: call resolveAddress on " + this
                    + " first (or resolve, which does both)");
        }
        Native.check("rdma_resolve_route", Native.NO_HINT, c -> (int) RESOLVE_ROUTE.invokeExact(c.errno(), id, millis));
        awaitEvent(CmEventType.ROUTE_RESOLVED, timeout);
    }

    /**
     * {@link #resolveAddress} (from any local address) then {@link #resolveRoute}, each within {@code timeout}.
     *
     * @param destination the peer's address and port
     * @param timeout     the timeout of each step; positive
     * @throws IllegalArgumentException                   if {@code timeout} is not positive, or
     *                                                    {@code destination} is unresolved
     * @throws IllegalStateException                      if the ID is closed
     * @throws io.github.panamaverbs.verbs.VerbsException if a call fails at once
     * @throws ConnectionException                        with the ADDR_ERROR or ROUTE_ERROR event, or when
     *                                                    nothing came in time
     */
    public void resolve(InetSocketAddress destination, Duration timeout) {
        resolveAddress(null, destination, timeout);
        resolveRoute(timeout);
    }

    /**
     * {@code rdma_bind_addr}: binds to a local address and port (port 0: any; address 0.0.0.0: every
     * RDMA device), before {@link #listen(int)}.
     *
     * @param local the local address and port
     * @throws IllegalArgumentException                   if {@code local} is unresolved
     * @throws IllegalStateException                      if the ID is closed
     * @throws io.github.panamaverbs.verbs.VerbsException EADDRINUSE if the port is taken, EADDRNOTAVAIL or
     *                                                    ENODEV if no RDMA device has that address
     */
    public void bind(InetSocketAddress local) {
        Objects.requireNonNull(local, "local");
        MemorySegment id = id();
        requireLocal(local);
        Native.check("rdma_bind_addr", e -> e == Errno.EADDRINUSE ? "port " + local.getPort() + " is taken"
                        : e == Errno.EADDRNOTAVAIL || e == Errno.ENODEV ? local.getAddress() + " is no RDMA device's address" : null,
                c -> (int) BIND.invokeExact(c.errno(), id, sockaddr(c.arena(), local)));
    }

    /**
     * {@code rdma_listen}: waits for connections; each arrives as a {@link CmEventType#CONNECT_REQUEST}
     * event, read with {@link #nextEvent} or {@link #awaitEvent} on this ID.
     *
     * @param backlog the most connection requests waiting to be accepted
     * @throws IllegalStateException                      if the ID is closed
     * @throws io.github.panamaverbs.verbs.VerbsException if {@code rdma_listen} fails
     */
    public void listen(int backlog) {
        MemorySegment id = id();
        Native.check("rdma_listen", Native.NO_HINT, c -> (int) LISTEN.invokeExact(c.errno(), id, backlog));
    }

    /**
     * The device context this ID is bound to (after address resolution, or for an incoming ID):
     * create the protection domain and completion queues of its queue pair from it. librdmacm
     * opened it and keeps it open; closing the returned context frees nothing.
     *
     * @return the device context, one Java object per device
     * @throws IllegalStateException if the ID is not bound to a device yet, or is closed
     */
    public Context context() {
        MemorySegment verbs = rdma_cm_id.verbs(id());
        if (verbs.address() == 0) {
            throw new IllegalStateException(this + " is not bound to a device yet: resolve an address (or bind to a device's address) first");
        }
        return VerbsAccess.get().borrowedContext(verbs);
    }

    /**
     * {@code port_num}: the port of {@link #context()} this ID is bound to.
     *
     * @return the port number, from 1; 0 before the ID is bound to a device
     * @throws IllegalStateException if the ID is closed
     */
    public int port() {
        return Byte.toUnsignedInt(rdma_cm_id.port_num(id()));
    }

    /**
     * {@code rdma_create_qp}: the queue pair of this connection, in {@code pd} (of {@link #context()})
     * with the completion queues and sizes of {@code init}. librdmacm moves it to INIT (RTS for
     * {@link PortSpace#UDP}), and to RTR and RTS when the connection is established.
     *
     * @param pd   a protection domain of {@link #context()}
     * @param init the queue pair's type ({@link io.github.panamaverbs.verbs.QpType#RC} for
     *             {@link PortSpace#TCP}, {@link io.github.panamaverbs.verbs.QpType#UD} for
     *             {@link PortSpace#UDP}), completion queues and capacities
     * @return the queue pair; close it before this ID
     * @throws IllegalArgumentException                   if the type does not match the port space, or
     *                                                    {@code pd} belongs to another context
     * @throws IllegalStateException                      if the ID already has a queue pair, is not bound
     *                                                    to a device yet, or is closed, or if {@code pd} or
     *                                                    a completion queue is closed
     * @throws io.github.panamaverbs.verbs.VerbsException if {@code rdma_create_qp} fails; ENOMEM usually
     *                                                    means the memlock limit
     */
    public QueuePair createQueuePair(ProtectionDomain pd, QpInitAttributes init) {
        Objects.requireNonNull(pd, "pd");
        Objects.requireNonNull(init, "init");
        QpType expected = space == PortSpace.UDP ? QpType.UD : QpType.RC;
        if (init.type() != expected) {
            throw new IllegalArgumentException(space + " connections use " + expected + " queue pairs, not " + init.type());
        }
        if (qp != null) {
            throw new IllegalStateException(this + " already has " + qp);
        }
        if (pd.context() != context()) {
            throw new IllegalArgumentException(pd + " belongs to " + pd.context() + ", not to " + context()
                    + " that this ID is bound to");
        }
        MemorySegment id = id();
        MemorySegment pdHandle = VerbsAccess.get().pointer(pd);
        QueuePair created = VerbsAccess.get().queuePair(pd, init, attr -> {
            Native.check("rdma_create_qp", Native.MEMLOCK, c -> (int) CREATE_QP.invokeExact(c.errno(), id, pdHandle, attr));
            return rdma_cm_id.qp(id);
        }, this::destroyQueuePair, handle, space == PortSpace.UDP ? QpState.RTS : QpState.INIT);
        qp = created;
        return created;
    }

    /**
     * What {@code rdma_destroy_qp} does, with its result checked (librdmacm ignores it): leaves the
     * multicast groups it joined (a queue pair attached to one cannot be destroyed), destroys the
     * queue pair and clears {@code id->qp} so that librdmacm never touches it again.
     */
    private void destroyQueuePair(MemorySegment qpAddress) {
        for (InetAddress group : List.copyOf(groups)) {
            try {
                leaveMulticast(group);
            } catch (RuntimeException ignored) {
                // left already, or the ID is gone; the destroy below says whether it matters
            }
        }
        Native.check("ibv_destroy_qp", e -> e == Errno.EBUSY ? "it is still attached to a multicast group" : null,
                c -> (int) DESTROY_QP.invokeExact(c.errno(), qpAddress));
        rdma_cm_id.qp(id().reinterpret(rdma_cm_id.sizeof()), MemorySegment.NULL);
        qp = null;
    }

    /** {@return the queue pair made by {@link #createQueuePair}; empty before, and once it is closed} */
    public Optional<QueuePair> queuePair() {
        return Optional.ofNullable(qp);
    }

    QueuePair queuePairOrNull() {
        return qp;
    }

    /**
     * {@code rdma_connect}: asks the resolved peer for a connection; the answer is an event
     * ({@link #awaitEvent}: ESTABLISHED, or REJECTED / UNREACHABLE / CONNECT_ERROR). For
     * {@link PortSpace#UDP} it asks for the peer's queue pair number and Q_Key: the ESTABLISHED event
     * carries them with the address vector to create an address handle from.
     *
     * @param parameters what is offered to the peer, private data included
     * @throws IllegalArgumentException                   if the private data is longer than the transport allows
     * @throws IllegalStateException                      if the ID has no queue pair yet, or is closed
     * @throws ConnectionException                        on iWARP, if the peer refuses at once
     *                                                    ({@link ConnectionException#isRejected()})
     * @throws io.github.panamaverbs.verbs.VerbsException if {@code rdma_connect} fails
     */
    public void connect(ConnectionParameters parameters) {
        Objects.requireNonNull(parameters, "parameters");
        checkPrivateData(parameters.privateData.length, "connect", 56, 180, IWARP_PRIVATE_DATA);
        requireQueuePair("connect");
        checkRetryCount(parameters);
        MemorySegment id = id();
        int errno = Native.call(c -> (int) CONNECT.invokeExact(c.errno(), id, parameters.toC(c.arena())) == 0 ? 0 : c.lastErrno());
        if (errno == Errno.ECONNREFUSED) {
            // iWARP learns of the refusal in the call itself (the TCP connect); IB/RoCE from an event.
            throw new ConnectionException(this + ": connection refused by " + remoteAddress(), null, true);
        }
        if (errno != 0) {
            throw Native.fail("rdma_connect", errno, Native.NO_HINT);
        }
    }

    /**
     * {@code rdma_accept}: accepts the incoming connection of this ID (from a CONNECT_REQUEST);
     * ESTABLISHED follows ({@link PortSpace#TCP}). For {@link PortSpace#UDP} it answers the peer's
     * resolution with this ID's queue pair number and Q_Key, and nothing follows.
     *
     * @param parameters what is offered to the peer, private data included
     * @throws IllegalArgumentException                   if the private data is longer than the transport allows
     * @throws IllegalStateException                      if the ID has no queue pair yet, or is closed
     * @throws io.github.panamaverbs.verbs.VerbsException if {@code rdma_accept} fails
     */
    public void accept(ConnectionParameters parameters) {
        Objects.requireNonNull(parameters, "parameters");
        checkPrivateData(parameters.privateData.length, "accept", 196, 136, IWARP_PRIVATE_DATA);
        requireQueuePair("accept");
        checkRetryCount(parameters);
        MemorySegment id = id();
        Native.check("rdma_accept", Native.NO_HINT, c -> (int) ACCEPT.invokeExact(c.errno(), id, parameters.toC(c.arena())));
    }

    /**
     * {@code rdma_reject}: refuses the incoming connection of this ID, with {@code privateData} for
     * the peer. The ID stays open: close it afterwards.
     *
     * @param privateData the bytes the peer gets with the REJECTED event; may be empty
     * @throws IllegalArgumentException                   if it is longer than the transport allows
     * @throws IllegalStateException                      if the ID is closed
     * @throws io.github.panamaverbs.verbs.VerbsException if {@code rdma_reject} fails
     */
    public void reject(byte[] privateData) {
        Objects.requireNonNull(privateData, "privateData");
        checkPrivateData(privateData.length, "reject", 148, 136, IWARP_PRIVATE_DATA);
        MemorySegment id = id();
        Native.check("rdma_reject", Native.NO_HINT, c -> {
            MemorySegment data = privateData.length == 0 ? MemorySegment.NULL : c.arena().allocate(privateData.length);
            if (privateData.length > 0) {
                MemorySegment.copy(MemorySegment.ofArray(privateData), 0, data, 0, privateData.length);
            }
            return (int) REJECT.invokeExact(c.errno(), id, data, (byte) privateData.length);
        });
    }

    /**
     * {@code rdma_disconnect}: ends the connection; both sides get DISCONNECTED, and the queue pair's
     * outstanding work requests are flushed.
     *
     * @throws IllegalStateException                      if the ID is closed
     * @throws io.github.panamaverbs.verbs.VerbsException EINVAL if it was never connected
     */
    public void disconnect() {
        MemorySegment id = id();
        Native.check("rdma_disconnect", e -> e == Errno.EINVAL ? this + " is not connected" : null,
                c -> (int) DISCONNECT.invokeExact(c.errno(), id));
        QueuePair q = qp;
        if (q != null) {
            VerbsAccess.get().stateChanged(q, QpState.ERR);
        }
    }

    /**
     * {@code rdma_join_multicast}: joins the multicast group {@code group} (an ID of
     * {@link PortSpace#UDP} bound to a device, e.g. by {@link #resolveAddress} from a local address to
     * the group, with its queue pair created), and waits for the outcome. librdmacm attaches the queue
     * pair to the group; datagrams sent to the event's {@link CmEvent#addressVector()} with queue pair
     * number {@link CmEvent#remoteQpNumber()} (0xFFFFFF) and Q_Key {@link CmEvent#qkey()} reach every
     * member.
     *
     * @param group   the multicast group's address
     * @param timeout how long to wait for the outcome
     * @return the MULTICAST_JOIN event
     * @throws IllegalStateException                      if the ID is not of {@link PortSpace#UDP}, or is closed
     * @throws io.github.panamaverbs.verbs.VerbsException if {@code rdma_join_multicast} fails (ENODEV: the ID
     *                                                    is not bound to a device's address)
     * @throws ConnectionException                        with the MULTICAST_ERROR event, or on timeout
     */
    public CmEvent joinMulticast(InetAddress group, Duration timeout) {
        Objects.requireNonNull(group, "group");
        if (space != PortSpace.UDP) {
            throw new IllegalStateException("multicast needs a " + PortSpace.UDP + " ID, not " + space);
        }
        Objects.requireNonNull(timeout, "timeout");
        MemorySegment id = id();
        Native.check("rdma_join_multicast", e -> e == Errno.ENODEV ? "the ID is not bound to a device's address" : null,
                c -> (int) JOIN.invokeExact(c.errno(), id, sockaddr(c.arena(), new InetSocketAddress(group, 0)), MemorySegment.NULL));
        groups.add(group);
        return awaitEvent(CmEventType.MULTICAST_JOIN, timeout);
    }

    /**
     * {@code rdma_leave_multicast}: leaves {@code group}; librdmacm detaches the queue pair.
     *
     * @param group the multicast group's address
     * @throws IllegalStateException                      if the ID is closed
     * @throws io.github.panamaverbs.verbs.VerbsException if {@code rdma_leave_multicast} fails
     *                                                    (EADDRNOTAVAIL: not a member)
     */
    public void leaveMulticast(InetAddress group) {
        Objects.requireNonNull(group, "group");
        MemorySegment id = id();
        Native.check("rdma_leave_multicast", e -> e == Errno.EADDRNOTAVAIL ? "not a member of " + group : null,
                c -> (int) LEAVE.invokeExact(c.errno(), id, sockaddr(c.arena(), new InetSocketAddress(group, 0))));
        groups.remove(group);
    }

    /**
     * The next event of this ID (for a listener: the next connection request), waiting at most
     * {@code timeout}; acknowledged already. Events of other IDs of the channel read meanwhile are
     * kept for them.
     *
     * @param timeout the longest to wait; zero or negative to look once without waiting
     * @return the event, or empty if none came in time
     * @throws IllegalStateException                      if the channel is closed, also while waiting
     * @throws io.github.panamaverbs.verbs.VerbsException if reading an event fails
     */
    public Optional<CmEvent> nextEvent(Duration timeout) {
        return channel.next(this, Native.deadline(Objects.requireNonNull(timeout, "timeout")));
    }

    /**
     * Waits for an event of this ID of type {@code expected} and returns it.
     *
     * @param expected the event type awaited
     * @param timeout  the longest to wait
     * @return the event
     * @throws ConnectionException                        naming the event that came instead (REJECTED,
     *                                                    UNREACHABLE, ...) or the timeout
     * @throws IllegalStateException                      if the channel is closed, also while waiting
     * @throws io.github.panamaverbs.verbs.VerbsException if reading an event fails
     */
    public CmEvent awaitEvent(CmEventType expected, Duration timeout) {
        Objects.requireNonNull(expected, "expected");
        Optional<CmEvent> e = nextEvent(timeout);
        if (e.isEmpty()) {
            throw new ConnectionException("no " + expected.cName() + " for " + this + " within " + timeout, null);
        }
        CmEvent event = e.get();
        if (event.type() != expected) {
            throw new ConnectionException(this + ": waiting for " + expected.cName() + ", got " + event.type().cName()
                    + (event.status() != 0 ? " (" + event.statusText() + ")" : ""), event);
        }
        return event;
    }

    /**
     * The local address (after bind, resolve or connection).
     *
     * @return the address and port, or null when the ID has no IP address yet
     * @throws IllegalStateException if the ID is closed
     */
    public InetSocketAddress localAddress() {
        return readSockaddr(id().reinterpret(rdma_cm_id.sizeof()).asSlice(SRC_ADDR, SOCKADDR));
    }

    /**
     * The peer's address (after resolve, or for an incoming connection).
     *
     * @return the address and port, or null when the ID has no IP peer yet
     * @throws IllegalStateException if the ID is closed
     */
    public InetSocketAddress remoteAddress() {
        return readSockaddr(id().reinterpret(rdma_cm_id.sizeof()).asSlice(DST_ADDR, SOCKADDR));
    }

    /**
     * {@code rdma_destroy_id}. Connect requests read for this listener and not taken are rejected
     * and their IDs closed.
     *
     * @throws IllegalStateException                      if its queue pair is still open, or it is closed already
     * @throws io.github.panamaverbs.verbs.VerbsException if {@code rdma_destroy_id} fails; the ID stays open
     */
    @Override
    public void close() {
        if (!handle.isClosed() && qp == null) {
            for (CmEvent request : channel.takeRequests(this)) {
                try (CmId incoming = request.id()) {
                    incoming.reject(new byte[0]);
                } catch (RuntimeException ignored) {
                    // the peer may be gone already
                }
            }
        }
        handle.close();
    }

    /** {@return whether it has been closed} */
    public boolean isClosed() {
        return handle.isClosed();
    }

    /**
     * Refuses at once an address that is not this host's (the kernel can take seconds to say so): the
     * wildcard, a loopback address or one of a local interface's passes, as for a socket's bind.
     */
    private static void requireLocal(InetSocketAddress local) {
        InetAddress ip = local.getAddress();
        if (ip == null || ip.isAnyLocalAddress() || ip.isLoopbackAddress()) {
            return; // (unresolved: sockaddr says so)
        }
        boolean ours;
        try {
            ours = java.net.NetworkInterface.getByInetAddress(ip) != null;
        } catch (java.net.SocketException e) {
            ours = true; // cannot tell: let the kernel decide
        }
        if (!ours) {
            throw new VerbsException("rdma_bind_addr", Errno.EADDRNOTAVAIL, ip.getHostAddress()
                    + " is not an address of this host (bind to one of its RDMA devices' addresses, or to 0.0.0.0)");
        }
    }

    /** Soft-RoCE retries for ever with a retry count of 7: a dead peer would never be reported (the verbs package's check). */
    private void checkRetryCount(ConnectionParameters parameters) {
        if (space == PortSpace.TCP) {
            VerbsAccess.get().checkRetryCount(context(), parameters.retryCount);
        }
    }

    private void requireQueuePair(String what) {
        if (qp == null) {
            throw new IllegalStateException(what + " needs the queue pair first: createQueuePair(pd, init)");
        }
    }

    private void checkPrivateData(int length, String what, int ib, int udp, int iwarp) {
        boolean iwarpDevice = rdma_cm_id.verbs(id()).address() != 0 && context().device().transport() == TransportType.IWARP;
        int limit = iwarpDevice ? iwarp : space == PortSpace.UDP ? udp : ib;
        if (length > limit) {
            throw new IllegalArgumentException(length + " bytes of private data with " + what + ": the limit is " + limit
                    + " on " + (iwarpDevice ? "iWARP" : space == PortSpace.UDP ? "UDP" : "InfiniBand/RoCE"));
        }
    }

    private static int millis(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive, not " + timeout);
        }
        return (int) Math.min(Integer.MAX_VALUE, timeout.toMillis());
    }

    /** A {@code struct sockaddr_in} / {@code sockaddr_in6} for {@code a}. */
    static MemorySegment sockaddr(Arena arena, InetSocketAddress a) {
        if (a.isUnresolved()) {
            throw new IllegalArgumentException("cannot resolve host " + a.getHostString());
        }
        MemorySegment s = arena.allocate(SOCKADDR, 8);
        InetAddress ip = a.getAddress();
        s.set(ValueLayout.JAVA_SHORT, 2, Short.reverseBytes((short) a.getPort()));
        if (ip instanceof Inet4Address) {
            s.set(ValueLayout.JAVA_SHORT, 0, AF_INET);
            MemorySegment.copy(MemorySegment.ofArray(ip.getAddress()), 0, s, 4, 4);
        } else {
            s.set(ValueLayout.JAVA_SHORT, 0, AF_INET6);
            MemorySegment.copy(MemorySegment.ofArray(ip.getAddress()), 0, s, 8, 16);
            s.set(ValueLayout.JAVA_INT, 24, ((Inet6Address) ip).getScopeId());
        }
        return s;
    }

    static InetSocketAddress readSockaddr(MemorySegment s) {
        short family = s.get(ValueLayout.JAVA_SHORT, 0);
        int port = Short.toUnsignedInt(s.get(ValueLayout.JAVA_SHORT.withOrder(ByteOrder.BIG_ENDIAN), 2));
        try {
            if (family == AF_INET) {
                return new InetSocketAddress(InetAddress.getByAddress(s.asSlice(4, 4).toArray(ValueLayout.JAVA_BYTE)), port);
            }
            if (family == AF_INET6) {
                return new InetSocketAddress(InetAddress.getByAddress(s.asSlice(8, 16).toArray(ValueLayout.JAVA_BYTE)), port);
            }
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
        return null;
    }

    @Override
    public String toString() {
        String route = lastRoute;
        boolean open = handle.isOpen();
        if (open) {
            try {
                route = route(localAddress(), remoteAddress());
                lastRoute = route;
            } catch (RuntimeException e) {
                open = false; // closed meanwhile
            }
        }
        return "CmId[" + space + (route != null ? " " + route : ", 0x" + Long.toHexString(address)) + (open ? "" : ", closed") + "]";
    }

    /** {@code local -> remote}, what is known of it; null when neither is. */
    static String route(InetSocketAddress local, InetSocketAddress remote) {
        if (local == null && remote == null) {
            return null;
        }
        return (local == null ? "*" : hostAndPort(local)) + (remote == null ? "" : " -> " + hostAndPort(remote));
    }

    /** {@code 10.0.0.1:7471}, {@code [fe80::1]:7471}. */
    static String hostAndPort(InetSocketAddress a) {
        String host = a.getAddress() != null ? a.getAddress().getHostAddress() : a.getHostString();
        int zone = host.indexOf('%');
        if (zone >= 0) {
            host = host.substring(0, zone);
        }
        return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + a.getPort();
    }
}
