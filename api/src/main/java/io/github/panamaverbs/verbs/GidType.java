package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.CEnum;

/** The type of a GID table entry: {@code enum ibv_gid_type}. */
public enum GidType {
    /** {@code IBV_GID_TYPE_IB}: InfiniBand (and iWARP) */
    IB(0),
    /** {@code IBV_GID_TYPE_ROCE_V1}: RoCE v1: Ethernet, no IP */
    ROCE_V1(1),
    /** {@code IBV_GID_TYPE_ROCE_V2}: RoCE v2: UDP/IP */
    ROCE_V2(2);

    private static final CEnum<GidType> C = new CEnum<>(GidType.class, GidType::value);

    /** The C value, written out (it is the C ABI's) so that the enum loads without rdma-core; EnumValuesTest checks it. */
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
