package io.github.panamaverbs.verbs;

import java.util.Set;

/**
 * {@code enum ibv_create_cq_wc_flags}: the fields an extended completion queue
 * ({@link Context#createCompletionQueue(int, Set, CompletionChannel, int)}) reports beyond the work
 * request ID, status, opcode, vendor error and flags, which it always has. Ask only for what is read:
 * a provider may store less per completion. Reading a field that was not asked for is refused.
 */
public enum WcField {
    /** {@code IBV_WC_EX_WITH_BYTE_LEN}: {@link ExtendedCompletionQueue#readByteLength()} */
    BYTE_LEN(1 << 0),
    /** {@code IBV_WC_EX_WITH_IMM}: {@link ExtendedCompletionQueue#readImmediate()} */
    IMMEDIATE(1 << 1),
    /** {@code IBV_WC_EX_WITH_QP_NUM}: {@link ExtendedCompletionQueue#readQpNumber()} */
    QP_NUM(1 << 2),
    /** {@code IBV_WC_EX_WITH_SRC_QP}: {@link ExtendedCompletionQueue#readSourceQp()} */
    SOURCE_QP(1 << 3),
    /** {@code IBV_WC_EX_WITH_SLID}: {@link ExtendedCompletionQueue#readSourceLid()} */
    SLID(1 << 4),
    /** {@code IBV_WC_EX_WITH_SL}: {@link ExtendedCompletionQueue#readServiceLevel()} */
    SL(1 << 5),
    /** {@code IBV_WC_EX_WITH_DLID_PATH_BITS}: {@link ExtendedCompletionQueue#readDlidPathBits()} */
    DLID_PATH_BITS(1 << 6),
    /** {@code IBV_WC_EX_WITH_COMPLETION_TIMESTAMP}: {@link ExtendedCompletionQueue#readCompletionTimestamp()} (device clock) */
    COMPLETION_TIMESTAMP(1 << 7),
    /** {@code IBV_WC_EX_WITH_CVLAN}: {@link ExtendedCompletionQueue#readCvlan()} */
    CVLAN(1 << 8),
    /** {@code IBV_WC_EX_WITH_FLOW_TAG}: {@link ExtendedCompletionQueue#readFlowTag()} */
    FLOW_TAG(1 << 9),
    /** {@code IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK}: {@link ExtendedCompletionQueue#readCompletionWallclockNanos()} */
    COMPLETION_TIMESTAMP_WALLCLOCK(1 << 11);

    /** {@code IBV_WC_STANDARD_FLAGS}: the fields of the classic {@code struct ibv_wc}. */
    public static final Set<WcField> STANDARD = Set.of(BYTE_LEN, IMMEDIATE, QP_NUM, SOURCE_QP, SLID, SL, DLID_PATH_BITS);

    final long value;

    WcField(long value) {
        this.value = value;
    }

    static long mask(Set<WcField> fields) {
        long m = 0;
        for (WcField f : fields) {
            m |= java.util.Objects.requireNonNull(f, "a field").value;
        }
        return m;
    }
}
