package io.github.panamaverbs.verbs;

import java.util.Objects;

/**
 * What a queue pair is created with: {@code struct ibv_qp_init_attr}, for
 * {@link ProtectionDomain#createQueuePair(QpInitAttributes)}. Defaults: 16 send and 16 receive work
 * requests, one SGE each, no inline data, only signaled sends complete.
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

    /** A queue pair of {@code type} reporting to {@code sendCq} and {@code recvCq} (may be the same). */
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

    /** The transport type. */
    public QpType type() {
        return type;
    }

    /** {@code cap.max_send_wr}. */
    public QpInitAttributes maxSendWr(int n) {
        this.maxSendWr = positive("maxSendWr", n);
        return this;
    }

    /** {@code cap.max_recv_wr}. */
    public QpInitAttributes maxRecvWr(int n) {
        this.maxRecvWr = positive("maxRecvWr", n);
        return this;
    }

    /** {@code cap.max_send_sge}. */
    public QpInitAttributes maxSendSge(int n) {
        this.maxSendSge = positive("maxSendSge", n);
        return this;
    }

    /** {@code cap.max_recv_sge}. */
    public QpInitAttributes maxRecvSge(int n) {
        this.maxRecvSge = positive("maxRecvSge", n);
        return this;
    }

    /** {@code cap.max_inline_data}. */
    public QpInitAttributes maxInlineData(int n) {
        this.maxInlineData = positive("maxInlineData", n);
        return this;
    }

    /** {@code sq_sig_all}: every send produces a completion, whatever its flags. */
    public QpInitAttributes signalAll(boolean on) {
        this.sqSigAll = on;
        return this;
    }

    /** {@code srq}: receive from a shared receive queue instead of an own one; null for none. */
    public QpInitAttributes sharedReceiveQueue(SharedReceiveQueue srq) {
        this.srq = srq;
        return this;
    }
}
