package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;

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

    final int value;

    TransportType(int value) {
        this.value = value;
    }

    static TransportType of(int value) {
        for (TransportType t : values()) {
            if (t.value == value) {
                return t;
            }
        }
        return UNKNOWN;
    }
}
