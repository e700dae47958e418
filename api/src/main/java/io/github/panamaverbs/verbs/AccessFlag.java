package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.internal.CEnum;

/** Memory region and queue pair access rights: {@code enum ibv_access_flags}. */
public enum AccessFlag {
    /** {@code IBV_ACCESS_LOCAL_WRITE}: the local HCA may write (needed to receive, or for RDMA read results) */
    LOCAL_WRITE(Verbs.IBV_ACCESS_LOCAL_WRITE()),
    /** {@code IBV_ACCESS_REMOTE_WRITE}: peers may RDMA-write into it */
    REMOTE_WRITE(Verbs.IBV_ACCESS_REMOTE_WRITE()),
    /** {@code IBV_ACCESS_REMOTE_READ}: peers may RDMA-read from it */
    REMOTE_READ(Verbs.IBV_ACCESS_REMOTE_READ()),
    /** {@code IBV_ACCESS_REMOTE_ATOMIC}: peers may run atomics on it */
    REMOTE_ATOMIC(Verbs.IBV_ACCESS_REMOTE_ATOMIC()),
    /** {@code IBV_ACCESS_MW_BIND} */
    MW_BIND(Verbs.IBV_ACCESS_MW_BIND()),
    /** {@code IBV_ACCESS_ZERO_BASED} */
    ZERO_BASED(Verbs.IBV_ACCESS_ZERO_BASED()),
    /** {@code IBV_ACCESS_ON_DEMAND} */
    ON_DEMAND(Verbs.IBV_ACCESS_ON_DEMAND()),
    /** {@code IBV_ACCESS_HUGETLB} */
    HUGETLB(Verbs.IBV_ACCESS_HUGETLB()),
    /** {@code IBV_ACCESS_RELAXED_ORDERING} */
    RELAXED_ORDERING(Verbs.IBV_ACCESS_RELAXED_ORDERING());

    private static final CEnum<AccessFlag> C = new CEnum<>(AccessFlag.class, AccessFlag::value);

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
