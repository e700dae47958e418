package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.internal.Native;
import io.github.panamaverbs.internal.NativeLibraries;
import java.lang.foreign.MemorySegment;

/**
 * The status of a work completion: {@code enum ibv_wc_status}. An error status is data, not an
 * exception: {@link #description()} is libibverbs' own text for it ({@code ibv_wc_status_str}).
 */
public enum WcStatus {
    /** {@code IBV_WC_SUCCESS} */
    SUCCESS,
    /** {@code IBV_WC_LOC_LEN_ERR}: a receive buffer was too small, or a message too long */
    LOC_LEN_ERR,
    /** {@code IBV_WC_LOC_QP_OP_ERR}: the work request was invalid for the queue pair */
    LOC_QP_OP_ERR,
    /** {@code IBV_WC_LOC_EEC_OP_ERR} */
    LOC_EEC_OP_ERR,
    /** {@code IBV_WC_LOC_PROT_ERR}: an SGE's lkey or range does not match its memory region */
    LOC_PROT_ERR,
    /** {@code IBV_WC_WR_FLUSH_ERR}: flushed because the queue pair went to the error state */
    WR_FLUSH_ERR,
    /** {@code IBV_WC_MW_BIND_ERR} */
    MW_BIND_ERR,
    /** {@code IBV_WC_BAD_RESP_ERR} */
    BAD_RESP_ERR,
    /** {@code IBV_WC_LOC_ACCESS_ERR} */
    LOC_ACCESS_ERR,
    /** {@code IBV_WC_REM_INV_REQ_ERR}: the peer found the request invalid (e.g. a message longer than its buffer) */
    REM_INV_REQ_ERR,
    /** {@code IBV_WC_REM_ACCESS_ERR}: the peer refused access (rkey, range or access rights) */
    REM_ACCESS_ERR,
    /** {@code IBV_WC_REM_OP_ERR} */
    REM_OP_ERR,
    /** {@code IBV_WC_RETRY_EXC_ERR}: the peer did not answer (gone, or not connected) */
    RETRY_EXC_ERR,
    /** {@code IBV_WC_RNR_RETRY_EXC_ERR}: the peer had no receive posted, too many times */
    RNR_RETRY_EXC_ERR,
    /** {@code IBV_WC_LOC_RDD_VIOL_ERR} */
    LOC_RDD_VIOL_ERR,
    /** {@code IBV_WC_REM_INV_RD_REQ_ERR} */
    REM_INV_RD_REQ_ERR,
    /** {@code IBV_WC_REM_ABORT_ERR} */
    REM_ABORT_ERR,
    /** {@code IBV_WC_INV_EECN_ERR} */
    INV_EECN_ERR,
    /** {@code IBV_WC_INV_EEC_STATE_ERR} */
    INV_EEC_STATE_ERR,
    /** {@code IBV_WC_FATAL_ERR} */
    FATAL_ERR,
    /** {@code IBV_WC_RESP_TIMEOUT_ERR} */
    RESP_TIMEOUT_ERR,
    /** {@code IBV_WC_GENERAL_ERR} */
    GENERAL_ERR,
    /** {@code IBV_WC_TM_ERR} */
    TM_ERR,
    /** {@code IBV_WC_TM_RNDV_INCOMPLETE} */
    TM_RNDV_INCOMPLETE;

    // The constants are declared in C's order, from IBV_WC_SUCCESS = 0: the C value is the ordinal
    // (EnumValuesTest checks it against the bindings), so that the enum loads without rdma-core.
    private static final WcStatus[] VALUES = values();

    /** libibverbs' texts, by C value: read on the first {@link #description()}, after the library is found. */
    private static final class Descriptions {
        static final String[] TEXT = read();

        private static String[] read() {
            String[] text = new String[VALUES.length];
            for (WcStatus status : VALUES) {
                try {
                    MemorySegment s = (MemorySegment) Verbs.ibv_wc_status_str$handle().invokeExact(status.ordinal());
                    text[status.ordinal()] = s.reinterpret(256).getString(0);
                } catch (Throwable t) {
                    throw Native.rethrow(t);
                }
            }
            return text;
        }
    }

    /** {@return the C value of this status, in {@code enum ibv_wc_status}} */
    public int value() {
        return ordinal();
    }

    /**
     * {@return {@code ibv_wc_status_str}: libibverbs' text for this status, e.g. "transport retry counter exceeded"}
     *
     * @throws VerbsException if libibverbs cannot be loaded (naming it and how to install it)
     */
    public String description() {
        NativeLibraries.require();
        return Descriptions.TEXT[ordinal()];
    }

    /**
     * The status whose C value is {@code value}.
     *
     * @param value a C value of {@code enum ibv_wc_status}
     * @return the status; {@link #GENERAL_ERR} for values this binding does not know
     */
    public static WcStatus of(int value) {
        return value >= 0 && value < VALUES.length ? VALUES[value] : GENERAL_ERR;
    }
}
