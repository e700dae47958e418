package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_mr;
import io.github.panamaverbs.bindings.ibv_sge;
import io.github.panamaverbs.bindings.verbs_context;
import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Jfr;
import io.github.panamaverbs.internal.Native;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
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
    private static final MethodHandle REG_DMABUF_MR = Native.withErrno(
            Verbs.ibv_reg_dmabuf_mr$address(), Verbs.ibv_reg_dmabuf_mr$descriptor());
    /** verbs_context.advise_mr(pd, advice, flags, sg_list, num_sge): called through the pointer, as the inline ibv_advise_mr does. */
    private static final MethodHandle ADVISE_MR = Native.LINKER.downcallHandle(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    private static final int OPTIONAL_RANGE = Verbs.IBV_ACCESS_OPTIONAL_RANGE();
    /** {@code IB_UVERBS_ADVISE_MR_FLAG_FLUSH} (rdma/ib_user_ioctl_verbs.h): return only once the advice is carried out. */
    private static final int ADVISE_FLUSH = 1;

    /**
     * {@code enum ibv_advise_mr_advice}: what {@link #advise} asks of the device for a range of an
     * On-Demand Paging region (values from {@code rdma/ib_user_ioctl_verbs.h}).
     */
    public enum Advice {
        /** {@code IBV_ADVISE_MR_ADVICE_PREFETCH}: map the pages for reading, faulting them in. */
        PREFETCH(0),
        /** {@code IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE}: map the pages for writing, faulting them in. */
        PREFETCH_WRITE(1),
        /** {@code IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT}: map the pages already present, without faulting. */
        PREFETCH_NO_FAULT(2);

        final int value;

        Advice(int value) {
            this.value = value;
        }
    }

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
     * Null for memory the JVM addresses (a segment); else what the region covers that the JVM does not
     * map (a dma-buf, or the whole address space), and {@link #segment} is a stand-in that is never
     * accessed: it gives scatter entries their bounds, and is always alive.
     */
    private final String unmapped;

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
        this.unmapped = null;
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

    /** A region of memory the JVM does not map ({@link #unmapped}): {@code length} bytes from {@code iova} for its keys. */
    private MemoryRegion(ProtectionDomain pd, MemorySegment mr, long iova, long length, Set<AccessFlag> access,
                         String unmapped) {
        super(mr, ibv_mr.sizeof(), pd);
        this.ownedArena = null;
        this.registration = new Registration(ptr().address());
        this.pd = pd;
        this.segment = MemorySegment.NULL.reinterpret(length); // bounds only: never read or written
        this.iova = iova;
        this.unmapped = unmapped;
        try {
            this.access = withImplied(access);
            refreshKeys();
            afterCreate();
        } catch (RuntimeException | Error e) {
            abandon(e);
            throw e;
        }
    }

    /** {@code ibv_reg_dmabuf_mr}: see {@link ProtectionDomain#registerDmaBuf}. */
    static MemoryRegion dmaBuf(ProtectionDomain pd, int fd, long offset, long length, long iova, Set<AccessFlag> access) {
        Objects.requireNonNull(access, "access");
        if (fd < 0) {
            throw new IllegalArgumentException("fd must be an open dma-buf file descriptor, not " + fd);
        }
        if (offset < 0 || length <= 0) {
            throw new IllegalArgumentException("offset must not be negative and length must be positive: offset "
                    + offset + ", length " + length);
        }
        if (access.contains(AccessFlag.ON_DEMAND)) {
            throw new IllegalArgumentException("a dma-buf is registered without ON_DEMAND (the exporter moves its pages)");
        }
        MemorySegment pdHandle = checkOpen(pd);
        int flags = AccessFlag.mask(withImplied(access));
        String device = pd.context().device().name();
        Jfr.MemoryRegistration event = new Jfr.MemoryRegistration();
        event.begin();
        MemorySegment mr;
        try {
            mr = Native.create("ibv_reg_dmabuf_mr", e -> e == Errno.EOPNOTSUPP ? device + " does not register "
                            + "dma-bufs (its provider has no reg_dmabuf_mr, or its kernel driver none)"
                            : e == Errno.EBADF ? "fd " + fd + " is not open"
                            : e == Errno.EINVAL ? "fd " + fd + " is not a dma-buf, or [offset, offset + length) is not inside it"
                            : Native.MEMLOCK.explain(e),
                    c -> (MemorySegment) REG_DMABUF_MR.invokeExact(c.errno(), pdHandle, offset, length, iova, fd, flags));
        } catch (IllegalStateException e) {
            throw closed(e, pd);
        }
        registered(event, pd, "ibv_reg_dmabuf_mr", mr, length, flags);
        return new MemoryRegion(pd, mr, iova, length, access, "a dma-buf (fd " + fd + ")");
    }

    /** {@code ibv_reg_mr(pd, NULL, SIZE_MAX, ON_DEMAND | ...)}: see {@link ProtectionDomain#registerImplicitOnDemand}. */
    static MemoryRegion implicitOnDemand(ProtectionDomain pd, Set<AccessFlag> access) {
        Objects.requireNonNull(access, "access");
        MemorySegment pdHandle = checkOpen(pd);
        EnumSet<AccessFlag> all = EnumSet.of(AccessFlag.ON_DEMAND);
        all.addAll(access);
        int flags = AccessFlag.mask(withImplied(all));
        long caps = pd.context().queryDevice().odpGeneralCaps();
        if ((caps & Verbs.IBV_ODP_SUPPORT_IMPLICIT()) == 0) {
            throw new VerbsException("ibv_reg_mr", Errno.EOPNOTSUPP, pd.context().device().name() + " has no implicit "
                    + "On-Demand Paging (its odp_caps.general_caps lack IBV_ODP_SUPPORT_IMPLICIT"
                    + ((caps & Verbs.IBV_ODP_SUPPORT()) == 0 ? " and IBV_ODP_SUPPORT" : "") + ")");
        }
        Jfr.MemoryRegistration event = new Jfr.MemoryRegistration();
        event.begin();
        MemorySegment mr;
        try {
            mr = Native.create("ibv_reg_mr", Native.NO_HINT, c -> (MemorySegment) REG_MR.invokeExact(c.errno(), pdHandle,
                    MemorySegment.NULL, -1L, flags));
        } catch (IllegalStateException e) {
            throw closed(e, pd);
        }
        registered(event, pd, "ibv_reg_mr", mr, -1L, flags);
        return new MemoryRegion(pd, mr, 0, Long.MAX_VALUE, all, "the whole address space (implicit On-Demand Paging)");
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
        Jfr.MemoryRegistration event = new Jfr.MemoryRegistration();
        event.begin();
        if (access.contains(AccessFlag.ON_DEMAND)
                && (pd.context().queryDevice().odpGeneralCaps() & Verbs.IBV_ODP_SUPPORT()) == 0) {
            throw new VerbsException("ibv_reg_mr", Errno.EOPNOTSUPP, pd.context().device().name() + " has no On-Demand "
                    + "Paging (its odp_caps.general_caps lack IBV_ODP_SUPPORT): register without ON_DEMAND");
        }
        MemorySegment mr;
        try {
            mr = registerChecked(pdHandle, segment, flags, iova);
        } catch (IllegalStateException e) {
            throw closed(e, pd);
        }
        return registered(event, pd, iova != NO_IOVA ? "ibv_reg_mr_iova2" : "ibv_reg_mr", mr, segment.byteSize(), flags);
    }

    /** Commits {@code event} for the registration {@code mr}, and returns it. */
    private static MemorySegment registered(Jfr.MemoryRegistration event, ProtectionDomain pd, String verb, MemorySegment mr,
                                            long bytes, int flags) {
        if (event.shouldCommit()) {
            MemorySegment m = mr.reinterpret(ibv_mr.sizeof());
            event.device = pd.context().device().name();
            event.verb = verb;
            event.bytes = bytes;
            event.access = AccessFlag.of(flags).toString();
            event.lkey = ibv_mr.lkey(m);
            event.rkey = ibv_mr.rkey(m);
            event.commit();
        }
        return mr;
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
        if (unmapped != null) {
            throw new IllegalStateException(this + " covers " + unmapped + ", which the JVM does not map: there is no "
                    + "segment to read or write");
        }
        return segment;
    }

    /** The segment, or for an unmapped region its stand-in (never to be accessed): what scatter entries check. */
    MemorySegment memory() {
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
        return unmapped == null && ownedArena != null && segment.scope().equals(ownedArena.scope());
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
        if (unmapped != null) {
            throw new IllegalStateException(this + " covers " + unmapped + ": register the new memory as a region of its own");
        }
        checkSegment(arena, newSegment);
        Set<AccessFlag> flags = withImplied(Objects.requireNonNull(newAccess, "newAccess"));
        MemorySegment mr = handle();
        Jfr.MemoryRegistration event = new Jfr.MemoryRegistration();
        event.begin();
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
        registered(event, pd, "ibv_rereg_mr", mr, newSegment.byteSize(), AccessFlag.mask(flags));
    }

    /**
     * {@code ibv_advise_mr}: advice to the device about {@code [offset, offset + length)} of this
     * On-Demand Paging region, usually to fault its pages in before the data path needs them (without
     * it, the first access of each page waits for a page fault on the device).
     *
     * @param advice what to do
     * @param offset the first byte, from {@link #address()} (for an implicit region: the address itself)
     * @param length the number of bytes
     * @param flush  wait until it is done ({@code IB_UVERBS_ADVISE_MR_FLAG_FLUSH}); else the call may
     *               return before
     * @throws IndexOutOfBoundsException if the range is outside the region
     * @throws IllegalArgumentException  if the region was registered without {@link AccessFlag#ON_DEMAND}
     * @throws IllegalStateException     if the region or its memory is gone
     * @throws VerbsException            EOPNOTSUPP (in Java, before any call) where the device has no On-Demand
     *                                   Paging, or the provider has no {@code advise_mr}; else what the
     *                                   provider returns
     */
    public void advise(Advice advice, long offset, int length, boolean flush) {
        Objects.requireNonNull(advice, "advice");
        checkMemory(); // closed, or its memory freed: refused before anything else
        Context context = pd.context();
        if ((context.queryDevice().odpGeneralCaps() & Verbs.IBV_ODP_SUPPORT()) == 0) {
            throw new VerbsException("ibv_advise_mr", Errno.EOPNOTSUPP, context.device().name() + " has no On-Demand "
                    + "Paging (its odp_caps.general_caps lack IBV_ODP_SUPPORT): there is nothing to advise");
        }
        if (!access.contains(AccessFlag.ON_DEMAND)) {
            throw new IllegalArgumentException(this + " was registered without ON_DEMAND: its pages are pinned already");
        }
        checkRange(offset, Integer.toUnsignedLong(length));
        MemorySegment fn = context.extendedOp(verbs_context.advise_mr$offset());
        if (fn.address() == 0) {
            throw new VerbsException("ibv_advise_mr", Errno.EOPNOTSUPP, context.device().name() + "'s provider has no advise_mr");
        }
        MemorySegment pdHandle = checkOpen(pd);
        long address = iova + offset;
        int key = lkey;
        int rc = call(c -> {
            MemorySegment sge = c.allocate(ibv_sge.layout());
            ibv_sge.addr(sge, address);
            ibv_sge.length(sge, length);
            ibv_sge.lkey(sge, key);
            return (int) ADVISE_MR.invokeExact(fn, pdHandle, advice.value, flush ? ADVISE_FLUSH : 0, sge, 1);
        });
        if (rc != 0) {
            throw Native.fail("ibv_advise_mr", rc, Native.NO_HINT);
        }
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
