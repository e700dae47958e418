package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;

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

    final int value;

    NodeType(int value) {
        this.value = value;
    }

    static NodeType of(int value) {
        for (NodeType t : values()) {
            if (t.value == value) {
                return t;
            }
        }
        return UNKNOWN;
    }
}
