package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.internal.CEnum;

/** What an asynchronous event reports: {@code enum ibv_event_type}. */
public enum AsyncEventType {
    /** {@code IBV_EVENT_CQ_ERR} */
    CQ_ERR(Verbs.IBV_EVENT_CQ_ERR()),
    /** {@code IBV_EVENT_QP_FATAL} */
    QP_FATAL(Verbs.IBV_EVENT_QP_FATAL()),
    /** {@code IBV_EVENT_QP_REQ_ERR} */
    QP_REQ_ERR(Verbs.IBV_EVENT_QP_REQ_ERR()),
    /** {@code IBV_EVENT_QP_ACCESS_ERR} */
    QP_ACCESS_ERR(Verbs.IBV_EVENT_QP_ACCESS_ERR()),
    /** {@code IBV_EVENT_COMM_EST} */
    COMM_EST(Verbs.IBV_EVENT_COMM_EST()),
    /** {@code IBV_EVENT_SQ_DRAINED} */
    SQ_DRAINED(Verbs.IBV_EVENT_SQ_DRAINED()),
    /** {@code IBV_EVENT_PATH_MIG} */
    PATH_MIG(Verbs.IBV_EVENT_PATH_MIG()),
    /** {@code IBV_EVENT_PATH_MIG_ERR} */
    PATH_MIG_ERR(Verbs.IBV_EVENT_PATH_MIG_ERR()),
    /** {@code IBV_EVENT_DEVICE_FATAL} */
    DEVICE_FATAL(Verbs.IBV_EVENT_DEVICE_FATAL()),
    /** {@code IBV_EVENT_PORT_ACTIVE} */
    PORT_ACTIVE(Verbs.IBV_EVENT_PORT_ACTIVE()),
    /** {@code IBV_EVENT_PORT_ERR} */
    PORT_ERR(Verbs.IBV_EVENT_PORT_ERR()),
    /** {@code IBV_EVENT_LID_CHANGE} */
    LID_CHANGE(Verbs.IBV_EVENT_LID_CHANGE()),
    /** {@code IBV_EVENT_PKEY_CHANGE} */
    PKEY_CHANGE(Verbs.IBV_EVENT_PKEY_CHANGE()),
    /** {@code IBV_EVENT_SM_CHANGE} */
    SM_CHANGE(Verbs.IBV_EVENT_SM_CHANGE()),
    /** {@code IBV_EVENT_SRQ_ERR} */
    SRQ_ERR(Verbs.IBV_EVENT_SRQ_ERR()),
    /** {@code IBV_EVENT_SRQ_LIMIT_REACHED}: an armed shared receive queue fell below its limit */
    SRQ_LIMIT_REACHED(Verbs.IBV_EVENT_SRQ_LIMIT_REACHED()),
    /** {@code IBV_EVENT_QP_LAST_WQE_REACHED} */
    QP_LAST_WQE_REACHED(Verbs.IBV_EVENT_QP_LAST_WQE_REACHED()),
    /** {@code IBV_EVENT_CLIENT_REREGISTER} */
    CLIENT_REREGISTER(Verbs.IBV_EVENT_CLIENT_REREGISTER()),
    /** {@code IBV_EVENT_GID_CHANGE} */
    GID_CHANGE(Verbs.IBV_EVENT_GID_CHANGE()),
    /** {@code IBV_EVENT_WQ_FATAL} */
    WQ_FATAL(Verbs.IBV_EVENT_WQ_FATAL());

    private static final CEnum<AsyncEventType> C = new CEnum<>(AsyncEventType.class, AsyncEventType::value);

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
