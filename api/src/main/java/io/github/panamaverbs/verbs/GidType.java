package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.internal.CEnum;

/** The type of a GID table entry: {@code enum ibv_gid_type}. */
public enum GidType {
    /** {@code IBV_GID_TYPE_IB}: InfiniBand (and iWARP) */
    IB(Verbs.IBV_GID_TYPE_IB()),
    /** {@code IBV_GID_TYPE_ROCE_V1}: RoCE v1: Ethernet, no IP */
    ROCE_V1(Verbs.IBV_GID_TYPE_ROCE_V1()),
    /** {@code IBV_GID_TYPE_ROCE_V2}: RoCE v2: UDP/IP */
    ROCE_V2(Verbs.IBV_GID_TYPE_ROCE_V2());

    private static final CEnum<GidType> C = new CEnum<>(GidType.class, GidType::value);

    final int value;

    GidType(int value) {
        this.value = value;
    }

    /** {@return the C value of this constant, in {@code enum ibv_gid_type}} */
    public int value() {
        return value;
    }

    /**
     * The constant whose C value is {@code value}.
     *
     * @param value a C value of {@code enum ibv_gid_type}
     * @return the constant
     * @throws IllegalArgumentException if no constant has that value
     */
    public static GidType of(int value) {
        return C.of(value);
    }
}
