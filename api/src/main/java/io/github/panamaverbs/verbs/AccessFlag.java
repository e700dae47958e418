package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.CEnum;

/** Memory region and queue pair access rights: {@code enum ibv_access_flags}. */
public enum AccessFlag {
    /** {@code IBV_ACCESS_LOCAL_WRITE}: the local HCA may write (needed to receive, or for RDMA read results) */
    LOCAL_WRITE(1),
    /** {@code IBV_ACCESS_REMOTE_WRITE}: peers may RDMA-write into it */
    REMOTE_WRITE(1 << 1),
    /** {@code IBV_ACCESS_REMOTE_READ}: peers may RDMA-read from it */
    REMOTE_READ(1 << 2),
    /** {@code IBV_ACCESS_REMOTE_ATOMIC}: peers may run atomics on it */
    REMOTE_ATOMIC(1 << 3),
    /** {@code IBV_ACCESS_MW_BIND} */
    MW_BIND(1 << 4),
    /** {@code IBV_ACCESS_ZERO_BASED} */
    ZERO_BASED(1 << 5),
    /** {@code IBV_ACCESS_ON_DEMAND} */
    ON_DEMAND(1 << 6),
    /** {@code IBV_ACCESS_HUGETLB} */
    HUGETLB(1 << 7),
    /** {@code IBV_ACCESS_RELAXED_ORDERING} */
    RELAXED_ORDERING(1 << 20);

    private static final CEnum<AccessFlag> C = new CEnum<>(AccessFlag.class, AccessFlag::value);

    /** The C value, written out (it is the C ABI's) so that the enum loads without rdma-core; EnumValuesTest checks it. */
    final int value;

    AccessFlag(int value) {
        this.value = value;
    }

    /** {@return the C bit of this flag, in {@code enum ibv_access_flags}} */
    public int value() {
        return value;
    }

    /** The C bit mask of {@code flags}. */
    static int mask(java.util.Set<AccessFlag> flags) {
        return C.mask(flags);
    }

    /** The flags set in the C bit mask {@code mask}. */
    static java.util.EnumSet<AccessFlag> of(int mask) {
        return C.flags(mask);
    }
}
