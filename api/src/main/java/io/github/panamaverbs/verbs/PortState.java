package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.internal.CEnum;

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

    private static final CEnum<PortState> C = new CEnum<>(PortState.class, PortState::value);

    final int value;

    PortState(int value) {
        this.value = value;
    }

    /** {@return the C value of this constant, in {@code enum ibv_port_state}} */
    public int value() {
        return value;
    }

    /**
     * The constant whose C value is {@code value}.
     *
     * @param value a C value of {@code enum ibv_port_state}
     * @return the constant
     * @throws IllegalArgumentException if no constant has that value
     */
    public static PortState of(int value) {
        return C.of(value);
    }
}
