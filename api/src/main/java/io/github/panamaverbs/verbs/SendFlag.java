package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.CEnum;

/** Flags of a send work request: {@code enum ibv_send_flags}. */
public enum SendFlag {
    /** {@code IBV_SEND_FENCE}: wait for earlier RDMA reads and atomics to complete first */
    FENCE(1),
    /** {@code IBV_SEND_SIGNALED}: produce a completion even when the QP is not sq_sig_all */
    SIGNALED(1 << 1),
    /** {@code IBV_SEND_SOLICITED}: wake a receiver that asked for solicited events only */
    SOLICITED(1 << 2),
    /** {@code IBV_SEND_INLINE}: copy the data into the work request: the buffer may be reused at once and needs no lkey */
    INLINE(1 << 3),
    /** {@code IBV_SEND_IP_CSUM} */
    IP_CSUM(1 << 4);

    private static final CEnum<SendFlag> C = new CEnum<>(SendFlag.class, SendFlag::value);

    /** The C value, written out (it is the C ABI's) so that the enum loads without rdma-core; EnumValuesTest checks it. */
    final int value;

    SendFlag(int value) {
        this.value = value;
    }

    /** {@return the C bit of this flag, in {@code enum ibv_send_flags}} */
    public int value() {
        return value;
    }

    /** The C bit mask of {@code flags}. */
    static int mask(java.util.Set<SendFlag> flags) {
        return C.mask(flags);
    }

    /** The flags set in the C bit mask {@code mask}. */
    static java.util.EnumSet<SendFlag> of(int mask) {
        return C.flags(mask);
    }
}
