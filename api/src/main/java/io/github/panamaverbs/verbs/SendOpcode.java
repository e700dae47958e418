package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.CEnum;

/** The operation of a send work request: {@code enum ibv_wr_opcode}. */
public enum SendOpcode {
    /** {@code IBV_WR_RDMA_WRITE} */
    RDMA_WRITE(0),
    /** {@code IBV_WR_RDMA_WRITE_WITH_IMM} */
    RDMA_WRITE_WITH_IMM(1),
    /** {@code IBV_WR_SEND} */
    SEND(2),
    /** {@code IBV_WR_SEND_WITH_IMM} */
    SEND_WITH_IMM(3),
    /** {@code IBV_WR_RDMA_READ} */
    RDMA_READ(4),
    /** {@code IBV_WR_ATOMIC_CMP_AND_SWP} */
    ATOMIC_CMP_AND_SWP(5),
    /** {@code IBV_WR_ATOMIC_FETCH_AND_ADD} */
    ATOMIC_FETCH_AND_ADD(6),
    /** {@code IBV_WR_LOCAL_INV} */
    LOCAL_INV(7),
    /** {@code IBV_WR_BIND_MW} */
    BIND_MW(8),
    /** {@code IBV_WR_SEND_WITH_INV} */
    SEND_WITH_INV(9),
    /** {@code IBV_WR_TSO} */
    TSO(10),
    /** {@code IBV_WR_DRIVER1} */
    DRIVER1(11),
    /** {@code IBV_WR_ATOMIC_WRITE} */
    ATOMIC_WRITE(15);

    private static final CEnum<SendOpcode> C = new CEnum<>(SendOpcode.class, SendOpcode::value);

    /** The C value, written out (it is the C ABI's) so that the enum loads without rdma-core; EnumValuesTest checks it. */
    final int value;

    SendOpcode(int value) {
        this.value = value;
    }

    /** {@return the C value of this constant, in {@code enum ibv_wr_opcode}} */
    public int value() {
        return value;
    }

    /**
     * The constant whose C value is {@code value}.
     *
     * @param value a C value of {@code enum ibv_wr_opcode}
     * @return the constant
     * @throws IllegalArgumentException if no constant has that value
     */
    public static SendOpcode of(int value) {
        return C.of(value);
    }
}
