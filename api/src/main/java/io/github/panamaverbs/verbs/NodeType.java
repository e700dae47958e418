package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.CEnum;

/** What kind of node a device is: {@code enum ibv_node_type}. */
public enum NodeType {
    /** {@code IBV_NODE_UNKNOWN} */
    UNKNOWN(-1),
    /** {@code IBV_NODE_CA}: a channel adapter (InfiniBand or RoCE NIC, rxe). */
    CA(1),
    /** {@code IBV_NODE_SWITCH} */
    SWITCH(2),
    /** {@code IBV_NODE_ROUTER} */
    ROUTER(3),
    /** {@code IBV_NODE_RNIC}: an iWARP NIC (siw). */
    RNIC(4),
    /** {@code IBV_NODE_USNIC} */
    USNIC(5),
    /** {@code IBV_NODE_USNIC_UDP} */
    USNIC_UDP(6),
    /** {@code IBV_NODE_UNSPECIFIED} */
    UNSPECIFIED(7);

    private static final CEnum<NodeType> C = new CEnum<>(NodeType.class, NodeType::value);

    /** The C value, written out (it is the C ABI's) so that the enum loads without rdma-core; EnumValuesTest checks it. */
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
