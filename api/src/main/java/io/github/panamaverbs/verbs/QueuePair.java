package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_qp;
import io.github.panamaverbs.bindings.ibv_qp_cap;
import io.github.panamaverbs.bindings.ibv_qp_init_attr;
import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Native;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.security.SecureRandom;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

/**
 * A queue pair ({@code struct ibv_qp}): a send queue and a receive queue, the endpoint of RDMA
 * communication. Created in state RESET by {@link ProtectionDomain#createQueuePair(QpInitAttributes)}
 * and brought to RTS through the states of the verbs: {@link #toInit(ConnectOptions)} (receives may
 * be posted from here on), {@link #toRtr(RemoteEndpoint, ConnectOptions)} (ready to receive from the
 * peer), {@link #toRts(ConnectOptions)} (ready to send). {@link #connect(RemoteEndpoint, ConnectOptions)}
 * does all three once the peer's {@link RemoteEndpoint} is known; for UD it needs no remote.
 *
 * <pre>{@code
 * QueuePair qp = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq));
 * ConnectOptions how = ConnectOptions.port(1).gidIndex(1);
 * RemoteEndpoint mine = qp.localEndpoint(how);   // send to the peer, out of band
 * qp.connect(peers, how);                        // RESET -> INIT -> RTR -> RTS
 * qp.postSend(request);
 * }</pre>
 *
 * <p>Posting and polling from one thread per queue is the model: a queue pair may be posted to from
 * several threads (the provider locks), but a {@link SendRequest} must not be changed while another
 * thread posts it.
 */
public final class QueuePair extends Resource {
    private static final MethodHandle CREATE = Native.withErrno(
            Verbs.ibv_create_qp$address(), Verbs.ibv_create_qp$descriptor());
    private static final MethodHandle DESTROY = Native.withErrno(
            Verbs.ibv_destroy_qp$address(), Verbs.ibv_destroy_qp$descriptor());
    private static final MethodHandle MODIFY = Native.withErrno(
            Verbs.ibv_modify_qp$address(), Verbs.ibv_modify_qp$descriptor());
    private static final MethodHandle QUERY = Native.withErrno(
            Verbs.ibv_query_qp$address(), Verbs.ibv_query_qp$descriptor());
    private static final SecureRandom RANDOM = new SecureRandom();

    private final ProtectionDomain pd;
    private final Context context;
    private final QpType type;
    private final QpCapabilities capabilities;
    private final MemorySegment postSendFn;
    private final MemorySegment postRecvFn;
    private final int qpNum;
    private final int psn = RANDOM.nextInt() & 0xffffff;
    private final boolean hasSrq;
    private volatile QpState state;

    /** How librdmacm destroys a queue pair it created ({@code rdma_destroy_qp}); null for ibv_destroy_qp. */
    private final Consumer<MemorySegment> destroyer;

    QueuePair(ProtectionDomain pd, QpInitAttributes init) {
        this(pd, init, null, null, null, QpState.RESET);
    }

    /**
     * A queue pair created by {@code creator} (given the filled ibv_qp_init_attr; null for
     * ibv_create_qp), destroyed by {@code destroyer}, used by nothing after {@code owner} closes.
     */
    QueuePair(ProtectionDomain pd, QpInitAttributes init, UnaryOperator<MemorySegment> creator,
              Consumer<MemorySegment> destroyer, Resource owner, QpState initialState) {
        this(pd, init, new QpCapabilities[1], creator, destroyer, owner, initialState);
    }

    private QueuePair(ProtectionDomain pd, QpInitAttributes init, QpCapabilities[] granted,
                      UnaryOperator<MemorySegment> creator, Consumer<MemorySegment> destroyer, Resource owner,
                      QpState initialState) {
        super(create(pd, init, granted, creator), ibv_qp.sizeof(), pd, init.sendCq, init.recvCq, init.srq, owner);
        // What destroy() needs first: from here on, a failure destroys the queue pair (abandon).
        this.destroyer = destroyer;
        this.context = pd.context();
        try {
            this.state = initialState;
            this.pd = pd;
            this.type = init.type;
            this.capabilities = granted[0];
            this.qpNum = ibv_qp.qp_num(ptr());
            this.hasSrq = init.srq != null;
            this.postSendFn = DataPath.op(context, DataPath.POST_SEND);
            this.postRecvFn = DataPath.op(context, DataPath.POST_RECV);
            context.register(this, ptr().address());
            afterCreate();
        } catch (RuntimeException | Error e) {
            abandon(e);
            throw e;
        }
    }

