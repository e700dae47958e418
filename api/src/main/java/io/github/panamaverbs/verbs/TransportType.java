package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.internal.CEnum;

/** The transport a device speaks: {@code enum ibv_transport_type}. */
public enum TransportType {
    /** {@code IBV_TRANSPORT_UNKNOWN} */
    UNKNOWN(Verbs.IBV_TRANSPORT_UNKNOWN()),
    /** {@code IBV_TRANSPORT_IB}: InfiniBand, and RoCE (which carries the IB transport over Ethernet). */
    IB(Verbs.IBV_TRANSPORT_IB()),
    /** {@code IBV_TRANSPORT_IWARP} */
    IWARP(Verbs.IBV_TRANSPORT_IWARP()),
    /** {@code IBV_TRANSPORT_USNIC} */
    USNIC(Verbs.IBV_TRANSPORT_USNIC()),
    /** {@code IBV_TRANSPORT_USNIC_UDP} */
    USNIC_UDP(Verbs.IBV_TRANSPORT_USNIC_UDP()),
    /** {@code IBV_TRANSPORT_UNSPECIFIED} */
    UNSPECIFIED(Verbs.IBV_TRANSPORT_UNSPECIFIED());

    private static final CEnum<TransportType> C = new CEnum<>(TransportType.class, TransportType::value);

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
