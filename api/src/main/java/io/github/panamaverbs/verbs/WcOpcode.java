package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.internal.CEnum;

/** What a work completion completed: {@code enum ibv_wc_opcode}. */
public enum WcOpcode {
    /** {@code IBV_WC_SEND} */
    SEND(Verbs.IBV_WC_SEND()),
    /** {@code IBV_WC_RDMA_WRITE} */
    RDMA_WRITE(Verbs.IBV_WC_RDMA_WRITE()),
    /** {@code IBV_WC_RDMA_READ} */
    RDMA_READ(Verbs.IBV_WC_RDMA_READ()),
    /** {@code IBV_WC_COMP_SWAP} */
    COMP_SWAP(Verbs.IBV_WC_COMP_SWAP()),
    /** {@code IBV_WC_FETCH_ADD} */
    FETCH_ADD(Verbs.IBV_WC_FETCH_ADD()),
    /** {@code IBV_WC_BIND_MW} */
    BIND_MW(Verbs.IBV_WC_BIND_MW()),
    /** {@code IBV_WC_LOCAL_INV} */
    LOCAL_INV(Verbs.IBV_WC_LOCAL_INV()),
    /** {@code IBV_WC_TSO} */
    TSO(Verbs.IBV_WC_TSO()),
    /** {@code IBV_WC_ATOMIC_WRITE} */
    ATOMIC_WRITE(Verbs.IBV_WC_ATOMIC_WRITE()),
    /** {@code IBV_WC_RECV}: a receive (of a SEND or SEND_WITH_IMM) */
    RECV(Verbs.IBV_WC_RECV()),
    /** {@code IBV_WC_RECV_RDMA_WITH_IMM}: the immediate data of an RDMA_WRITE_WITH_IMM, consuming a receive */
    RECV_RDMA_WITH_IMM(Verbs.IBV_WC_RECV_RDMA_WITH_IMM()),
    /** {@code IBV_WC_TM_ADD} */
    TM_ADD(Verbs.IBV_WC_TM_ADD()),
    /** {@code IBV_WC_TM_DEL} */
    TM_DEL(Verbs.IBV_WC_TM_DEL()),
    /** {@code IBV_WC_TM_SYNC} */
    TM_SYNC(Verbs.IBV_WC_TM_SYNC()),
    /** {@code IBV_WC_TM_RECV} */
    TM_RECV(Verbs.IBV_WC_TM_RECV()),
    /** {@code IBV_WC_TM_NO_TAG} */
    TM_NO_TAG(Verbs.IBV_WC_TM_NO_TAG()),
    /** {@code IBV_WC_DRIVER1} */
    DRIVER1(Verbs.IBV_WC_DRIVER1()),
    /** {@code IBV_WC_DRIVER2} */
    DRIVER2(Verbs.IBV_WC_DRIVER2()),
    /** {@code IBV_WC_DRIVER3} */
    DRIVER3(Verbs.IBV_WC_DRIVER3());

    private static final CEnum<WcOpcode> C = new CEnum<>(WcOpcode.class, WcOpcode::value);

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
