package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_qp;
import io.github.panamaverbs.bindings.ibv_qp_cap;
import io.github.panamaverbs.bindings.ibv_qp_init_attr;
import io.github.panamaverbs.bindings.ibv_qp_init_attr_ex;
import io.github.panamaverbs.internal.DataPath;
import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Jfr;
import io.github.panamaverbs.internal.Lifetime;
import io.github.panamaverbs.internal.Native;
import io.github.panamaverbs.internal.Quirks;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.security.SecureRandom;
import java.util.Objects;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import java.lang.ref.Reference;

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
 * thread posts it. The memory a posted request names belongs to the device until the request's
 * completion is polled (see <a href="package-summary.html#buffers">when a posted buffer may be
 * reused</a>).
 *
 * <p>Close a queue pair before its protection domain, its completion queues and its shared receive
 * queue; they refuse to close while it is open.
 */
public final class QueuePair extends Resource {
    private static final MethodHandle CREATE = Native.withErrno(
            Verbs.ibv_create_qp$address(), Verbs.ibv_create_qp$descriptor());
    private static final MethodHandle DESTROY = Native.withErrno(
            Verbs.ibv_destroy_qp$address(), Verbs.ibv_destroy_qp$descriptor());
    private static final MethodHandle MODIFY = Native.withErrno(
            Verbs.ibv_modify_qp$address(), Verbs.ibv_modify_qp$descriptor());
    private static final MethodHandle ATTACH_MCAST = Native.withErrno(
            Verbs.ibv_attach_mcast$address(), Verbs.ibv_attach_mcast$descriptor());
    private static final MethodHandle DETACH_MCAST = Native.withErrno(
            Verbs.ibv_detach_mcast$address(), Verbs.ibv_detach_mcast$descriptor());
    private static final MethodHandle TO_QP_EX = Native.plain(
            Verbs.ibv_qp_to_qp_ex$address(), Verbs.ibv_qp_to_qp_ex$descriptor());
    /** struct ibv_qp *(*create_qp_ex)(struct ibv_context *, struct ibv_qp_init_attr_ex *) */
    private static final MethodHandle CREATE_EX = Native.withErrno(java.lang.foreign.FunctionDescriptor.of(
            java.lang.foreign.ValueLayout.ADDRESS, java.lang.foreign.ValueLayout.ADDRESS, java.lang.foreign.ValueLayout.ADDRESS));
    private static final MethodHandle QUERY = Native.withErrno(
            Verbs.ibv_query_qp$address(), Verbs.ibv_query_qp$descriptor());
    private static final SecureRandom RANDOM = new SecureRandom();