    private static MemorySegment create(ProtectionDomain pd, QpInitAttributes c, QpCapabilities[] granted,
                                        UnaryOperator<MemorySegment> creator) {
        Objects.requireNonNull(c, "init");
        MemorySegment pdHandle = checkOpen(pd);
        for (CompletionQueue cq : new CompletionQueue[] {c.sendCq, c.recvCq}) {
            checkOpen(cq);
            if (cq.context() != pd.context()) {
                throw new IllegalArgumentException(cq + " belongs to " + cq.context() + ", not to " + pd.context()
                        + " of " + pd + ": a queue pair's completion queues must come from its own context");
            }
        }
        if (c.srq != null) {
            checkOpen(c.srq);
            if (c.srq.protectionDomain().context() != pd.context()) {
                throw new IllegalArgumentException(c.srq + " belongs to another context than " + pd);
            }
        }
        try {
            return createChecked(pdHandle, c, granted, creator);
        } catch (IllegalStateException e) {
            throw closed(e, pd, c.sendCq, c.recvCq, c.srq);
        }
    }

    private static MemorySegment createChecked(MemorySegment pdHandle, QpInitAttributes c, QpCapabilities[] granted,
                                               UnaryOperator<MemorySegment> creator) {
        return Native.call(call -> {
            MemorySegment init = call.allocate(ibv_qp_init_attr.layout());
            ibv_qp_init_attr.send_cq(init, c.sendCq.handle());
            ibv_qp_init_attr.recv_cq(init, c.recvCq.handle());
            ibv_qp_init_attr.srq(init, c.srq == null ? MemorySegment.NULL : c.srq.handle());
            MemorySegment cap = ibv_qp_init_attr.cap(init);
            ibv_qp_cap.max_send_wr(cap, c.maxSendWr);
            ibv_qp_cap.max_recv_wr(cap, c.srq == null ? c.maxRecvWr : 0);
            ibv_qp_cap.max_send_sge(cap, c.maxSendSge);
            ibv_qp_cap.max_recv_sge(cap, c.srq == null ? c.maxRecvSge : 0);
            ibv_qp_cap.max_inline_data(cap, c.maxInlineData);
            ibv_qp_init_attr.qp_type(init, c.type.value);
            ibv_qp_init_attr.sq_sig_all(init, c.sqSigAll ? 1 : 0);
            MemorySegment qp = creator != null ? creator.apply(init) : Native.create("ibv_create_qp", e -> e == Errno.EINVAL
                    ? "a capability exceeds the device's limits (max_qp_wr, max_sge, inline) or " + c.type
                      + " is not supported" : Native.MEMLOCK.explain(e),
                    x -> (MemorySegment) CREATE.invokeExact(x.errno(), pdHandle, init));
            granted[0] = new QpCapabilities(ibv_qp_cap.max_send_wr(cap), ibv_qp_cap.max_recv_wr(cap),
                    ibv_qp_cap.max_send_sge(cap), ibv_qp_cap.max_recv_sge(cap), ibv_qp_cap.max_inline_data(cap));
            return qp;
        });
    }

    /** {@code qp_num}: this queue pair's number, which peers address. */
    public int qpNumber() {
        return qpNum;
    }

    /** The transport type. */
    public QpType type() {
        return type;
    }

    /** What the device granted at creation. */
    public QpCapabilities capabilities() {
        return capabilities;
    }

    /** The protection domain it was created in. */
    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /** The first PSN this queue pair sends with (random, chosen at creation). */
    public int initialPsn() {
        return psn;
    }

    /** The state after the last successful {@link #modify(QpAttributes)} (no query). */
    public QpState state() {
        return state;
    }

    /** {@code ibv_modify_qp}: applies the attributes that were set, with their mask. */
    public void modify(QpAttributes attributes) {
        Objects.requireNonNull(attributes, "attributes");
        if (attributes.mask == 0) {
            throw new IllegalArgumentException("no attribute set");
        }
        MemorySegment q = handle();
        String to = (attributes.mask & Verbs.IBV_QP_STATE()) != 0 ? " to " + attributes.state() : "";
        check("ibv_modify_qp", e -> "moving " + this + " from " + state + to + " failed (mask 0x"
                        + Integer.toHexString(attributes.mask) + ")"
                        + (e == Errno.EINVAL ? ": an attribute or the mask is not valid for this transition" : ""),
                c -> (int) MODIFY.invokeExact(c.errno(), q, attributes.attr, attributes.mask));
        if ((attributes.mask & Verbs.IBV_QP_STATE()) != 0) {
            state = attributes.state();
        }
    }

