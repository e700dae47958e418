package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_mr;
import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Native;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * Registered memory ({@code struct ibv_mr}): a native {@link MemorySegment} the device may read and
 * write, named in work requests by its {@link #lkey()} (locally) and {@link #rkey()} (by peers).
 *
 * <p><b>Memory the device can reach is never freed under it.</b> A region is tied to the arena of
 * its memory: {@link ProtectionDomain#allocateAndRegister(long, AccessFlag...)} owns its memory and
 * frees it only after deregistering; {@link ProtectionDomain#register(Arena, MemorySegment, AccessFlag...)}
 * takes the caller's arena and deregisters when that arena is closed, before the arena frees the
 * memory, so a peer's RDMA write or a posted receive that comes later fails with a completion error
 * (the key is gone) instead of landing in memory that now belongs to something else. A region whose
 * memory is gone refuses new work requests in Java; close it as usual. An automatic arena's memory
 * stays reachable as long as the region is; when both become unreachable the registration goes with
 * the arena.
 *
 * <p>A buffer named by a posted work request belongs to the device until that request's completion
 * is polled: change, reuse or free it only then (see
 * <a href="package-summary.html#buffers">when a posted buffer may be reused</a>). Close a region only
 * once the requests that use it have completed.
 *
 * <p>The accessors may be called from any thread, also after the region is closed.
 */
public final class MemoryRegion extends Resource {
    /** Page size used by {@link ProtectionDomain#allocateAndRegister(long, AccessFlag...)}. */
    static final long PAGE_SIZE = 4096;

    private static final MethodHandle REG_MR = Native.withErrno(
            Verbs.ibv_reg_mr$address(), Verbs.ibv_reg_mr$descriptor());
    private static final MethodHandle REG_MR_IOVA2 = Native.withErrno(
            Verbs.ibv_reg_mr_iova2$address(), Verbs.ibv_reg_mr_iova2$descriptor());
    private static final MethodHandle DEREG_MR = Native.withErrno(
            Verbs.ibv_dereg_mr$address(), Verbs.ibv_dereg_mr$descriptor());
    private static final MethodHandle REREG_MR = Native.withErrno(
            Verbs.ibv_rereg_mr$address(), Verbs.ibv_rereg_mr$descriptor());
    private static final int OPTIONAL_RANGE = Verbs.IBV_ACCESS_OPTIONAL_RANGE();

    /**
     * The registration itself, shared with the cleanup action of the memory's arena. It holds
     * neither the region nor the segment, so that an automatic arena can still become unreachable.
     */
    private static final class Registration {
        private final long mr;
        /** Bumped by each reregistration: the cleanup of an arena whose memory is no longer registered does nothing. */
        private int generation;
        private boolean deregistered;

        Registration(long mr) {
            this.mr = mr;
        }

        /** Deregisters unless done already; true if this call did it. */
        synchronized boolean deregister() {
            if (deregistered) {
                return false;
            }
            MemorySegment address = MemorySegment.ofAddress(mr);
            Native.check("ibv_dereg_mr", e -> e == Errno.EINVAL || e == Errno.EBUSY
                    ? "a memory window may still be bound to it: close or invalidate the window first" : null,
                    c -> (int) DEREG_MR.invokeExact(c.errno(), address));
            deregistered = true;
            return true;
        }

        /** The arena of generation {@code g} closed: its memory is about to be freed. */
        synchronized void arenaClosed(int g) {
            if (g == generation && !deregistered) {
                deregister();
            }
        }

        synchronized boolean isLive() {
            return !deregistered;
        }
    }

    private final ProtectionDomain pd;
    private final Arena ownedArena;
    private final Registration registration;
    private volatile MemorySegment segment;
    private volatile Set<AccessFlag> access;
    private volatile int lkey;
    private volatile int rkey;
    /** The address of the region's first byte in its keys' address space: the memory's own unless an IOVA was chosen. */
    private volatile long iova;

    /**
     * Registers {@code segment} of {@code arena}; {@code owned} when the region owns the arena (it
     * closes it after deregistering), else the arena's closing deregisters.
     */
    MemoryRegion(ProtectionDomain pd, Arena arena, MemorySegment segment, Set<AccessFlag> access, boolean owned) {
        this(pd, arena, segment, access, owned, NO_IOVA);
    }

    /** No IOVA chosen: the keys address the memory by its own addresses. */
    static final long NO_IOVA = -1;

    /** As above, with the keys addressing the memory from {@code iova} on ({@code ibv_reg_mr_iova2}), or {@link #NO_IOVA}. */
    MemoryRegion(ProtectionDomain pd, Arena arena, MemorySegment segment, Set<AccessFlag> access, boolean owned,
                 long iova) {
        super(register(pd, arena, segment, access, iova), ibv_mr.sizeof(), pd);
        // What destroy() needs first: from here on, a failure deregisters (abandon), before the caller's
        // arena, or the region's own, can free the memory.
        this.ownedArena = owned ? arena : null;
        this.registration = new Registration(ptr().address());
        this.pd = pd;
        this.segment = segment;
        this.iova = iova == NO_IOVA ? segment.address() : iova;
        try {
            this.access = withImplied(access);
            refreshKeys();
            if (!owned) {
                tie(arena, 0);
            }
            afterCreate();
        } catch (RuntimeException | Error e) {
            abandon(e);
            throw e;
        }
    }

    /** Makes the closing of {@code arena} deregister first, if generation {@code g} is still the registered one. */
    private void tie(Arena arena, int g) {
        Registration r = registration;
        MemorySegment.NULL.reinterpret(arena, ignored -> r.arenaClosed(g));
    }

    private static MemorySegment register(ProtectionDomain pd, Arena arena, MemorySegment segment, Set<AccessFlag> access,
                                          long iova) {
        checkSegment(arena, segment);
        Objects.requireNonNull(access, "access");
        MemorySegment pdHandle = checkOpen(pd);
        int flags = AccessFlag.mask(withImplied(access));
        if (access.contains(AccessFlag.ON_DEMAND)
                && (pd.context().queryDevice().odpGeneralCaps() & Verbs.IBV_ODP_SUPPORT()) == 0) {
            throw new VerbsException("ibv_reg_mr", Errno.EOPNOTSUPP, pd.context().device().name() + " has no On-Demand "
                    + "Paging (its odp_caps.general_caps lack IBV_ODP_SUPPORT): register without ON_DEMAND");
        }
        try {
            return registerChecked(pdHandle, segment, flags, iova);
        } catch (IllegalStateException e) {
            throw closed(e, pd);
        }
    }

    private static MemorySegment registerChecked(MemorySegment pdHandle, MemorySegment segment, int flags, long iova) {
        return Native.create(iova != NO_IOVA ? "ibv_reg_mr_iova2" : "ibv_reg_mr", e -> Native.MEMLOCK.explain(e) != null
                        ? Native.MEMLOCK.explain(e) + " (registering " + segment.byteSize() + " bytes)" : null,
                c -> iova != NO_IOVA || (flags & OPTIONAL_RANGE) != 0
                        // What the ibv_reg_mr macro does for optional access flags (relaxed ordering).
                        ? (MemorySegment) REG_MR_IOVA2.invokeExact(c.errno(), pdHandle, segment, segment.byteSize(),
                                iova != NO_IOVA ? iova : segment.address(), flags)
                        : (MemorySegment) REG_MR.invokeExact(c.errno(), pdHandle, segment, segment.byteSize(), flags));
    }

    private static void checkSegment(Arena arena, MemorySegment segment) {
        Objects.requireNonNull(arena, "arena");
        Objects.requireNonNull(segment, "segment");
        if (!segment.isNative()) {
            throw new IllegalArgumentException("cannot register a heap segment: the device can only reach native memory "
                    + "(allocate it from an Arena)");
        }
        if (segment.isReadOnly()) {
            throw new IllegalArgumentException("cannot register a read-only segment");
        }
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException("cannot register a segment whose arena is already closed");
        }
        if (!segment.scope().equals(arena.scope())) {
            throw new IllegalArgumentException("the segment does not belong to the arena given: the registration "
                    + "must be tied to the arena that frees the memory (or use allocateAndRegister, which owns its memory)");
        }
        if (segment.byteSize() == 0) {
            throw new IllegalArgumentException("cannot register an empty segment");
        }
    }

    /** Remote write and remote atomic need local write: verbs refuses them otherwise (EINVAL). */
    private static Set<AccessFlag> withImplied(Set<AccessFlag> access) {
        EnumSet<AccessFlag> s = access.isEmpty() ? EnumSet.noneOf(AccessFlag.class) : EnumSet.copyOf(access);
        s.add(AccessFlag.LOCAL_WRITE);
        return Set.copyOf(s);
    }

    private void refreshKeys() {
        lkey = read(ibv_mr::lkey);
        rkey = read(ibv_mr::rkey);
    }

    /** {@return the protection domain it is registered in} */
    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /**
     * {@return the registered memory} For a region that owns its memory
     * ({@link ProtectionDomain#allocateAndRegister(long, AccessFlag...)}), the segment is freed, and
     * no longer accessible, once the region is closed.
     */
    public MemorySegment segment() {
        return segment;
    }

    /** {@return {@code lkey}: the key that names this region in local scatter/gather entries} */
    public int lkey() {
        return lkey;
    }

    /** {@return {@code rkey}: the key that names this region in a peer's RDMA and atomic requests} */
    public int rkey() {
        return rkey;
    }

    /**
     * {@return the address of the region's first byte for its keys: what peers use in RDMA requests (plus
     * an offset), and what local scatter entries hold} The memory's own address, unless the region was
     * registered at a chosen IOVA ({@link ProtectionDomain#allocateAndRegister(long, long, Set)}).
     */
    public long address() {
        return iova;
    }

    /** {@return {@code length}: the number of bytes registered} */
    public long length() {
        return segment.byteSize();
    }

    /** Whether the region owns its memory (allocateAndRegister): freed only after deregistration. */
    boolean ownsMemory() {
        return ownedArena != null && segment.scope().equals(ownedArena.scope());
    }

    /** {@return the access rights it was registered with (always including {@link AccessFlag#LOCAL_WRITE})} */
    public Set<AccessFlag> access() {
        return access;
    }

    /**
     * {@code ibv_rereg_mr}: registers {@code newSegment} of {@code arena} and/or other access rights
     * under this region, tied to {@code arena} as {@link ProtectionDomain#register(Arena, MemorySegment, AccessFlag...)}
     * ties it (also for a region made by {@link ProtectionDomain#allocateAndRegister(long, AccessFlag...)},
     * whose own first memory is then freed at close). Keys may change; read them again afterwards.
     *
     * @param arena      the arena {@code newSegment} was allocated from
     * @param newSegment a native, writable segment of {@code arena}
     * @param newAccess  the access rights ({@code LOCAL_WRITE} is always added)
     * @throws NullPointerException     if an argument or an access flag is null
     * @throws IllegalArgumentException for a heap, read-only or empty segment, or one of another arena
     * @throws IllegalStateException    if the region is closed or was deregistered because the arena of
     *                                  its memory closed, or if {@code newSegment}'s arena is closed
     * @throws VerbsException           if {@code ibv_rereg_mr} fails; the region keeps its old memory
     */
    public void reregister(Arena arena, MemorySegment newSegment, Set<AccessFlag> newAccess) {
        checkSegment(arena, newSegment);
        Set<AccessFlag> flags = withImplied(Objects.requireNonNull(newAccess, "newAccess"));
        MemorySegment mr = handle();
        synchronized (registration) {
            if (!registration.isLive()) {
                throw new IllegalStateException(this + " was deregistered when the arena of its memory closed");
            }
            int rc = call(c -> (int) REREG_MR.invokeExact(c.errno(), mr,
                    Verbs.IBV_REREG_MR_CHANGE_TRANSLATION() | Verbs.IBV_REREG_MR_CHANGE_ACCESS(),
                    MemorySegment.NULL, newSegment, newSegment.byteSize(), AccessFlag.mask(flags)));
            if (rc != 0) {
                // ibv_rereg_mr returns an enum ibv_rereg_mr_err_code and sets errno.
                throw new VerbsException("ibv_rereg_mr", Errno.EOPNOTSUPP, "rereg error code " + rc
                        + "; the region keeps its old memory");
            }
            registration.generation++;
            if (arena != ownedArena) {
                // Also for a region that owned its first memory: the new memory is the caller's, and
                // its arena must deregister before it frees it.
                tie(arena, registration.generation);
            }
        }
        this.segment = newSegment;
        this.iova = newSegment.address();
        this.access = flags;
        refreshKeys();
    }

    /**
     * Checks that {@code [offset, offset + length)} lies inside this region and that its memory is
     * still alive; used when a scatter/gather entry is built, before anything reaches the device.
     */
    void checkRange(long offset, long length) {
        MemorySegment s = segment;
        if (offset < 0 || length < 0 || offset > s.byteSize() - length) {
            throw new IndexOutOfBoundsException("[" + offset + ", " + (offset + length) + ") is outside "
                    + this + " of " + s.byteSize() + " bytes");
        }
        checkMemory();
    }

    /** Throws if the registered memory has been freed or the region deregistered. */
    void checkMemory() {
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException("the memory of " + this + " has been freed (its arena is closed) "
                    + "and the region deregistered with it");
        }
        if (!isOpen()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    @Override
    void destroy(MemorySegment address) {
        registration.deregister();
        if (ownedArena != null) {
            ownedArena.close(); // only once the device no longer uses the memory
        }
    }

    @Override
    public String toString() {
        return "MemoryRegion[lkey=0x" + Integer.toHexString(lkey) + ", rkey=0x" + Integer.toHexString(rkey)
                + ", length=" + segment.byteSize() + "]";
    }
}
