package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.CEnum;

/** Queue pair state: {@code enum ibv_qp_state}. */
public enum QpState {
    /** {@code IBV_QPS_RESET}: just created, or reset: nothing can be posted */
    RESET(0),
    /** {@code IBV_QPS_INIT}: receives may be posted */
    INIT(1),
    /** {@code IBV_QPS_RTR}: ready to receive */
    RTR(2),
    /** {@code IBV_QPS_RTS}: ready to send */
    RTS(3),
    /** {@code IBV_QPS_SQD} */
    SQD(4),
    /** {@code IBV_QPS_SQE} */
    SQE(5),
    /** {@code IBV_QPS_ERR}: error: outstanding work requests complete with WR_FLUSH_ERR */
    ERR(6),
    /** {@code IBV_QPS_UNKNOWN} */
    UNKNOWN(7);

    private static final CEnum<QpState> C = new CEnum<>(QpState.class, QpState::value);

    /** The C value, written out (it is the C ABI's) so that the enum loads without rdma-core; EnumValuesTest checks it. */
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
