package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;

/** Logical port state: {@code enum ibv_port_state}. */
public enum PortState {
    /** {@code IBV_PORT_NOP} */
    NOP(Verbs.IBV_PORT_NOP()),
    /** {@code IBV_PORT_DOWN} */
    DOWN(Verbs.IBV_PORT_DOWN()),
    /** {@code IBV_PORT_INIT} */
    INIT(Verbs.IBV_PORT_INIT()),
    /** {@code IBV_PORT_ARMED} */
    ARMED(Verbs.IBV_PORT_ARMED()),
    /** {@code IBV_PORT_ACTIVE}: up: the port can carry traffic */
    ACTIVE(Verbs.IBV_PORT_ACTIVE()),
    /** {@code IBV_PORT_ACTIVE_DEFER} */
    ACTIVE_DEFER(Verbs.IBV_PORT_ACTIVE_DEFER());

    final int value;

    private static final PortState[] VALUES = values();

    PortState(int value) {
        this.value = value;
    }

    /** The C value of this constant. */
    public int value() {
        return value;
    }

    /** The constant whose C value is {@code value}; throws {@link IllegalArgumentException} if none. */
    public static PortState of(int value) {
        for (PortState v : VALUES) {
            if (v.value == value) {
                return v;
            }
        }
        throw new IllegalArgumentException("no PortState with value " + value);
    }
}
