package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.github.panamaverbs.bindings.ibv_context_ops;
import io.github.panamaverbs.bindings.ibv_mw;
import io.github.panamaverbs.bindings.ibv_mw_bind;
import io.github.panamaverbs.bindings.ibv_mw_bind_info;
import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Native;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Objects;
import java.util.Set;

/**
 * A memory window ({@code struct ibv_mw}): a range of a {@link MemoryRegion} that a peer may reach
 * with the window's own rkey, granted and taken back without registering memory again.
 *
 * <ul>
 * <li>{@link Type#TYPE_1}: bound with {@link QueuePair#bindMemoryWindow} ({@code ibv_bind_mw}), which
 * gives it a new rkey; binding it again moves the range, closing it revokes it.</li>
 * <li>{@link Type#TYPE_2}: bound by a work request ({@link SendRequest#bindMemoryWindow}) with an rkey
 * the caller chooses ({@link #nextRkey()}), and only for the queue pair that posted the bind; revoked
 * by {@link SendOpcode#LOCAL_INV} or by the peer's {@link SendOpcode#SEND_WITH_INV} naming its rkey.</li>
 * </ul>
 *
 * <p>Windows are bound only to regions that own their memory
 * ({@link ProtectionDomain#allocateAndRegister(long, AccessFlag...)}): such memory is freed only once
 * the region is deregistered, and the device refuses to deregister a region with a window bound to it
 * (closing the region then throws, and it stays open), so a window never exposes freed memory.
 * Close or invalidate the windows first. A window's rights need the region's: remote write needs the
 * region's {@link AccessFlag#LOCAL_WRITE} (always given) and the region needs {@link AccessFlag#MW_BIND}.
 *
 * <p>Soft-RoCE (rxe, as of Linux 6.1) checks the range of a window's requests against its region, not
 * the window: there a window limits the rights and the lifetime of a peer's access, not its range.
 *
 * <p>Devices without windows (SoftiWARP, for one) fail {@link ProtectionDomain#allocateMemoryWindow}
 * with {@code EOPNOTSUPP}. Close a window before its protection domain.
 */
public final class MemoryWindow extends Resource {
    /** {@code enum ibv_mw_type}. */
    public enum Type {
        /** {@code IBV_MW_TYPE_1}: bound with {@code ibv_bind_mw}. */
        TYPE_1(1),
        /** {@code IBV_MW_TYPE_2}: bound with a {@code BIND_MW} work request. */
        TYPE_2(2);

        final int value;

        Type(int value) {
            this.value = value;
        }
    }

