package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.CEnum;

/** Queue pair transport type: {@code enum ibv_qp_type}. */
public enum QpType {
    /** {@code IBV_QPT_RC}: reliable connected: all opcodes, acknowledged, in order */
    RC(2),
    /** {@code IBV_QPT_UC}: unreliable connected: send and RDMA write, no acknowledgements */
    UC(3),
    /** {@code IBV_QPT_UD}: unreliable datagram: sends of up to one MTU to any UD QP, addressed by an address handle */
    UD(4),
    /** {@code IBV_QPT_RAW_PACKET} */
    RAW_PACKET(8),
    /** {@code IBV_QPT_XRC_SEND} */
    XRC_SEND(9),
    /** {@code IBV_QPT_XRC_RECV} */
    XRC_RECV(10),
    /** {@code IBV_QPT_DRIVER} */
    DRIVER(255);

    private static final CEnum<QpType> C = new CEnum<>(QpType.class, QpType::value);

    /** The C value, written out (it is the C ABI's) so that the enum loads without rdma-core; EnumValuesTest checks it. */
    final int value;

    QpType(int value) {
        this.value = value;
    }

    /** {@return the C value of this constant, in {@code enum ibv_qp_type}} */
    public int value() {
        return value;
    }

    /**
     * The constant whose C value is {@code value}.
     *
     * @param value a C value of {@code enum ibv_qp_type}
     * @return the constant
     * @throws IllegalArgumentException if no constant has that value
     */
    public static QpType of(int value) {
        return C.of(value);
    }
}
