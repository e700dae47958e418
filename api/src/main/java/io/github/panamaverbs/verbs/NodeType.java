package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.internal.CEnum;

/** What kind of node a device is: {@code enum ibv_node_type}. */
public enum NodeType {
    /** {@code IBV_NODE_UNKNOWN} */
    UNKNOWN(Verbs.IBV_NODE_UNKNOWN()),
    /** {@code IBV_NODE_CA}: a channel adapter (InfiniBand or RoCE NIC, rxe). */
    CA(Verbs.IBV_NODE_CA()),
    /** {@code IBV_NODE_SWITCH} */
    SWITCH(Verbs.IBV_NODE_SWITCH()),
    /** {@code IBV_NODE_ROUTER} */
    ROUTER(Verbs.IBV_NODE_ROUTER()),
    /** {@code IBV_NODE_RNIC}: an iWARP NIC (siw). */
    RNIC(Verbs.IBV_NODE_RNIC()),
    /** {@code IBV_NODE_USNIC} */
    USNIC(Verbs.IBV_NODE_USNIC()),
    /** {@code IBV_NODE_USNIC_UDP} */
    USNIC_UDP(Verbs.IBV_NODE_USNIC_UDP()),
    /** {@code IBV_NODE_UNSPECIFIED} */
    UNSPECIFIED(Verbs.IBV_NODE_UNSPECIFIED());

    private static final CEnum<NodeType> C = new CEnum<>(NodeType.class, NodeType::value);

    final int value;

    NodeType(int value) {
        this.value = value;
    }

    /** {@return the C value of this constant, in {@code enum ibv_node_type}} */
    public int value() {
        return value;
    }

    /**
     * The constant whose C value is {@code value}.
     *
     * @param value a C value of {@code enum ibv_node_type}
     * @return the constant, or {@link #UNKNOWN} for values this binding does not know
     */
    public static NodeType of(int value) {
        return C.of(value, UNKNOWN);
    }
}
