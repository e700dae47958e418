package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_qp;
import io.github.panamaverbs.bindings.ibv_qp_attr;
import io.github.panamaverbs.bindings.ibv_qp_cap;
import io.github.panamaverbs.bindings.ibv_qp_init_attr;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.security.SecureRandom;

/**
 * A queue pair ({@code struct ibv_qp}): a send queue and a receive queue, the endpoint of RDMA
 * communication. Created in state RESET by {@link ProtectionDomain#createQueuePair(Config)}; a
 * connected (RC, UC) queue pair is brought to RTS with {@link #connect(RemoteEndpoint, ConnectOptions)}
 * once the peer's {@link RemoteEndpoint} is known, a UD one with {@link #activateDatagram(ConnectOptions, int)}.
 *
 * <pre>{@code
 * QueuePair qp = pd.createQueuePair(new QueuePair.Config(QpType.RC, cq, cq));
 * ConnectOptions how = ConnectOptions.port(1).gidIndex(1);
 * RemoteEndpoint mine = qp.localEndpoint(how);   // send to the peer, out of band
 * qp.connect(peers, how);                        // RESET -> INIT -> RTR -> RTS
 * qp.postSend(request);
 * }</pre>
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

    /**
     * What to create: {@code struct ibv_qp_init_attr}. Defaults: 16 send and 16 receive work requests,
     * one SGE each, no inline data, only signaled sends complete.
     */
    public static final class Config {
        final QpType type;
        final CompletionQueue sendCq;
        final CompletionQueue recvCq;
        SharedReceiveQueue srq;
        int maxSendWr = 16;
        int maxRecvWr = 16;
        int maxSendSge = 1;
        int maxRecvSge = 1;
        int maxInlineData;
        boolean sqSigAll;

        /** A queue pair of {@code type} reporting to {@code sendCq} and {@code recvCq} (may be the same). */
        public Config(QpType type, CompletionQueue sendCq, CompletionQueue recvCq) {
            if (type == null || sendCq == null || recvCq == null) {
                throw new IllegalArgumentException("type, sendCq and recvCq are required");
            }
            this.type = type;
            this.sendCq = sendCq;
            this.recvCq = recvCq;
        }

        /** {@code cap.max_send_wr}. */
        public Config maxSendWr(int n) {
            this.maxSendWr = n;
            return this;
        }

        /** {@code cap.max_recv_wr}. */
        public Config maxRecvWr(int n) {
            this.maxRecvWr = n;
            return this;
        }

        /** {@code cap.max_send_sge}. */
        public Config maxSendSge(int n) {
            this.maxSendSge = n;
            return this;
        }

        /** {@code cap.max_recv_sge}. */
        public Config maxRecvSge(int n) {
            this.maxRecvSge = n;
            return this;
        }

        /** {@code cap.max_inline_data}. */
        public Config maxInlineData(int n) {
            this.maxInlineData = n;
            return this;
        }

        /** {@code sq_sig_all}: every send produces a completion, whatever its flags. */
        public Config signalAll(boolean on) {
            this.sqSigAll = on;
            return this;
        }

        /** {@code srq}: receive from a shared receive queue instead of an own one. */
        public Config sharedReceiveQueue(SharedReceiveQueue srq) {
            this.srq = srq;
            return this;
        }
    }

    /**
     * What the device granted ({@code cap} after {@code ibv_create_qp}: at least what was asked).
     *
     * @param maxSendWr     send queue depth
     * @param maxRecvWr     receive queue depth
     * @param maxSendSge    SGEs per send
     * @param maxRecvSge    SGEs per receive
     * @param maxInlineData bytes that may be sent inline
     */
    public record Capabilities(int maxSendWr, int maxRecvWr, int maxSendSge, int maxRecvSge, int maxInlineData) {
    }

    private final ProtectionDomain pd;
    private final Context context;
    private final QpType type;
    private final Capabilities capabilities;
    private final MemorySegment qp;
    private final MemorySegment postSendFn;
    private final MemorySegment postRecvFn;
    private final int qpNum;
    private final int psn = RANDOM.nextInt() & 0xffffff;
    private final boolean hasSrq;
    private volatile QpState state = QpState.RESET;

    QueuePair(ProtectionDomain pd, Config config) {
        this(pd, config, new Capabilities[1]);
    }

    private QueuePair(ProtectionDomain pd, Config config, Capabilities[] granted) {
        super(create(pd, config, granted), ibv_qp.sizeof(), pd, config.sendCq, config.recvCq, config.srq);
        this.pd = pd;
        this.context = pd.context();
        this.type = config.type;
        this.capabilities = granted[0];
        this.qp = handle();
        this.qpNum = ibv_qp.qp_num(qp);
        this.hasSrq = config.srq != null;
        this.postSendFn = DataPath.op(context, DataPath.POST_SEND);
        this.postRecvFn = DataPath.op(context, DataPath.POST_RECV);
        context.register(this, qp.address());
    }

    private static MemorySegment create(ProtectionDomain pd, Config c, Capabilities[] granted) {
        MemorySegment pdHandle = checkOpen(pd);
        for (Resource r : new Resource[] {c.sendCq, c.recvCq, c.srq}) {
            if (r != null) {
                checkOpen(r);
            }
        }
        try (Arena call = Arena.ofConfined()) {
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
            MemorySegment errno = Native.errnoSegment(call);
            MemorySegment qp = (MemorySegment) CREATE.invokeExact(errno, pdHandle, init);
            if (qp.address() == 0) {
                int e = Native.errno(errno);
                throw new VerbsException("ibv_create_qp", e, e == Errno.EINVAL
                        ? "a capability exceeds the device's limits (max_qp_wr, max_sge, inline) or " + c.type
                        + " is not supported" : Native.hint("ibv_create_qp", e));
            }
            granted[0] = new Capabilities(ibv_qp_cap.max_send_wr(cap), ibv_qp_cap.max_recv_wr(cap),
                    ibv_qp_cap.max_send_sge(cap), ibv_qp_cap.max_recv_sge(cap), ibv_qp_cap.max_inline_data(cap));
            return qp;
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
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
    public Capabilities capabilities() {
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
        if (attributes.mask == 0) {
            throw new IllegalArgumentException("no attribute set");
        }
        MemorySegment q = handle();
        try (Arena call = Arena.ofConfined()) {
            MemorySegment errno = Native.errnoSegment(call);
            int rc = (int) MODIFY.invokeExact(errno, q, attributes.attr, attributes.mask);
            if (rc != 0) {
                int e = rc > 0 ? rc : Native.errno(errno);
                String to = (attributes.mask & Verbs.IBV_QP_STATE()) != 0 ? " to " + attributes.state() : "";
                throw new VerbsException("ibv_modify_qp", e, "moving " + this + " from " + state + to
                        + " failed (mask 0x" + Integer.toHexString(attributes.mask) + ")"
                        + (e == Errno.EINVAL ? ": an attribute or the mask is not valid for this transition" : ""));
            }
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
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
        try (Arena call = Arena.ofConfined()) {
            MemorySegment init = call.allocate(ibv_qp_init_attr.layout());
            MemorySegment errno = Native.errnoSegment(call);
            int rc = (int) QUERY.invokeExact(errno, q, result.attr, all, init);
            Native.check("ibv_query_qp", rc, errno);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
        result.mask = all;
        state = result.state();
        return result;
    }

    /**
     * What the peer needs to connect to this queue pair: the port's LID, this QP's number and first
     * PSN, and the GID at {@code options.gidIndex()} (zero when it is -1).
     */
    public RemoteEndpoint localEndpoint(ConnectOptions options) {
        int lid = context.queryPort(options.port).lid();
        Gid gid = options.gidIndex >= 0 ? context.queryGid(options.port, options.gidIndex) : Gid.ZERO;
        return new RemoteEndpoint(lid, qpNum, psn, gid);
    }

    /** RESET → INIT: port, partition key index and, for RC/UC, the remote access rights. */
    public void init(ConnectOptions options) {
        QpAttributes a = new QpAttributes().state(QpState.INIT).pkeyIndex(options.pkeyIndex).port(options.port);
        if (type == QpType.UD) {
            throw new IllegalStateException("use activateDatagram for UD queue pairs");
        }
        a.accessFlags(options.access != null ? options.access : QpAttributes.remoteAccess(type));
        modify(a);
    }

    /**
     * Connects an RC or UC queue pair to {@code remote}: RESET → INIT → RTR → RTS (from INIT if it is
     * there already, for receives posted early). Uses a GRH when {@code options} names a GID index
     * (RoCE) or the remote has no LID.
     */
    public void connect(RemoteEndpoint remote, ConnectOptions options) {
        if (type != QpType.RC && type != QpType.UC) {
            throw new IllegalStateException("connect is for RC and UC queue pairs; this one is " + type);
        }
        if (state == QpState.RESET) {
            init(options);
        }
        AddressVector av;
        if (options.gidIndex >= 0) {
            av = new AddressVector(options.port, remote.lid(), options.serviceLevel, 0, 0, new AddressVector.GlobalRoute(
                    remote.gid(), options.gidIndex, options.hopLimit, options.trafficClass, 0));
        } else if (remote.lid() == 0) {
            throw new IllegalArgumentException("the remote has no LID (RoCE?): set ConnectOptions.gidIndex");
        } else {
            av = AddressVector.ib(options.port, remote.lid(), options.serviceLevel);
        }
        QpAttributes rtr = new QpAttributes().state(QpState.RTR).pathMtu(options.mtu).destQpNum(remote.qpn())
                .rqPsn(remote.psn()).addressVector(av);
        if (type == QpType.RC) {
            rtr.maxDestRdAtomic(options.maxDestRdAtomic).minRnrTimer(options.minRnrTimer);
        }
        modify(rtr);
        QpAttributes rts = new QpAttributes().state(QpState.RTS).sqPsn(psn);
        if (type == QpType.RC) {
            rts.timeout(options.timeout).retryCount(options.retryCount).rnrRetry(options.rnrRetry)
                    .maxRdAtomic(options.maxRdAtomic);
        }
        modify(rts);
    }

    /** Brings a UD queue pair to RTS: RESET → INIT (port, Q_Key) → RTR → RTS. */
    public void activateDatagram(ConnectOptions options, int qkey) {
        if (type != QpType.UD) {
            throw new IllegalStateException("activateDatagram is for UD queue pairs; this one is " + type);
        }
        modify(new QpAttributes().state(QpState.INIT).pkeyIndex(options.pkeyIndex).port(options.port).qkey(qkey));
        modify(new QpAttributes().state(QpState.RTR));
        modify(new QpAttributes().state(QpState.RTS).sqPsn(psn));
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
     * @throws VerbsException        naming the first request that was not posted and why
     * @throws IllegalStateException if this queue pair, a memory region or an address handle of the chain is closed
     */
    public void postSend(SendRequest request) {
        request.checkChain();
        int rc;
        try {
            rc = (int) DataPath.POST.invokeExact(postSendFn, qp, request.segment, request.badWr);
        } catch (IllegalStateException e) {
            throw closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
        if (rc != 0) {
            throw postFailed("ibv_post_send", rc, badIndex(request.badWr, request.indexOf(request.badWr.get(ADDRESS, 0).address())));
        }
    }

    /**
     * {@code ibv_post_recv}: posts {@code request} and every request chained after it. Allocates nothing.
     */
    public void postReceive(ReceiveRequest request) {
        if (hasSrq) {
            throw new IllegalStateException(this + " receives from a shared receive queue: post there");
        }
        request.checkChain();
        int rc;
        try {
            rc = (int) DataPath.POST.invokeExact(postRecvFn, qp, request.segment, request.badWr);
        } catch (IllegalStateException e) {
            throw closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
        if (rc != 0) {
            throw postFailed("ibv_post_recv", rc, badIndex(request.badWr, request.indexOf(request.badWr.get(ADDRESS, 0).address())));
        }
    }

    /**
     * The index bad_wr named, clearing the slot: a provider that fails in its doorbell (rxe on a QP
     * not in RTS) names no request, and a stale pointer must not be read next time.
     */
    static int badIndex(MemorySegment badWr, int index) {
        badWr.set(ADDRESS, 0, MemorySegment.NULL);
        return index;
    }

    private VerbsException postFailed(String verb, int rc, int index) {
        int e = Math.abs(rc);
        String why = switch (state) {
            case RESET, INIT -> verb.equals("ibv_post_send") ? "; the queue pair is in " + state + ", sends need RTS" : "";
            case ERR -> "; the queue pair is in ERR";
            default -> e == Errno.ENOMEM ? "; the queue is full (more outstanding requests than its depth)"
                    : e == Errno.EINVAL ? "; too many SGEs, inline data too long, or an opcode this QP type lacks" : "";
        };
        return postFailed(verb, e, index, this, why);
    }

    /** The exception for a failed post on {@code target}: which request of the chain, and why. */
    static VerbsException postFailed(String verb, int errno, int index, Resource target, String why) {
        return new VerbsException(verb, errno, (index >= 0 ? "work request #" + index
                + " of the chain and those after it were not posted on " : "the provider did not say which work request failed on ")
                + target + why);
    }

    private IllegalStateException closed(IllegalStateException cause) {
        return isOpen() ? cause : new IllegalStateException(this + " is closed", cause);
    }

    @Override
    void destroy(MemorySegment address) {
        context.unregister(address.address());
        Native.destroy("ibv_destroy_qp", DESTROY, address);
    }

    @Override
    public String toString() {
        return "QueuePair[" + type + " qpn=0x" + Integer.toHexString(qpNum) + "]";
    }
}
