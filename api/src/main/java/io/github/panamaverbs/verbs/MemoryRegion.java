package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_mr;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.EnumSet;
import java.util.Set;

/**
 * Registered memory ({@code struct ibv_mr}): a native {@link MemorySegment} the device may read and
 * write, named in work requests by its {@link #lkey()} (locally) and {@link #rkey()} (by peers).
 *
 * <p>The region keeps its segment reachable. The segment's arena must stay open while the region is
 * registered: a work request over a segment whose arena has been closed is refused in Java.
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

    private final ProtectionDomain pd;
    private final Arena ownedArena;
    private volatile MemorySegment segment;
    private volatile Set<AccessFlag> access;
    private volatile int lkey;
    private volatile int rkey;

    MemoryRegion(ProtectionDomain pd, MemorySegment segment, Set<AccessFlag> access, Arena ownedArena) {
        super(register(pd, segment, access), ibv_mr.sizeof(), pd);
        this.pd = pd;
        this.ownedArena = ownedArena;
        this.segment = segment;
        this.access = withImplied(access);
        refreshKeys();
    }

    private static MemorySegment register(ProtectionDomain pd, MemorySegment segment, Set<AccessFlag> access) {
        checkSegment(segment);
        MemorySegment pdHandle = checkOpen(pd);
        int flags = AccessFlag.mask(withImplied(access));
        try (Arena call = Arena.ofConfined()) {
            MemorySegment errno = Native.errnoSegment(call);
            MemorySegment mr;
            if ((flags & OPTIONAL_RANGE) != 0) {
                // What the ibv_reg_mr macro does for optional access flags (relaxed ordering).
                mr = (MemorySegment) REG_MR_IOVA2.invokeExact(errno, pdHandle, segment, segment.byteSize(),
                        segment.address(), flags);
            } else {
                mr = (MemorySegment) REG_MR.invokeExact(errno, pdHandle, segment, segment.byteSize(), flags);
            }
            if (mr.address() == 0) {
                int e = Native.errno(errno);
                throw new VerbsException("ibv_reg_mr", e, Native.hint("ibv_reg_mr", e) != null
                        ? Native.hint("ibv_reg_mr", e) + " (registering " + segment.byteSize() + " bytes)" : null);
            }
            return mr;
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    private static void checkSegment(MemorySegment segment) {
        if (segment == null) {
            throw new IllegalArgumentException("segment is null");
        }
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
        MemorySegment mr = handle();
        lkey = ibv_mr.lkey(mr);
        rkey = ibv_mr.rkey(mr);
    }

    /** The protection domain it is registered in. */
    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /** The registered memory. */
    public MemorySegment segment() {
        return segment;
    }

    /** {@code lkey}: names this region in local scatter/gather entries. */
    public int lkey() {
        return lkey;
    }

    /** {@code rkey}: names this region in a peer's RDMA and atomic requests. */
    public int rkey() {
        return rkey;
    }

    /** {@code addr}: the address peers use in RDMA requests. */
    public long address() {
        return segment.address();
    }

    /** {@code length}: the number of bytes registered. */
    public long length() {
        return segment.byteSize();
    }

    /** The access rights it was registered with (always including {@link AccessFlag#LOCAL_WRITE}). */
    public Set<AccessFlag> access() {
        return access;
    }

    /**
     * {@code ibv_rereg_mr}: registers a different segment and/or access rights under this region.
     * Keys may change; read them again afterwards.
     */
    public void reregister(MemorySegment newSegment, Set<AccessFlag> newAccess) {
        checkSegment(newSegment);
        Set<AccessFlag> flags = withImplied(newAccess);
        MemorySegment mr = handle();
        try (Arena call = Arena.ofConfined()) {
            MemorySegment errno = Native.errnoSegment(call);
            int rc = (int) REREG_MR.invokeExact(errno, mr,
                    Verbs.IBV_REREG_MR_CHANGE_TRANSLATION() | Verbs.IBV_REREG_MR_CHANGE_ACCESS(),
                    MemorySegment.NULL, newSegment, newSegment.byteSize(), AccessFlag.mask(flags));
            if (rc != 0) {
                int e = Native.errno(errno);
                throw new VerbsException("ibv_rereg_mr", e != 0 ? e : Errno.EINVAL, "rereg error code " + rc);
            }
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
        this.segment = newSegment;
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
            throw new IllegalStateException("the memory of " + this + " has been freed (its arena is closed)");
        }
        if (!isOpen()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    @Override
    void destroy(MemorySegment address) {
        Native.destroy("ibv_dereg_mr", DEREG_MR, address);
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
