package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.CEnum;

/** What a work completion completed: {@code enum ibv_wc_opcode}. */
public enum WcOpcode {
    /** {@code IBV_WC_SEND} */
    SEND(0),
    /** {@code IBV_WC_RDMA_WRITE} */
    RDMA_WRITE(1),
    /** {@code IBV_WC_RDMA_READ} */
    RDMA_READ(2),
    /** {@code IBV_WC_COMP_SWAP} */
    COMP_SWAP(3),
    /** {@code IBV_WC_FETCH_ADD} */
    FETCH_ADD(4),
    /** {@code IBV_WC_BIND_MW} */
    BIND_MW(5),
    /** {@code IBV_WC_LOCAL_INV} */
    LOCAL_INV(6),
    /** {@code IBV_WC_TSO} */
    TSO(7),
    /** {@code IBV_WC_ATOMIC_WRITE} */
    ATOMIC_WRITE(9),
    /** {@code IBV_WC_RECV}: a receive (of a SEND or SEND_WITH_IMM) */
    RECV(128),
    /** {@code IBV_WC_RECV_RDMA_WITH_IMM}: the immediate data of an RDMA_WRITE_WITH_IMM, consuming a receive */
    RECV_RDMA_WITH_IMM(129),
    /** {@code IBV_WC_TM_ADD} */
    TM_ADD(130),
    /** {@code IBV_WC_TM_DEL} */
    TM_DEL(131),
    /** {@code IBV_WC_TM_SYNC} */
    TM_SYNC(132),
    /** {@code IBV_WC_TM_RECV} */
    TM_RECV(133),
    /** {@code IBV_WC_TM_NO_TAG} */
    TM_NO_TAG(134),
    /** {@code IBV_WC_DRIVER1} */
    DRIVER1(135),
    /** {@code IBV_WC_DRIVER2} */
    DRIVER2(136),
    /** {@code IBV_WC_DRIVER3} */
    DRIVER3(137);

    private static final CEnum<WcOpcode> C = new CEnum<>(WcOpcode.class, WcOpcode::value);

    /** The C value, written out (it is the C ABI's) so that the enum loads without rdma-core; EnumValuesTest checks it. */
    final int value;

    WcOpcode(int value) {
        this.value = value;
    }

    /** {@return the C value of this constant, in {@code enum ibv_wc_opcode}} */
    public int value() {
        return value;
    }

    /**
     * The constant whose C value is {@code value}.
     *
     * @param value a C value of {@code enum ibv_wc_opcode}
     * @return the constant
     * @throws IllegalArgumentException if no constant has that value
     */
    public static WcOpcode of(int value) {
        return C.of(value);
    }
}
