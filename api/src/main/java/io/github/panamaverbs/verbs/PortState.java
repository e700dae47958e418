package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.CEnum;

/** Logical port state: {@code enum ibv_port_state}. */
public enum PortState {
    /** {@code IBV_PORT_NOP} */
    NOP(0),
    /** {@code IBV_PORT_DOWN} */
    DOWN(1),
    /** {@code IBV_PORT_INIT} */
    INIT(2),
    /** {@code IBV_PORT_ARMED} */
    ARMED(3),
    /** {@code IBV_PORT_ACTIVE}: up: the port can carry traffic */
    ACTIVE(4),
    /** {@code IBV_PORT_ACTIVE_DEFER} */
    ACTIVE_DEFER(5);

    private static final CEnum<PortState> C = new CEnum<>(PortState.class, PortState::value);

    /** The C value, written out (it is the C ABI's) so that the enum loads without rdma-core; EnumValuesTest checks it. */
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
