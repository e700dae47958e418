package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.ibv_qp_attr;
import io.github.panamaverbs.bindings.ibv_qp_cap;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * Queue pair attributes for {@link QueuePair#modify(QpAttributes)}: {@code struct ibv_qp_attr} and its
 * attribute mask. Every setter also sets its mask bit, so a caller can never forget one; only what
 * was set is passed to {@code ibv_modify_qp}. {@link QueuePair#query()} returns one filled in.
 *
 * <pre>{@code
 * qp.modify(new QpAttributes().state(QpState.INIT).pkeyIndex(0).port(1)
 *         .accessFlags(EnumSet.of(AccessFlag.REMOTE_WRITE)));
 * }</pre>
 */
public final class QpAttributes {
    // enum ibv_qp_attr_mask: the C ABI's bits, written out so that setting attributes needs no rdma-core
    // (EnumValuesTest checks them against the bindings).
    static final int IBV_QP_STATE = 1;
    static final int IBV_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2;
    static final int IBV_QP_ACCESS_FLAGS = 1 << 3;
    static final int IBV_QP_PKEY_INDEX = 1 << 4;
    static final int IBV_QP_PORT = 1 << 5;
    static final int IBV_QP_QKEY = 1 << 6;
    static final int IBV_QP_AV = 1 << 7;
    static final int IBV_QP_PATH_MTU = 1 << 8;
    static final int IBV_QP_TIMEOUT = 1 << 9;
    static final int IBV_QP_RETRY_CNT = 1 << 10;
    static final int IBV_QP_RNR_RETRY = 1 << 11;
    static final int IBV_QP_RQ_PSN = 1 << 12;
    static final int IBV_QP_MAX_QP_RD_ATOMIC = 1 << 13;
    static final int IBV_QP_MIN_RNR_TIMER = 1 << 15;
    static final int IBV_QP_SQ_PSN = 1 << 16;
    static final int IBV_QP_MAX_DEST_RD_ATOMIC = 1 << 17;
    static final int IBV_QP_CAP = 1 << 19;
    static final int IBV_QP_DEST_QPN = 1 << 20;

    final MemorySegment attr;
    int mask;

    /**
     * Empty attributes: nothing set. Not thread-safe: fill them in one thread, then pass them to
     * {@link QueuePair#modify(QpAttributes)}.
     */
    public QpAttributes() {
        attr = Arena.ofAuto().allocate(ibv_qp_attr.layout());
    }

    /** {@return the {@code enum ibv_qp_attr_mask} bits set so far} */
    public int mask() {
        return mask;
    }

    private QpAttributes set(int bit) {
        mask |= bit;
        return this;
    }

    /**
     * {@code qp_state} ({@code IBV_QP_STATE}): the state to move to.
     *
     * @param state the state to move to
     * @return these attributes
     */
    public QpAttributes state(QpState state) {
        ibv_qp_attr.qp_state(attr, Objects.requireNonNull(state, "state").value);
        return set(IBV_QP_STATE);
    }

    /** {@return {@code qp_state}: the state set, or queried} */
    public QpState state() {
        return QpState.of(ibv_qp_attr.qp_state(attr));
    }

    /**
     * {@code pkey_index} ({@code IBV_QP_PKEY_INDEX}).
     *
     * @param index the partition key index
     * @return these attributes
     */
    public QpAttributes pkeyIndex(int index) {
        ibv_qp_attr.pkey_index(attr, (short) index);
        return set(IBV_QP_PKEY_INDEX);
    }

    /**
     * {@code port_num} ({@code IBV_QP_PORT}).
     *
     * @param port the port number, from 1
     * @return these attributes
     */
    public QpAttributes port(int port) {
        ibv_qp_attr.port_num(attr, (byte) port);
        return set(IBV_QP_PORT);
    }

    /** {@return {@code port_num}: the port number} */
    public int port() {
        return Byte.toUnsignedInt(ibv_qp_attr.port_num(attr));
    }

    /**
     * {@code qp_access_flags} ({@code IBV_QP_ACCESS_FLAGS}): which remote operations peers may do.
     *
     * @param flags the remote operations allowed ({@code REMOTE_WRITE}, {@code REMOTE_READ}, {@code REMOTE_ATOMIC})
     * @return these attributes
     */
    public QpAttributes accessFlags(Set<AccessFlag> flags) {
        ibv_qp_attr.qp_access_flags(attr, AccessFlag.mask(Objects.requireNonNull(flags, "flags")));
        return set(IBV_QP_ACCESS_FLAGS);
    }

    /** {@return {@code qp_access_flags}: the remote operations allowed} */
    public Set<AccessFlag> accessFlags() {
        return AccessFlag.of(ibv_qp_attr.qp_access_flags(attr));
    }

    /**
     * {@code qkey} ({@code IBV_QP_QKEY}): UD only.
     *
     * @param qkey the Q_Key
     * @return these attributes
     */
    public QpAttributes qkey(int qkey) {
        ibv_qp_attr.qkey(attr, qkey);
        return set(IBV_QP_QKEY);
    }

    /** {@return {@code qkey}: the Q_Key (UD)} */
    public int qkey() {
        return ibv_qp_attr.qkey(attr);
    }

    /**
     * {@code path_mtu} ({@code IBV_QP_PATH_MTU}).
     *
     * @param mtu the path MTU, at most the port's active MTU
     * @return these attributes
     */
    public QpAttributes pathMtu(Mtu mtu) {
        ibv_qp_attr.path_mtu(attr, Objects.requireNonNull(mtu, "mtu").value);
        return set(IBV_QP_PATH_MTU);
    }

    /** {@return {@code path_mtu}: the path MTU} */
    public Mtu pathMtu() {
        return Mtu.of(ibv_qp_attr.path_mtu(attr));
    }

    /**
     * {@code dest_qp_num} ({@code IBV_QP_DEST_QPN}).
     *
     * @param qpn the peer's queue pair number
     * @return these attributes
     */
    public QpAttributes destQpNum(int qpn) {
        ibv_qp_attr.dest_qp_num(attr, qpn);
        return set(IBV_QP_DEST_QPN);
    }

    /** {@return {@code dest_qp_num}: the peer's queue pair number} */
    public int destQpNum() {
        return ibv_qp_attr.dest_qp_num(attr);
    }

    /**
     * {@code rq_psn} ({@code IBV_QP_RQ_PSN}): the first PSN expected from the peer.
     *
     * @param psn the peer's first PSN (24 bits)
     * @return these attributes
     */
    public QpAttributes rqPsn(int psn) {
        ibv_qp_attr.rq_psn(attr, psn);
        return set(IBV_QP_RQ_PSN);
    }

    /** {@return {@code rq_psn}: the first PSN expected from the peer} */
    public int rqPsn() {
        return ibv_qp_attr.rq_psn(attr);
    }

    /**
     * {@code sq_psn} ({@code IBV_QP_SQ_PSN}): the first PSN sent.
     *
     * @param psn this queue pair's first PSN (24 bits)
     * @return these attributes
     */
    public QpAttributes sqPsn(int psn) {
        ibv_qp_attr.sq_psn(attr, psn);
        return set(IBV_QP_SQ_PSN);
    }

    /** {@return {@code sq_psn}: the first PSN sent} */
    public int sqPsn() {
        return ibv_qp_attr.sq_psn(attr);
    }

    /**
     * {@code max_dest_rd_atomic} ({@code IBV_QP_MAX_DEST_RD_ATOMIC}): incoming reads/atomics in flight.
     *
     * @param n the depth, 0 to 255
     * @return these attributes
     */
    public QpAttributes maxDestRdAtomic(int n) {
        ibv_qp_attr.max_dest_rd_atomic(attr, (byte) n);
        return set(IBV_QP_MAX_DEST_RD_ATOMIC);
    }

    /**
     * {@code max_rd_atomic} ({@code IBV_QP_MAX_QP_RD_ATOMIC}): outgoing reads/atomics in flight.
     *
     * @param n the depth, 0 to 255
     * @return these attributes
     */
    public QpAttributes maxRdAtomic(int n) {
        ibv_qp_attr.max_rd_atomic(attr, (byte) n);
        return set(IBV_QP_MAX_QP_RD_ATOMIC);
    }

    /**
     * {@code min_rnr_timer} ({@code IBV_QP_MIN_RNR_TIMER}).
     *
     * @param timer the timer code, 0 to 31 (an index into the IB spec's table of delays)
     * @return these attributes
     */
    public QpAttributes minRnrTimer(int timer) {
        ibv_qp_attr.min_rnr_timer(attr, (byte) timer);
        return set(IBV_QP_MIN_RNR_TIMER);
    }

    /**
     * {@code timeout} ({@code IBV_QP_TIMEOUT}): the ack timeout, 4.096 µs × 2^timeout.
     *
     * @param timeout the exponent, 0 to 31 (0: wait forever)
     * @return these attributes
     */
    public QpAttributes timeout(int timeout) {
        ibv_qp_attr.timeout(attr, (byte) timeout);
        return set(IBV_QP_TIMEOUT);
    }

    /**
     * {@code retry_cnt} ({@code IBV_QP_RETRY_CNT}).
     *
     * @param n the transport retries, 0 to 7 (Soft-RoCE retries for ever with 7, so
     *          {@link QueuePair#modify} refuses 7 there)
     * @return these attributes
     */
    public QpAttributes retryCount(int n) {
        ibv_qp_attr.retry_cnt(attr, (byte) n);
        return set(IBV_QP_RETRY_CNT);
    }

    /**
     * {@code rnr_retry} ({@code IBV_QP_RNR_RETRY}); 7 means forever.
     *
     * @param n the receiver-not-ready retries, 0 to 7
     * @return these attributes
     */
    public QpAttributes rnrRetry(int n) {
        ibv_qp_attr.rnr_retry(attr, (byte) n);
        return set(IBV_QP_RNR_RETRY);
    }

    /**
     * {@code en_sqd_async_notify} ({@code IBV_QP_EN_SQD_ASYNC_NOTIFY}): report SQ_DRAINED when moving to SQD.
     *
     * @param on whether to report it
     * @return these attributes
     */
    public QpAttributes sqDrainedNotify(boolean on) {
        ibv_qp_attr.en_sqd_async_notify(attr, (byte) (on ? 1 : 0));
        return set(IBV_QP_EN_SQD_ASYNC_NOTIFY);
    }

    /**
     * {@code ah_attr} ({@code IBV_QP_AV}): the path to the peer.
     *
     * @param av the path
     * @return these attributes
     */
    public QpAttributes addressVector(AddressVector av) {
        Objects.requireNonNull(av, "av").writeTo(ibv_qp_attr.ah_attr(attr));
        return set(IBV_QP_AV);
    }

    /** {@return {@code ah_attr}: the path to the peer} */
    public AddressVector addressVector() {
        return AddressVector.readFrom(ibv_qp_attr.ah_attr(attr));
    }

    /** {@return {@code cap.max_send_wr} (read from a query)} */
    public int maxSendWr() {
        return ibv_qp_cap.max_send_wr(ibv_qp_attr.cap(attr));
    }

    /** {@return {@code cap.max_recv_wr} (read from a query)} */
    public int maxRecvWr() {
        return ibv_qp_cap.max_recv_wr(ibv_qp_attr.cap(attr));
    }

    /** {@return {@code cap.max_inline_data} (read from a query)} */
    public int maxInlineData() {
        return ibv_qp_cap.max_inline_data(ibv_qp_attr.cap(attr));
    }

    /** {@return the mask of the fields set, in hex, and the state if it is set} */
    @Override
    public String toString() {
        return "QpAttributes[mask=0x" + Integer.toHexString(mask) + (mask != 0 && (mask & IBV_QP_STATE) != 0
                ? ", state=" + state() : "") + "]";
    }

    static Set<AccessFlag> remoteAccess(QpType type) {
        return type == QpType.UC ? EnumSet.of(AccessFlag.REMOTE_WRITE)
                : EnumSet.of(AccessFlag.REMOTE_WRITE, AccessFlag.REMOTE_READ, AccessFlag.REMOTE_ATOMIC);
    }
}
