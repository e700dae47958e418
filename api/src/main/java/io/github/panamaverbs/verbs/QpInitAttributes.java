package io.github.panamaverbs.verbs;

import java.util.Objects;

/**
 * What a queue pair is created with: {@code struct ibv_qp_init_attr}, for
 * {@link ProtectionDomain#createQueuePair(QpInitAttributes)}. Defaults: 16 send and 16 receive work
 * requests, one SGE each, no inline data, only signaled sends complete. The device may grant more
 * than asked: see {@link QueuePair#capabilities()}. Not thread-safe: fill it in one thread.
 *
 * <pre>{@code
 * QueuePair qp = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq).maxSendWr(64).maxInlineData(64));
 * }</pre>
 */
public final class QpInitAttributes {
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
    /** The operations of the ibv_wr_* API (ibv_create_qp_ex's send_ops_flags); null for a classic queue pair. */
    java.util.Set<SendOpcode> sendOps;

    /**
     * A queue pair of {@code type} reporting to {@code sendCq} and {@code recvCq} (may be the same).
     *
     * @param type   the transport type
     * @param sendCq the completion queue of the send queue
     * @param recvCq the completion queue of the receive queue
     */
    public QpInitAttributes(QpType type, CompletionQueue sendCq, CompletionQueue recvCq) {
        this.type = Objects.requireNonNull(type, "type");
        this.sendCq = Objects.requireNonNull(sendCq, "sendCq");
        this.recvCq = Objects.requireNonNull(recvCq, "recvCq");
    }

    private static int positive(String field, int n) {
        if (n < 0) {
            throw new IllegalArgumentException(field + " must not be negative, not " + n);
        }
        return n;
    }

    /** {@return the transport type} */
    public QpType type() {
        return type;
    }

    /**
     * {@code cap.max_send_wr}: the depth of the send queue, the most sends outstanding.
     *
     * @param n the number of work requests
     * @return these attributes
     * @throws IllegalArgumentException if {@code n} is negative
     */
    public QpInitAttributes maxSendWr(int n) {
        this.maxSendWr = positive("maxSendWr", n);
        return this;
    }

    /**
     * {@code cap.max_recv_wr}: the depth of the receive queue (ignored with a shared receive queue).
     *
     * @param n the number of work requests
     * @return these attributes
     * @throws IllegalArgumentException if {@code n} is negative
     */
    public QpInitAttributes maxRecvWr(int n) {
        this.maxRecvWr = positive("maxRecvWr", n);
        return this;
    }

    /**
     * {@code cap.max_send_sge}: the most scatter/gather entries per send.
     *
     * @param n the number of entries
     * @return these attributes
     * @throws IllegalArgumentException if {@code n} is negative
     */
    public QpInitAttributes maxSendSge(int n) {
        this.maxSendSge = positive("maxSendSge", n);
        return this;
    }

    /**
     * {@code cap.max_recv_sge}: the most scatter/gather entries per receive (ignored with a shared
     * receive queue).
     *
     * @param n the number of entries
     * @return these attributes
     * @throws IllegalArgumentException if {@code n} is negative
     */
    public QpInitAttributes maxRecvSge(int n) {
        this.maxRecvSge = positive("maxRecvSge", n);
        return this;
    }

    /**
     * {@code cap.max_inline_data}: the most bytes a send may carry inline.
     *
     * @param n the number of bytes
     * @return these attributes
     * @throws IllegalArgumentException if {@code n} is negative
     */
    public QpInitAttributes maxInlineData(int n) {
        this.maxInlineData = positive("maxInlineData", n);
        return this;
    }

    /**
     * {@code sq_sig_all}: every send produces a completion, whatever its flags.
     *
     * @param on whether every send is signaled
     * @return these attributes
     */
    public QpInitAttributes signalAll(boolean on) {
        this.sqSigAll = on;
        return this;
    }

    /**
     * {@code srq}: receive from a shared receive queue instead of an own one.
     *
     * @param srq the shared receive queue, of the same context; null for none
     * @return these attributes
     */
    public QpInitAttributes sharedReceiveQueue(SharedReceiveQueue srq) {
        this.srq = srq;
        return this;
    }

    /**
     * {@code send_ops_flags}: create the queue pair with {@code ibv_create_qp_ex} so that it also posts
     * through the {@code ibv_wr_*} API ({@link QueuePair#sendBatch()}) with these operations, and only
     * these. {@code postSend} keeps working.
     *
     * @param ops the operations, at least one; {@code TSO}, {@code DRIVER1} and {@code ATOMIC_WRITE}
     *            are not offered by the batch API
     * @return these attributes
     * @throws NullPointerException     if {@code ops} or one of them is null
     * @throws IllegalArgumentException if {@code ops} is empty or names an operation the batch API does not offer
     */
    public QpInitAttributes sendOps(java.util.Set<SendOpcode> ops) {
        java.util.EnumSet<SendOpcode> copy = java.util.EnumSet.noneOf(SendOpcode.class);
        for (SendOpcode op : java.util.Objects.requireNonNull(ops, "ops")) {
            copy.add(java.util.Objects.requireNonNull(op, "an operation"));
        }
        if (copy.isEmpty()) {
            throw new IllegalArgumentException("sendOps needs at least one operation");
        }
        for (SendOpcode op : copy) {
            if (SendBatch.opFlag(op) == 0) {
                throw new IllegalArgumentException(op + " is not offered by the ibv_wr_* batch API here");
            }
        }
        this.sendOps = java.util.Set.copyOf(copy);
        return this;
    }
}