    /** {@code ibv_query_qp}: the current attributes, state included. */
    public QpAttributes query() {
        QpAttributes result = new QpAttributes();
        int all = Verbs.IBV_QP_STATE() | Verbs.IBV_QP_PKEY_INDEX() | Verbs.IBV_QP_PORT() | Verbs.IBV_QP_ACCESS_FLAGS()
                | Verbs.IBV_QP_PATH_MTU() | Verbs.IBV_QP_DEST_QPN() | Verbs.IBV_QP_RQ_PSN() | Verbs.IBV_QP_SQ_PSN()
                | Verbs.IBV_QP_AV() | Verbs.IBV_QP_CAP() | (type == QpType.UD ? Verbs.IBV_QP_QKEY() : 0);
        MemorySegment q = handle();
        check("ibv_query_qp", Native.NO_HINT, c -> (int) QUERY.invokeExact(c.errno(), q, result.attr, all,
                c.allocate(ibv_qp_init_attr.layout())));
        result.mask = all;
        state = result.state();
        return result;
    }

    /**
     * What the peer needs to connect to this queue pair: the port's LID, this QP's number and first
     * PSN, and the GID at {@code options.gidIndex()} (zero when it is -1).
     */
    public RemoteEndpoint localEndpoint(ConnectOptions options) {
        Objects.requireNonNull(options, "options");
        int lid = context.queryPort(options.port).lid();
        Gid gid = options.gidIndex >= 0 ? context.queryGid(options.port, options.gidIndex) : Gid.ZERO;
        return new RemoteEndpoint(lid, qpNum, psn, gid);
    }

    /**
     * RESET → INIT: the port and partition key index; for RC and UC the remote access rights
     * ({@link ConnectOptions#access}), for UD the Q_Key ({@link ConnectOptions#qkey}). Receives may be
     * posted from INIT on.
     */
    public void toInit(ConnectOptions options) {
        Objects.requireNonNull(options, "options");
        QpAttributes a = new QpAttributes().state(QpState.INIT).pkeyIndex(options.pkeyIndex).port(options.port);
        switch (type) {
            case RC, UC -> a.accessFlags(options.access != null ? options.access : QpAttributes.remoteAccess(type));
            case UD -> a.qkey(options.qkey);
            default -> throw new UnsupportedOperationException("toInit does not know the INIT attributes of " + type
                    + " queue pairs; use modify(QpAttributes)");
        }
        modify(a);
    }

    /**
     * INIT → RTR (ready to receive). For RC and UC: the path to {@code remote} (a GRH when
     * {@code options} names a GID index, as RoCE needs, or when the remote has no LID), the path MTU,
     * the remote QP number and first PSN; for RC also the responder's read/atomic depth and the
     * minimum RNR timer. A UD queue pair needs none of these: {@code remote} may be null.
     */
    public void toRtr(RemoteEndpoint remote, ConnectOptions options) {
        Objects.requireNonNull(options, "options");
        QpAttributes rtr = new QpAttributes().state(QpState.RTR);
        if (type != QpType.UD) {
            Objects.requireNonNull(remote, "remote");
            AddressVector av;
            if (options.gidIndex >= 0) {
                av = new AddressVector(options.port, remote.lid(), options.serviceLevel, 0, 0, new AddressVector.GlobalRoute(
                        remote.gid(), options.gidIndex, options.hopLimit, options.trafficClass, 0));
            } else if (remote.lid() == 0) {
                throw new IllegalArgumentException("the remote has no LID (RoCE?): set ConnectOptions.gidIndex");
            } else {
                av = AddressVector.ib(options.port, remote.lid(), options.serviceLevel);
            }
            rtr.pathMtu(options.mtu).destQpNum(remote.qpn()).rqPsn(remote.psn()).addressVector(av);
            if (type == QpType.RC) {
                rtr.maxDestRdAtomic(options.maxDestRdAtomic).minRnrTimer(options.minRnrTimer);
            }
        }
        modify(rtr);
    }

    /**
     * RTR → RTS (ready to send): this queue pair's first PSN; for RC also the ACK timeout, the retry
     * counts and the initiator's read/atomic depth.
     */
    public void toRts(ConnectOptions options) {
        Objects.requireNonNull(options, "options");
        QpAttributes rts = new QpAttributes().state(QpState.RTS).sqPsn(psn);
        if (type == QpType.RC) {
            rts.timeout(options.timeout).retryCount(options.retryCount).rnrRetry(options.rnrRetry)
                    .maxRdAtomic(options.maxRdAtomic);
        }
        modify(rts);
    }

