package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.internal.CEnum;

/** Queue pair state: {@code enum ibv_qp_state}. */
public enum QpState {
    /** {@code IBV_QPS_RESET}: just created, or reset: nothing can be posted */
    RESET(Verbs.IBV_QPS_RESET()),
    /** {@code IBV_QPS_INIT}: receives may be posted */
    INIT(Verbs.IBV_QPS_INIT()),
    /** {@code IBV_QPS_RTR}: ready to receive */
    RTR(Verbs.IBV_QPS_RTR()),
    /** {@code IBV_QPS_RTS}: ready to send */
    RTS(Verbs.IBV_QPS_RTS()),
    /** {@code IBV_QPS_SQD} */
    SQD(Verbs.IBV_QPS_SQD()),
    /** {@code IBV_QPS_SQE} */
    SQE(Verbs.IBV_QPS_SQE()),
    /** {@code IBV_QPS_ERR}: error: outstanding work requests complete with WR_FLUSH_ERR */
    ERR(Verbs.IBV_QPS_ERR()),
    /** {@code IBV_QPS_UNKNOWN} */
    UNKNOWN(Verbs.IBV_QPS_UNKNOWN());

    private static final CEnum<QpState> C = new CEnum<>(QpState.class, QpState::value);

    final int value;

    QpState(int value) {
        this.value = value;
    }

    /** {@return the C value of this constant, in {@code enum ibv_qp_state}} */
    public int value() {
        return value;
    }

    /**
     * The constant whose C value is {@code value}.
     *
     * @param value a C value of {@code enum ibv_qp_state}
     * @return the constant
     * @throws IllegalArgumentException if no constant has that value
     */
    public static QpState of(int value) {
        return C.of(value);
    }
}
