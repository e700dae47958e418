package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.CEnum;

/** The transport a device speaks: {@code enum ibv_transport_type}. */
public enum TransportType {
    /** {@code IBV_TRANSPORT_UNKNOWN} */
    UNKNOWN(-1),
    /** {@code IBV_TRANSPORT_IB}: InfiniBand, and RoCE (which carries the IB transport over Ethernet). */
    IB(0),
    /** {@code IBV_TRANSPORT_IWARP} */
    IWARP(1),
    /** {@code IBV_TRANSPORT_USNIC} */
    USNIC(2),
    /** {@code IBV_TRANSPORT_USNIC_UDP} */
    USNIC_UDP(3),
    /** {@code IBV_TRANSPORT_UNSPECIFIED} */
    UNSPECIFIED(4);

    private static final CEnum<TransportType> C = new CEnum<>(TransportType.class, TransportType::value);

    /** The C value, written out (it is the C ABI's) so that the enum loads without rdma-core; EnumValuesTest checks it. */
    final int value;

    TransportType(int value) {
        this.value = value;
    }

    /** {@return the C value of this constant, in {@code enum ibv_transport_type}} */
    public int value() {
        return value;
    }

    /**
     * The constant whose C value is {@code value}.
     *
     * @param value a C value of {@code enum ibv_transport_type}
     * @return the constant, or {@link #UNKNOWN} for values this binding does not know
     */
    public static TransportType of(int value) {
        return C.of(value, UNKNOWN);
    }
}