    /**
     * Brings this queue pair to RTS: {@link #toInit} (unless it is in INIT already, for receives
     * posted early), {@link #toRtr}, {@link #toRts}. For RC and UC, {@code remote} is the peer's
     * endpoint; for UD it is not needed (null) and {@code options} carries the Q_Key.
     */
    public void connect(RemoteEndpoint remote, ConnectOptions options) {
        Objects.requireNonNull(options, "options");
        if (type != QpType.RC && type != QpType.UC && type != QpType.UD) {
            throw new UnsupportedOperationException("connect is for RC, UC and UD queue pairs; this one is " + type);
        }
        if (state == QpState.RESET) {
            toInit(options);
        }
        toRtr(remote, options);
        toRts(options);
    }

    /**
     * Brings a UD queue pair to RTS with Q_Key {@code qkey}: an alias of
     * {@code connect(null, options.copy().qkey(qkey))}, kept for its name.
     */
    public void activateDatagram(ConnectOptions options, int qkey) {
        if (type != QpType.UD) {
            throw new IllegalStateException("activateDatagram is for UD queue pairs; this one is " + type);
        }
        connect(null, Objects.requireNonNull(options, "options").copy().qkey(qkey));
    }

    /** Moves to ERR: outstanding work requests complete with {@link WcStatus#WR_FLUSH_ERR}. */
    public void toError() {
        modify(new QpAttributes().state(QpState.ERR));
    }

    /** Moves to RESET, from any state: the queues are emptied and the QP can be connected again. */
    public void reset() {
        modify(new QpAttributes().state(QpState.RESET));
    }

    /**
     * {@code ibv_post_send}: posts {@code request} and every request chained after it. Allocates nothing.
     *
     * <p>The buffers the requests name belong to the device until their completions are polled:
     * change, reuse or free them only then (inline data excepted, which is copied when posted).
     *
     * @throws VerbsException        naming the first request that was not posted and why
     * @throws IllegalStateException if this queue pair, a memory region or an address handle of the
     *                               chain is closed, a request's memory was freed, or a request on a UD
     *                               queue pair has no destination
     */
    public void postSend(SendRequest request) {
        Objects.requireNonNull(request, "request").checkChain(type);
        int rc;
        try {
            rc = (int) DataPath.POST.invokeExact(postSendFn, ptr(), request.segment, request.badWr);
        } catch (IllegalStateException e) {
            throw closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
        if (rc != 0) {
            throw request.postFailed("ibv_post_send", rc, this, stateHint(true, rc));
        }
    }

    /**
     * {@code ibv_post_recv}: posts {@code request} and every request chained after it. Allocates nothing.
     * The buffers belong to the device until the receive's completion is polled.
     */
    public void postReceive(ReceiveRequest request) {
        if (hasSrq) {
            throw new IllegalStateException(this + " receives from a shared receive queue: post there");
        }
        Objects.requireNonNull(request, "request").checkChain(type);
        int rc;
        try {
            rc = (int) DataPath.POST.invokeExact(postRecvFn, ptr(), request.segment, request.badWr);
        } catch (IllegalStateException e) {
            throw closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
        if (rc != 0) {
            throw request.postFailed("ibv_post_recv", rc, this, stateHint(false, rc));
        }
    }

    /** Why a post probably failed, from the state this queue pair is in; null for the generic reason. */
    private String stateHint(boolean send, int rc) {
        int e = Math.abs(rc);
        return switch (state) {
            case RESET, INIT -> send ? "; the queue pair is in " + state + ", sends need RTS" : null;
            case ERR -> "; the queue pair is in ERR";
            default -> e == Errno.EINVAL ? "; too many SGEs, inline data too long, or an opcode this QP type lacks" : null;
        };
    }

    /** A state librdmacm moved this queue pair to. */
    void stateChanged(QpState newState) {
        state = newState;
    }

    @Override
    void destroy(MemorySegment address) {
        if (destroyer != null) {
            destroyer.accept(address);
        } else {
            Native.check("ibv_destroy_qp", Native.NO_HINT, c -> (int) DESTROY.invokeExact(c.errno(), address));
        }
        context.unregister(address.address());
    }

    @Override
    public String toString() {
        return "QueuePair[" + type + " qpn=0x" + Integer.toHexString(qpNum) + "]";
    }
}
