package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.internal.CEnum;

/** The operation of a send work request: {@code enum ibv_wr_opcode}. */
public enum SendOpcode {
    /** {@code IBV_WR_RDMA_WRITE} */
    RDMA_WRITE(Verbs.IBV_WR_RDMA_WRITE()),
    /** {@code IBV_WR_RDMA_WRITE_WITH_IMM} */
    RDMA_WRITE_WITH_IMM(Verbs.IBV_WR_RDMA_WRITE_WITH_IMM()),
    /** {@code IBV_WR_SEND} */
    SEND(Verbs.IBV_WR_SEND()),
    /** {@code IBV_WR_SEND_WITH_IMM} */
    SEND_WITH_IMM(Verbs.IBV_WR_SEND_WITH_IMM()),
    /** {@code IBV_WR_RDMA_READ} */
    RDMA_READ(Verbs.IBV_WR_RDMA_READ()),
    /** {@code IBV_WR_ATOMIC_CMP_AND_SWP} */
    ATOMIC_CMP_AND_SWP(Verbs.IBV_WR_ATOMIC_CMP_AND_SWP()),
    /** {@code IBV_WR_ATOMIC_FETCH_AND_ADD} */
    ATOMIC_FETCH_AND_ADD(Verbs.IBV_WR_ATOMIC_FETCH_AND_ADD()),
    /** {@code IBV_WR_LOCAL_INV} */
    LOCAL_INV(Verbs.IBV_WR_LOCAL_INV()),
    /** {@code IBV_WR_BIND_MW} */
    BIND_MW(Verbs.IBV_WR_BIND_MW()),
    /** {@code IBV_WR_SEND_WITH_INV} */
    SEND_WITH_INV(Verbs.IBV_WR_SEND_WITH_INV()),
    /** {@code IBV_WR_TSO} */
    TSO(Verbs.IBV_WR_TSO()),
    /** {@code IBV_WR_DRIVER1} */
    DRIVER1(Verbs.IBV_WR_DRIVER1()),
    /** {@code IBV_WR_ATOMIC_WRITE} */
    ATOMIC_WRITE(Verbs.IBV_WR_ATOMIC_WRITE());

    private static final CEnum<SendOpcode> C = new CEnum<>(SendOpcode.class, SendOpcode::value);

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
