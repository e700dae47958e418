package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.CEnum;

/** What an asynchronous event reports: {@code enum ibv_event_type}. */
public enum AsyncEventType {
    /** {@code IBV_EVENT_CQ_ERR} */
    CQ_ERR(0),
    /** {@code IBV_EVENT_QP_FATAL} */
    QP_FATAL(1),
    /** {@code IBV_EVENT_QP_REQ_ERR} */
    QP_REQ_ERR(2),
    /** {@code IBV_EVENT_QP_ACCESS_ERR} */
    QP_ACCESS_ERR(3),
    /** {@code IBV_EVENT_COMM_EST} */
    COMM_EST(4),
    /** {@code IBV_EVENT_SQ_DRAINED} */
    SQ_DRAINED(5),
    /** {@code IBV_EVENT_PATH_MIG} */
    PATH_MIG(6),
    /** {@code IBV_EVENT_PATH_MIG_ERR} */
    PATH_MIG_ERR(7),
    /** {@code IBV_EVENT_DEVICE_FATAL} */
    DEVICE_FATAL(8),
    /** {@code IBV_EVENT_PORT_ACTIVE} */
    PORT_ACTIVE(9),
    /** {@code IBV_EVENT_PORT_ERR} */
    PORT_ERR(10),
    /** {@code IBV_EVENT_LID_CHANGE} */
    LID_CHANGE(11),
    /** {@code IBV_EVENT_PKEY_CHANGE} */
    PKEY_CHANGE(12),
    /** {@code IBV_EVENT_SM_CHANGE} */
    SM_CHANGE(13),
    /** {@code IBV_EVENT_SRQ_ERR} */
    SRQ_ERR(14),
    /** {@code IBV_EVENT_SRQ_LIMIT_REACHED}: an armed shared receive queue fell below its limit */
    SRQ_LIMIT_REACHED(15),
    /** {@code IBV_EVENT_QP_LAST_WQE_REACHED} */
    QP_LAST_WQE_REACHED(16),
    /** {@code IBV_EVENT_CLIENT_REREGISTER} */
    CLIENT_REREGISTER(17),
    /** {@code IBV_EVENT_GID_CHANGE} */
    GID_CHANGE(18),
    /** {@code IBV_EVENT_WQ_FATAL} */
    WQ_FATAL(19);

    private static final CEnum<AsyncEventType> C = new CEnum<>(AsyncEventType.class, AsyncEventType::value);

    /** The C value, written out (it is the C ABI's) so that the enum loads without rdma-core; EnumValuesTest checks it. */
    final int value;

    AsyncEventType(int value) {
        this.value = value;
    }

    /** {@return the C value of this constant, in {@code enum ibv_event_type}} */
    public int value() {
        return value;
    }

    /**
     * The constant whose C value is {@code value}.
     *
     * @param value a C value of {@code enum ibv_event_type}
     * @return the constant
     * @throws IllegalArgumentException if no constant has that value
     */
    public static AsyncEventType of(int value) {
        return C.of(value);
    }
}