    /** struct ibv_mw *(*alloc_mw)(struct ibv_pd *, enum ibv_mw_type), through context->ops. */
    private static final MethodHandle ALLOC = Native.withErrno(FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT));
    /** int (*dealloc_mw)(struct ibv_mw *) */
    private static final MethodHandle DEALLOC = Native.withErrno(FunctionDescriptor.of(JAVA_INT, ADDRESS));
    /** int (*bind_mw)(struct ibv_qp *, struct ibv_mw *, struct ibv_mw_bind *) */
    private static final MethodHandle BIND = Native.withErrno(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));

    private final ProtectionDomain pd;
    private final Type type;
    private final MemorySegment deallocFn;

    MemoryWindow(ProtectionDomain pd, Type type, MemorySegment allocated, MemorySegment deallocFn) {
        super(allocated, ibv_mw.sizeof(), pd);
        this.deallocFn = deallocFn;
        this.pd = pd;
        this.type = type;
    }

    /** {@code ibv_alloc_mw}, an inline of verbs.h: {@code pd->context->ops.alloc_mw}, EOPNOTSUPP if the device has none. */
    static MemoryWindow allocate(ProtectionDomain pd, Type type) {
        Objects.requireNonNull(type, "type");
        MemorySegment pdHandle = checkOpen(pd);
        Context context = pd.context();
        MemorySegment alloc;
        MemorySegment dealloc;
        try {
            alloc = DataPath.op(context, ibv_context_ops.alloc_mw$offset());
            dealloc = DataPath.op(context, ibv_context_ops.dealloc_mw$offset());
        } catch (VerbsException e) {
            throw new VerbsException("ibv_alloc_mw", Errno.EOPNOTSUPP, context.device().name()
                    + " has no memory windows");
        }
        MemorySegment mw;
        try {
            mw = Native.create("ibv_alloc_mw", e -> e == Errno.EOPNOTSUPP || e == Errno.EINVAL
                    ? context.device().name() + " does not support memory windows of " + type : null,
                    c -> (MemorySegment) ALLOC.invokeExact(alloc, c.errno(), pdHandle, type.value));
        } catch (IllegalStateException e) {
            throw closed(e, pd);
        }
        return new MemoryWindow(pd, type, mw, dealloc);
    }

    /** {@return the window's type} */
    public Type type() {
        return type;
    }

    /** {@return the protection domain it was allocated in} */
    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /**
     * {@return the window's rkey, as {@code struct ibv_mw} holds it} After a type 1 bind, the key that
     * bind gave (also when the bind then completes with an error: the provider changes it when the bind
     * is posted). A type 2 window keeps the key it was allocated with here; a bind request gives it the
     * key named in the request.
     *
     * @throws IllegalStateException if the window is closed
     */
    public int rkey() {
        return read(ibv_mw::rkey);
    }

    /**
     * {@return {@code ibv_inc_rkey(rkey())}: the same index with the next 8-bit tag, the key for the
     * next type 2 bind}
     *
     * @throws IllegalStateException if the window is closed
     */
    public int nextRkey() {
        return incrementKey(rkey());
    }

    /** {@code ibv_inc_rkey}: the low 8 bits (the tag) incremented, the index kept. */
    static int incrementKey(int rkey) {
        return (rkey & ~0xff) | ((rkey + 1) & 0xff);
    }

    /**
     * Checks a bind of this window, which must be of type {@code required}, to {@code [offset, offset +
     * length)} of {@code region}: the same domain, memory the region owns, the range inside it.
     * Returns the window access mask.
     */
    int checkBind(Type required, MemoryRegion region, long offset, long length, Set<AccessFlag> access) {
        if (type != required) {
            throw new IllegalArgumentException(type == Type.TYPE_1
                    ? this + " is a type 1 window: bind it with QueuePair.bindMemoryWindow (ibv_bind_mw), not a work request"
                    : this + " is a type 2 window: bind it with a work request (SendRequest or SendBatch "
                    + "bindMemoryWindow), not ibv_bind_mw");
        }
        Objects.requireNonNull(region, "region");
        Objects.requireNonNull(access, "access");
        if (region.protectionDomain() != pd) {
            throw new IllegalArgumentException(region + " is registered in another protection domain than " + this);
        }
        if (!region.ownsMemory()) {
            throw new IllegalArgumentException("a memory window binds only to a region that owns its memory "
                    + "(ProtectionDomain.allocateAndRegister): the arena of " + region + " could free memory the "
                    + "window still exposes");
        }
        if (length <= 0) {
            throw new IllegalArgumentException("a window's length must be positive, not " + length
                    + " (to revoke it, close it or invalidate it)");
        }
        region.checkRange(offset, length);
        for (AccessFlag f : access) {
            if (f != AccessFlag.REMOTE_READ && f != AccessFlag.REMOTE_WRITE && f != AccessFlag.REMOTE_ATOMIC
                    && f != AccessFlag.ZERO_BASED) {
                throw new IllegalArgumentException(f + " is not a right a memory window grants (REMOTE_READ, "
                        + "REMOTE_WRITE, REMOTE_ATOMIC, ZERO_BASED)");
            }
        }
        return AccessFlag.mask(access);
    }

    /** Writes {@code struct ibv_mw_bind_info} for {@code region} at {@code info}. */
    static void writeBindInfo(MemorySegment info, MemoryRegion region, long offset, long length, int access) {
        info.set(ADDRESS, ibv_mw_bind_info.mr$offset(), region.ptr());
        info.set(JAVA_LONG, ibv_mw_bind_info.addr$offset(), region.address() + offset);
        info.set(JAVA_LONG, ibv_mw_bind_info.length$offset(), length);
        info.set(JAVA_INT, ibv_mw_bind_info.mw_access_flags$offset(), access);
    }

    /** {@code ibv_bind_mw} on {@code qp}; see {@link QueuePair#bindMemoryWindow}. */
    int bind(QueuePair qp, MemoryRegion region, long offset, long length, Set<AccessFlag> access, long wrId,
             boolean signaled) {
        Objects.requireNonNull(qp, "qp");
        int mask = checkBind(Type.TYPE_1, region, offset, length, access);
        if (qp.protectionDomain() != pd) {
            throw new IllegalArgumentException(qp + " belongs to another protection domain than " + this);
        }
        MemorySegment bindFn = DataPath.op(pd.context(), ibv_context_ops.bind_mw$offset());
        MemorySegment q = qp.handle();
        MemorySegment mw = handle();
        region.checkMemory(); // open, memory alive (it owns it); not held during the call: see bindMemoryWindow
        try {
            Native.check("ibv_bind_mw", e -> e == Errno.EINVAL && access.contains(AccessFlag.ZERO_BASED)
                    ? "the device does not bind zero-based windows" : null, c -> {
                        MemorySegment bind = c.allocate(ibv_mw_bind.layout());
                        bind.set(JAVA_LONG, ibv_mw_bind.wr_id$offset(), wrId);
                        bind.set(JAVA_INT, ibv_mw_bind.send_flags$offset(), signaled ? SendFlag.SIGNALED.value : 0);
                        writeBindInfo(bind.asSlice(ibv_mw_bind.bind_info$offset(), ibv_mw_bind_info.sizeof()), region,
                                offset, length, mask);
                        return (int) BIND.invokeExact(bindFn, c.errno(), q, mw, bind);
                    });
        } catch (IllegalStateException e) {
            throw closed(e, qp, this, region);
        }
        return rkey();
    }

    @Override
    void destroy(MemorySegment address) {
        Native.check("ibv_dealloc_mw", Native.NO_HINT, c -> (int) DEALLOC.invokeExact(deallocFn, c.errno(), address));
    }

    @Override
    public String toString() {
        String key;
        try {
            key = isOpen() ? "rkey=0x" + Integer.toHexString(rkey()) : "closed";
        } catch (IllegalStateException e) {
            key = "closed";
        }
        return "MemoryWindow[" + type + ", " + key + "]";
    }
}
