package io.github.panamaverbs.cm;

import io.github.panamaverbs.internal.CEnum;

/** What happened to a connection ID: {@code enum rdma_cm_event_type}. */
public enum CmEventType {
    /** {@code RDMA_CM_EVENT_ADDR_RESOLVED}: the destination address maps to a local device */
    ADDR_RESOLVED(0),
    /** {@code RDMA_CM_EVENT_ADDR_ERROR}: it does not (status: a negative errno) */
    ADDR_ERROR(1),
    /** {@code RDMA_CM_EVENT_ROUTE_RESOLVED}: a path to the destination is known */
    ROUTE_RESOLVED(2),
    /** {@code RDMA_CM_EVENT_ROUTE_ERROR} */
    ROUTE_ERROR(3),
    /** {@code RDMA_CM_EVENT_CONNECT_REQUEST}: a peer wants to connect to a listener; the event names the new ID */
    CONNECT_REQUEST(4),
    /** {@code RDMA_CM_EVENT_CONNECT_RESPONSE}: only for an ID without a queue pair */
    CONNECT_RESPONSE(5),
    /** {@code RDMA_CM_EVENT_CONNECT_ERROR} */
    CONNECT_ERROR(6),
    /** {@code RDMA_CM_EVENT_UNREACHABLE}: the peer did not answer (status: a negative errno) */
    UNREACHABLE(7),
    /** {@code RDMA_CM_EVENT_REJECTED}: refused (status: the reject reason; 8 on IB/RoCE = nobody listens there) */
    REJECTED(8),
    /** {@code RDMA_CM_EVENT_ESTABLISHED}: connected; the queue pair is in RTS */
    ESTABLISHED(9),
    /**
     * {@code RDMA_CM_EVENT_DISCONNECTED}: either side disconnected (or the peer is gone); the API moves
     * the ID's queue pair to ERR, so that its outstanding work requests complete with WR_FLUSH_ERR
     */
    DISCONNECTED(10),
    /** {@code RDMA_CM_EVENT_DEVICE_REMOVAL} */
    DEVICE_REMOVAL(11),
    /** {@code RDMA_CM_EVENT_MULTICAST_JOIN} */
    MULTICAST_JOIN(12),
    /** {@code RDMA_CM_EVENT_MULTICAST_ERROR} */
    MULTICAST_ERROR(13),
    /** {@code RDMA_CM_EVENT_ADDR_CHANGE} */
    ADDR_CHANGE(14),
    /** {@code RDMA_CM_EVENT_TIMEWAIT_EXIT}: the queue pair may be reused */
    TIMEWAIT_EXIT(15);

    private static final CEnum<CmEventType> C = new CEnum<>(CmEventType.class, CmEventType::value);

    /** The C value, written out (it is the C ABI's) so that the enum loads without rdma-core; EnumValuesTest checks it. */
    final int value;

    CmEventType(int value) {
        this.value = value;
    }

    /** {@return the C value of this constant, in {@code enum rdma_cm_event_type}} */
    public int value() {
        return value;
    }

    /**
     * The constant whose C value is {@code value}.
     *
     * @param value a C value of {@code enum rdma_cm_event_type}
     * @return the constant
     * @throws IllegalArgumentException if no constant has that value
     */
    public static CmEventType of(int value) {
        return C.of(value);
    }

    /** {@return the name librdmacm's {@code rdma_event_str} gives it: {@code RDMA_CM_EVENT_ESTABLISHED}} */
    public String cName() {
        return "RDMA_CM_EVENT_" + name();
    }
}