    private final ProtectionDomain pd;
    private final Context context;
    private final QpType type;
    private final QpCapabilities capabilities;
    private final MemorySegment postSendFn;
    private final MemorySegment postRecvFn;
    /** The confined posts are critical downcalls: the provider posts in user space, and no {@code SendBatch} can hold the lock. */
    private final boolean criticalPosts;
    private final int qpNum;
    private final int psn = RANDOM.nextInt() & 0xffffff;
    private final boolean hasSrq;
    private volatile QpState state;
    /** SoftiWARP: a request posted in ERR never completes ({@link Quirks#SIW_POST_IN_ERROR_NEVER_COMPLETES}). */
    private final boolean postsInErrNeverComplete;
    /**
     * Held while a post that binds or invalidates memory windows records what it does and posts it,
     * and by a {@link SendBatch} that binds or invalidates one, from the first such request to its end.
     */
    final java.util.concurrent.locks.ReentrantLock windowLock = new java.util.concurrent.locks.ReentrantLock();
    /**
     * An error completion of this queue pair was polled (noted on SoftiWARP only): the kernel may have
     * moved it to ERR, which Java did not see; the next post asks ({@code ibv_query_qp}).
     */
    volatile boolean errorSeen;
    /** The connection manager reported the connection gone (DISCONNECTED) and moved it to ERR. */
    private volatile boolean connectionGone;
    /** The ibv_wr_* API, for a queue pair created with send operations; else null. */
    private final SendBatch batch;

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
              Consumer<MemorySegment> destroyer, Lifetime owner, QpState initialState) {
        this(pd, init, new QpCapabilities[1], creator, destroyer, owner, initialState);
    }

    private QueuePair(ProtectionDomain pd, QpInitAttributes init, QpCapabilities[] granted,
                      UnaryOperator<MemorySegment> creator, Consumer<MemorySegment> destroyer, Lifetime owner,
                      QpState initialState) {
        super(create(pd, init, granted, creator), init.sendOps != null ? io.github.panamaverbs.bindings.ibv_qp_ex.sizeof()
                : ibv_qp.sizeof(), owner, pd, init.sendCq, init.recvCq, init.srq);
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
            this.postsInErrNeverComplete = context.has(Quirks.SIW_POST_IN_ERROR_NEVER_COMPLETES);
            this.postSendFn = context.op(DataPath.POST_SEND);
            this.postRecvFn = context.op(DataPath.POST_RECV);
            this.criticalPosts = init.sendOps == null && context.postsInUserSpace();
            this.batch = init.sendOps == null ? null : new SendBatch(this, qpEx(), init.sendOps);
            context.register(this, ptr().address());
            context.registerNumber(this, qpNum);
            afterCreate();
        } catch (RuntimeException | Error e) {
            abandon(e);
            throw e;
        }
    }

    /** {@code ibv_qp_to_qp_ex}: the extended view, which providers keep at the queue pair's own address. */
    private MemorySegment qpEx() {
        MemorySegment ex;
        try {
            ex = (MemorySegment) TO_QP_EX.invokeExact(ptr());
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
        if (ex.address() != ptr().address()) {
            throw new VerbsException("ibv_qp_to_qp_ex", Errno.EOPNOTSUPP, "the provider's extended queue pair is not "
                    + "at the queue pair's address (" + (ex.address() == 0 ? "none" : "elsewhere") + ")");
        }
        return ptr();
    }

    /**
     * {@return the {@code ibv_wr_*} post API of this queue pair} One object, reused by every batch.
     *
     * @throws IllegalStateException if the queue pair was created without {@link QpInitAttributes#sendOps}
     */
    public SendBatch sendBatch() {
        if (batch == null) {
            throw new IllegalStateException(this + " was created without send operations (QpInitAttributes.sendOps): "
                    + "it posts with postSend only");
        }
        return batch;
    }

    private static MemorySegment create(ProtectionDomain pd, QpInitAttributes c, QpCapabilities[] granted,
                                        UnaryOperator<MemorySegment> creator) {
        Objects.requireNonNull(c, "init");
        if (c.sendOps != null && creator != null) {
            throw new IllegalArgumentException("the connection manager's queue pairs are created without send "
                    + "operations here: create the queue pair with ProtectionDomain.createQueuePair for the ibv_wr_* API");
        }
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
            // ibv_qp_init_attr is the start of ibv_qp_init_attr_ex: one buffer serves both verbs.
            MemorySegment init = call.allocate(ibv_qp_init_attr_ex.layout());
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
            MemorySegment qp = c.sendOps != null ? createEx(pdHandle, c, init) : creator != null ? creator.apply(init)
                    : Native.create("ibv_create_qp", e -> e == Errno.EINVAL
                    ? "a capability exceeds the device's limits (max_qp_wr, max_sge, inline) or " + c.type
                      + " is not supported" : Native.MEMLOCK.explain(e),
                    x -> (MemorySegment) CREATE.invokeExact(x.errno(), pdHandle, init));
            granted[0] = new QpCapabilities(ibv_qp_cap.max_send_wr(cap), ibv_qp_cap.max_recv_wr(cap),
                    ibv_qp_cap.max_send_sge(cap), ibv_qp_cap.max_recv_sge(cap), ibv_qp_cap.max_inline_data(cap));
            return qp;
        });
    }

    /** ibv_create_qp_ex (an inline of verbs.h: verbs_context's create_qp_ex) with the PD and send_ops_flags. */
    private static MemorySegment createEx(MemorySegment pdHandle, QpInitAttributes c, MemorySegment init) {
        Context context = c.sendCq.context();
        MemorySegment fn = context.extendedOp(io.github.panamaverbs.bindings.verbs_context.create_qp_ex$offset());
        if (fn.address() == 0) {
            throw new VerbsException("ibv_create_qp_ex", Errno.EOPNOTSUPP, context.device().name()
                    + " has no extended queue pairs (the ibv_wr_* API)");
        }
        ibv_qp_init_attr_ex.comp_mask(init, Verbs.IBV_QP_INIT_ATTR_PD() | Verbs.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS());
        ibv_qp_init_attr_ex.pd(init, pdHandle);
        ibv_qp_init_attr_ex.send_ops_flags(init, SendBatch.mask(c.sendOps));
        MemorySegment ctx = context.handle();
        return Native.create("ibv_create_qp_ex", e -> e == Errno.EOPNOTSUPP || e == Errno.EINVAL
                ? context.device().name() + " does not offer " + c.sendOps + " on a " + c.type + " queue pair, or a "
                + "capability exceeds its limits" : Native.MEMLOCK.explain(e),
                x -> (MemorySegment) CREATE_EX.invokeExact(fn, x.errno(), ctx, init));
    }

    /** {@return {@code qp_num}: this queue pair's number, which peers address} */
    public int qpNumber() {
        return qpNum;
    }

    /** {@return the transport type} */
    public QpType type() {
        return type;
    }

    /** {@return what the device granted at creation} */
    public QpCapabilities capabilities() {
        return capabilities;
    }

    /** {@return the protection domain it was created in} */
    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /** {@return the first PSN this queue pair sends with (random, chosen at creation)} */
    public int initialPsn() {
        return psn;
    }

    /**
     * {@return the state after the last successful {@link #modify(QpAttributes)} or {@link #query()}}
     * No query is made; for a queue pair of the connection manager, the state librdmacm moved it to.
     */
    public QpState state() {
        return state;
    }

    /**
     * {@code ibv_modify_qp}: applies the attributes that were set, with their mask.
     *
     * @param attributes the attributes, each setter of which sets its mask bit
     * @throws IllegalArgumentException if no attribute is set
     * @throws IllegalStateException    if the queue pair is closed
     * @throws VerbsException           naming the transition, if {@code ibv_modify_qp} fails (EINVAL: an
     *                                  attribute or the mask is not valid for this transition)
     */
    public void modify(QpAttributes attributes) {
        Objects.requireNonNull(attributes, "attributes");
        if (attributes.mask == 0) {
            throw new IllegalArgumentException("no attribute set");
        }
        MemorySegment q = handle();
        if ((attributes.mask & QpAttributes.IBV_QP_RETRY_CNT) != 0
                && (io.github.panamaverbs.bindings.ibv_qp_attr.retry_cnt(attributes.attr) & 0xff) == 7) {
            checkRetryCount(context, 7);
        }
        boolean changes = (attributes.mask & QpAttributes.IBV_QP_STATE) != 0;
        String to = changes ? " to " + attributes.state() : "";
        Jfr.QueuePairState event = changes ? new Jfr.QueuePairState() : null;
        if (event != null) {
            event.begin();
        }
        check("ibv_modify_qp", e -> "moving " + this + " from " + state + to + " failed (mask 0x"
                        + Integer.toHexString(attributes.mask) + ")"
                        + (e == Errno.EINVAL ? ": an attribute or the mask is not valid for this transition" : ""),
                c -> (int) MODIFY.invokeExact(c.errno(), q, attributes.attr, attributes.mask));
        if (changes) {
            QpState from = state;
            state = attributes.state();
            commit(event, from, state);
        }
    }

    /**
     * Refuses a transport retry count of 7 on Soft-RoCE, which retries for ever with it
     * ({@link Quirks#RXE_RETRY_COUNT_SEVEN_IS_FOREVER}): a peer that died would never be reported.
     */
    static void checkRetryCount(Context context, int retryCount) {
        if (retryCount == 7 && context.has(Quirks.RXE_RETRY_COUNT_SEVEN_IS_FOREVER)) {
            throw new IllegalArgumentException("a retry count of 7 retries for ever on Soft-RoCE (" + context.device().name()
                    + "): a peer that died would never be reported; use 0 to 6 (the default is 6)");
        }
    }

    /** Commits {@code event} (begun, or not for a transition made elsewhere) for a move from {@code from} to {@code to}. */
    private void commit(Jfr.QueuePairState event, QpState from, QpState to) {
        if (event.shouldCommit()) {
            event.device = context.device().name();
            event.qpNumber = qpNum;
            event.type = type.name();
            event.from = from == null ? null : from.name();
            event.to = to.name();
            event.commit();
        }
    }

    /**
     * {@code ibv_query_qp}: the current attributes, state included.
     *
     * @return the attributes, with the mask of those queried
     * @throws IllegalStateException if the queue pair is closed
     * @throws VerbsException        if {@code ibv_query_qp} fails
     */
    public QpAttributes query() {
        QpAttributes result = new QpAttributes();
        int all = QpAttributes.IBV_QP_STATE | QpAttributes.IBV_QP_PKEY_INDEX | QpAttributes.IBV_QP_PORT
                | QpAttributes.IBV_QP_ACCESS_FLAGS | QpAttributes.IBV_QP_PATH_MTU | QpAttributes.IBV_QP_DEST_QPN
                | QpAttributes.IBV_QP_RQ_PSN | QpAttributes.IBV_QP_SQ_PSN | QpAttributes.IBV_QP_AV | QpAttributes.IBV_QP_CAP
                | (type == QpType.UD ? QpAttributes.IBV_QP_QKEY : 0);
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
     *
     * @param options the local port and GID index
     * @return this queue pair's endpoint, to send to the peer out of band
     * @throws IllegalStateException if the context is closed
     * @throws VerbsException        if querying the port or the GID fails, e.g. no such port or GID index
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
     *
     * @param options the port, partition key index, access rights or Q_Key
     * @throws UnsupportedOperationException for a queue pair that is not RC, UC or UD (use
     *                                       {@link #modify(QpAttributes)})
     * @throws IllegalStateException         if the queue pair is closed
     * @throws VerbsException                if {@code ibv_modify_qp} fails, e.g. when the queue pair is past INIT
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
     *
     * @param remote  the peer's endpoint; ignored, and may be null, for UD
     * @param options the path and timer settings
     * @throws NullPointerException     if {@code options} is null, or {@code remote} for RC and UC
     * @throws IllegalArgumentException if the remote has no LID and {@code options} names no GID index
     * @throws IllegalStateException    if the queue pair is closed
     * @throws VerbsException           if {@code ibv_modify_qp} fails, e.g. when not in INIT
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
     *
     * @param options the timeout, retry counts and read/atomic depth
     * @throws IllegalStateException if the queue pair is closed
     * @throws VerbsException        if {@code ibv_modify_qp} fails, e.g. when not in RTR or RTS
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
     *
     * @param remote  the peer's endpoint; null for UD
     * @param options the settings of the three transitions
     * @throws NullPointerException          if {@code options} is null, or {@code remote} for RC and UC
     * @throws UnsupportedOperationException for a queue pair that is not RC, UC or UD
     * @throws IllegalArgumentException      if the remote has no LID and {@code options} names no GID index
     * @throws IllegalStateException         if the queue pair is closed
     * @throws VerbsException                if a transition fails (the queue pair stays in the state it reached)
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
     *
     * @param options the port and partition key index
     * @param qkey    the Q_Key
     * @throws IllegalStateException if this is not a UD queue pair, or it is closed
     * @throws VerbsException        if a transition fails
     */
    public void activateDatagram(ConnectOptions options, int qkey) {
        if (type != QpType.UD) {
            throw new IllegalStateException("activateDatagram is for UD queue pairs; this one is " + type);
        }
        connect(null, Objects.requireNonNull(options, "options").copy().qkey(qkey));
    }

    /**
     * Moves to ERR: outstanding work requests complete with {@link WcStatus#WR_FLUSH_ERR}.
     *
     * @throws IllegalStateException if the queue pair is closed
     * @throws VerbsException        if {@code ibv_modify_qp} fails
     */
    public void toError() {
        modify(new QpAttributes().state(QpState.ERR));
    }

    /**
     * Moves to RESET, from any state: the queues are emptied and the QP can be connected again.
     * Requests still outstanding are dropped without completions: to account for them, move to ERR
     * first ({@link #toError()}) and poll their flushed completions.
     *
     * @throws IllegalStateException if the queue pair is closed
     * @throws VerbsException        if {@code ibv_modify_qp} fails
     */
    public void reset() {
        modify(new QpAttributes().state(QpState.RESET));
    }

    /**
     * {@code ibv_post_send}: posts {@code request} and every request chained after it. Allocates nothing.
     *
     * <p>The buffers the requests name belong to the device until their completions are polled:
     * change, reuse or free them only then (inline data excepted, which is copied when posted). The
     * request objects themselves may be changed and posted again as soon as this returns.
     *
     * @param request the first request of the chain
     * @throws VerbsException        naming the first request that was not posted and why
     * @throws IllegalStateException if this queue pair, a memory region or an address handle of the
     *                               chain is closed, a request's memory was freed, a request on a UD
     *                               queue pair has no destination; if this thread has a {@link SendBatch}
     *                               of this queue pair under way (the post would wait for ever for the
     *                               lock the batch holds); if a request binds a type 2 window that is
     *                               bound, or invalidates ({@code LOCAL_INV}) a key of a type 2 window
     *                               that is not bound under it through this queue pair (see
     *                               {@link MemoryWindow}); or, on SoftiWARP, if the queue pair is known to
     *                               be in ERR (the request would never complete there)
     */
    public void postSend(SendRequest request) {
        postChecked(request, Objects.requireNonNull(request, "request").checkChain(type));
    }

    /** {@link #postSend} of a chain already checked ({@code windows}: whether it binds or invalidates windows). */
    private void postChecked(SendRequest request, boolean windows) {
        checkPostable(true);
        if (windows) {
            postWindowChain(request);
            return;
        }
        int rc;
        try {
            rc = (int) DataPath.POST.invokeExact(postSendFn, ptr(), request.callWr, request.callBadWr);
        } catch (IllegalStateException e) {
            throw closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        } finally {
            Reference.reachabilityFence(request);
        }
        if (rc != 0) {
            throw request.postFailed("ibv_post_send", rc, this, stateHint(true, rc));
        }
    }

    /**
     * A post that binds or invalidates type 2 memory windows: what it does to them is recorded first
     * (refused when the kernel would trip on it) and undone for the requests that were not posted.
     * Serialized per queue pair ({@link #windowLock}), so that what is recorded follows the order in
     * which the requests enter the send queue.
     */
    private void postWindowChain(SendRequest request) {
        windowLock.lock();
        try {
            var changes = request.recordWindowChanges(this);
            int rc;
            try {
                rc = (int) DataPath.POST.invokeExact(postSendFn, ptr(), request.callWr, request.callBadWr);
            } catch (Throwable t) {
                SendRequest.undoFrom(changes, 0);
                throw t instanceof IllegalStateException e ? closed(e) : Native.rethrow(t);
            } finally {
                Reference.reachabilityFence(request);
            }
            if (rc != 0) {
                int failed = Math.max(0, request.failedIndex());
                SendRequest.postedBefore(changes, failed);
                SendRequest.undoFrom(changes, failed);
                throw request.postFailed("ibv_post_send", rc, this, stateHint(true, rc));
            }
            SendRequest.postedBefore(changes, Integer.MAX_VALUE);
        } finally {
            windowLock.unlock();
        }
    }

    /**
     * Refuses, in Java, a post that would hang or never complete: on this thread while its
     * {@link SendBatch} is under way (the provider holds the send queue's lock until complete() or
     * abort(): a post would wait for it for ever), and on SoftiWARP once the queue pair is known to
     * be in ERR (the request would never be flushed: {@link Quirks#SIW_POST_IN_ERROR_NEVER_COMPLETES}).
     */
    private void checkPostable(boolean send) {
        if (send && batch != null && batch.isUnderWayOnThisThread()) {
            throw new IllegalStateException("a SendBatch of " + this + " is under way on this thread (the provider holds "
                    + "the send queue's lock until complete() or abort()): post through the batch, or end it first");
        }
        if (postsInErrNeverComplete && errorSeen && state != QpState.ERR) {
            errorSeen = false;
            query(); // one system call, after an error completion only: the kernel's state
        }
        if (postsInErrNeverComplete && state == QpState.ERR) {
            throw new IllegalStateException(this + " is in ERR (" + (connectionGone ? "its connection is gone" : "moved there")
                    + "): on SoftiWARP a request posted now would never complete; reset and connect it again, or close it");
        }
    }

    /**
     * {@code ibv_attach_mcast}: this UD queue pair receives the datagrams sent to the multicast group
     * {@code gid} (sent with remote QPN {@code 0xFFFFFF}, the group's Q_Key being this queue pair's).
     * Attaching is the device's part only: on InfiniBand the group must also be joined at the subnet
     * manager, and on RoCE v2 the datagrams are IPv4 multicast, which the host drops unless its IP
     * stack is a member of the group on the device's netdev (e.g. a {@code DatagramChannel} joined
     * there). The connection manager's {@code CmId.joinMulticast} does all of it.
     *
     * @param gid the group's GID (on RoCE v2 with IPv4, {@code ::ffff:} and a 224.0.0.0/4 address)
     * @param lid the group's LID (0 on RoCE)
     * @throws IllegalArgumentException if {@code lid} is not in [0, 65535]
     * @throws IllegalStateException    if this queue pair is not UD, or is closed
     * @throws VerbsException           if {@code ibv_attach_mcast} fails (EINVAL: not a multicast GID)
     */
    public void attachMulticast(Gid gid, int lid) {
        multicast("ibv_attach_mcast", ATTACH_MCAST, gid, lid);
    }

    /**
     * {@code ibv_detach_mcast}: stops receiving the datagrams of the group {@link #attachMulticast} joined.
     *
     * @param gid the group's GID
     * @param lid the group's LID
     * @throws IllegalArgumentException if {@code lid} is not in [0, 65535]
     * @throws IllegalStateException    if this queue pair is not UD, or is closed
     * @throws VerbsException           if {@code ibv_detach_mcast} fails (EINVAL or ENOENT: not attached)
     */
    public void detachMulticast(Gid gid, int lid) {
        multicast("ibv_detach_mcast", DETACH_MCAST, gid, lid);
    }

    private void multicast(String verb, MethodHandle h, Gid gid, int lid) {
        Objects.requireNonNull(gid, "gid");
        if (lid < 0 || lid > 0xffff) {
            throw new IllegalArgumentException("lid must be in [0, 65535], not " + lid);
        }
        if (type != QpType.UD) {
            throw new IllegalStateException(verb + " needs a UD queue pair; " + this + " is " + type);
        }
        MemorySegment q = handle();
        check(verb, Native.NO_HINT, c -> {
            MemorySegment g = c.arena().allocate(16, 8);
            MemorySegment.copy(gid.bytes(), 0, g, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, 16);
            return (int) h.invokeExact(c.errno(), q, g, (short) lid);
        });
    }

    /**
     * {@code ibv_bind_mw}: binds a type 1 {@code window} to {@code length} bytes at {@code offset} in
     * {@code region}, with {@code access} (a subset of {@code REMOTE_READ}, {@code REMOTE_WRITE},
     * {@code REMOTE_ATOMIC}), through this queue pair's send queue. The window gets a new rkey, returned
     * here (and by {@link MemoryWindow#rkey()}); the old one stops working. The bind completes as a
     * {@link WcOpcode#BIND_MW} completion ({@code wrId}; only on error unless {@code signaled}); its
     * rkey may be given to the peer once the bind has completed, or at once if requests the peer sends
     * after this call cannot overtake it (they do not on one RC connection). The region must own its
     * memory (see {@link MemoryWindow}) and have {@link AccessFlag#MW_BIND}.
     *
     * <p>Like an address handle named by a send, {@code region} and {@code window} must not be closed
     * by another thread during this call.
     *
     * @param window   a type 1 window of this queue pair's protection domain
     * @param region   the region it exposes, of the same domain
     * @param offset   where the window starts in {@code region}
     * @param length   the window's length, positive
     * @param access   the rights it grants
     * @param wrId     the work request ID of its completion
     * @param signaled whether it completes also on success
     * @return the window's new rkey
     * @throws IllegalArgumentException  for a type 2 window, another protection domain, a region that
     *                                   does not own its memory, a length that is not positive or a right
     *                                   a window does not grant
     * @throws IndexOutOfBoundsException if the range is not inside {@code region}
     * @throws IllegalStateException     if this queue pair, the window or the region is closed
     * @throws VerbsException            if {@code ibv_bind_mw} fails (EINVAL: not in RTS, or a zero-based
     *                                   window on rxe)
     */
    public int bindMemoryWindow(MemoryWindow window, MemoryRegion region, long offset, long length,
                                Set<AccessFlag> access, long wrId, boolean signaled) {
        Objects.requireNonNull(window, "window");
        checkPostable(true); // ibv_bind_mw posts a bind through the send queue
        return window.bind(this, region, offset, length, access, wrId, signaled);
    }

    /**
     * {@code ibv_post_recv}: posts {@code request} and every request chained after it. Allocates nothing.
     * The buffers belong to the device until the receive's completion is polled; the request objects
     * may be changed and posted again as soon as this returns. Receives may be posted from INIT on.
     *
     * @param request the first request of the chain
     * @throws IllegalStateException if this queue pair receives from a shared receive queue, if it or a
     *                               memory region of the chain is closed, or if the memory of a request
     *                               or of a region was freed
     * @throws VerbsException        naming the first request that was not posted and why (ENOMEM: the
     *                               receive queue is full)
     */
    public void postReceive(ReceiveRequest request) {
        if (hasSrq) {
            throw new IllegalStateException(this + " receives from a shared receive queue: post there");
        }
        Objects.requireNonNull(request, "request").checkChain(type);
        checkPostable(false);
        int rc;
        try {
            rc = (int) DataPath.POST.invokeExact(postRecvFn, ptr(), request.callWr, request.callBadWr);
        } catch (IllegalStateException e) {
            throw closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        } finally {
            Reference.reachabilityFence(request);
        }
        if (rc != 0) {
            throw request.postFailed("ibv_post_recv", rc, this, stateHint(false, rc));
        }
    }

    /**
     * The calling thread's view of this queue pair: its {@link Confined#postSend} and
     * {@link Confined#postReceive} pass the queue pair and a request in memory the GC frees as plain
     * addresses (no arena is acquired), and only this thread may use or close it. This queue pair
     * cannot close while the view is open: close the view first, in the thread that made it
     * (try-with-resources); a view whose thread has ended is closed by this queue pair's close. One
     * view per posting thread is the usual shape (thread per queue).
     *
     * @return the view, confined to the calling thread
     * @throws IllegalStateException if this queue pair is closed
     */
    public Confined confined() {
        return new Confined(this);
    }

    /**
     * A view of a queue pair confined to one thread, for the fastest posts: see
     * {@link QueuePair#confined()}. Every call from another thread, or after {@link #close()}, throws
     * {@link IllegalStateException}; otherwise each call does what the queue pair's own method does.
     */
    public static final class Confined extends ConfinedView {
        private final QueuePair qp;
        private final long address;

        private Confined(QueuePair qp) {
            super(qp, ibv_qp.sizeof());
            this.qp = qp;
            this.address = qp.ptr().address();
        }

        /**
         * {@link QueuePair#postSend}, from the owner thread.
         *
         * @param request the first request of the chain
         * @throws IllegalStateException if called by another thread or the view is closed; else as {@link QueuePair#postSend}
         * @throws VerbsException        as {@link QueuePair#postSend}
         */
        public void postSend(SendRequest request) {
            check();
            qp.postSendConfined(address, request);
        }

        /**
         * {@link QueuePair#postReceive}, from the owner thread.
         *
         * @param request the first request of the chain
         * @throws IllegalStateException if called by another thread or the view is closed; else as {@link QueuePair#postReceive}
         * @throws VerbsException        as {@link QueuePair#postReceive}
         */
        public void postReceive(ReceiveRequest request) {
            check();
            qp.postReceiveConfined(address, request);
        }

        /** {@return the queue pair} */
        public QueuePair queuePair() {
            return qp;
        }

        @Override
        public String toString() {
            return "QueuePair.Confined[" + qp.context.device().name() + ", qpn 0x" + Integer.toHexString(qp.qpNum) + ", "
                    + threadName(owner()) + "]";
        }
    }

    /** {@link Confined#postSend}: the queue pair at {@code address} is open while its view is. */
    void postSendConfined(long address, SendRequest request) {
        boolean windows = request.checkChain(type);
        if (windows || request.callWrAddress == 0) {
            postChecked(request, windows); // windows are recorded under a lock; a caller's arena is checked by FFM
            return;
        }
        checkPostable(true);
        int rc = postRaw(postSendFn, address, request);
        if (rc != 0) {
            throw request.postFailed("ibv_post_send", rc, this, stateHint(true, rc));
        }
    }

    /** {@link Confined#postReceive}: the queue pair at {@code address} is open while its view is. */
    void postReceiveConfined(long address, ReceiveRequest request) {
        if (hasSrq || request.callWrAddress == 0) {
            postReceive(request);
            return;
        }
        request.checkChain(type);
        checkPostable(false);
        int rc = postRaw(postRecvFn, address, request);
        if (rc != 0) {
            throw request.postFailed("ibv_post_recv", rc, this, stateHint(false, rc));
        }
    }

    /** A confined view's post of {@code request} (memory the GC frees) through {@code fn}: critical where {@link #criticalPosts}. */
    private int postRaw(MemorySegment fn, long address, WorkRequest<?> request) {
        try {
            return criticalPosts
                    ? (int) DataPath.POST_RAW_CRITICAL.invokeExact(fn, address, request.callWrAddress, request.callBadWrAddress)
                    : (int) DataPath.POST_RAW.invokeExact(fn, address, request.callWrAddress, request.callBadWrAddress);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        } finally {
            Reference.reachabilityFence(request);
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

    /** Its connection is gone (a DISCONNECTED event): moves it to ERR, so that what is outstanding is flushed. */
    void connectionGone() {
        connectionGone = true;
        if (state != QpState.ERR) {
            toError();
        }
    }

    /** A state librdmacm moved this queue pair to. */
    void stateChanged(QpState newState) {
        QpState from = state;
        state = newState;
        commit(new Jfr.QueuePairState(), from, newState);
    }

    @Override
    void destroy(MemorySegment address) {
        if (destroyer != null) {
            destroyer.accept(address);
        } else {
            Native.check("ibv_destroy_qp", Native.NO_HINT, c -> (int) DESTROY.invokeExact(c.errno(), address));
        }
        context.unregister(address.address());
        context.unregisterNumber(this, qpNum);
    }

    @Override
    public String toString() {
        return "QueuePair[" + type + " qpn=0x" + Integer.toHexString(qpNum) + "]";
    }
}
