package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.internal.CEnum;

/** Flags of a send work request: {@code enum ibv_send_flags}. */
public enum SendFlag {
    /** {@code IBV_SEND_FENCE}: wait for earlier RDMA reads and atomics to complete first */
    FENCE(Verbs.IBV_SEND_FENCE()),
    /** {@code IBV_SEND_SIGNALED}: produce a completion even when the QP is not sq_sig_all */
    SIGNALED(Verbs.IBV_SEND_SIGNALED()),
    /** {@code IBV_SEND_SOLICITED}: wake a receiver that asked for solicited events only */
    SOLICITED(Verbs.IBV_SEND_SOLICITED()),
    /** {@code IBV_SEND_INLINE}: copy the data into the work request: the buffer may be reused at once and needs no lkey */
    INLINE(Verbs.IBV_SEND_INLINE()),
    /** {@code IBV_SEND_IP_CSUM} */
    IP_CSUM(Verbs.IBV_SEND_IP_CSUM());

    private static final CEnum<SendFlag> C = new CEnum<>(SendFlag.class, SendFlag::value);

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
