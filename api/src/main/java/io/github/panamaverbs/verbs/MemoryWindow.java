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
import io.github.panamaverbs.internal.Quirks;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.LinkedHashSet;
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
 *
 * <p><b>Type 2 windows, checked in Java.</b> The API keeps what its posts did to a type 2 window:
 * bound (under which key, through which queue pair) or not. It refuses a bind of a window that is
 * bound (invalidate it first), a key of another index than the window's, and a {@code LOCAL_INV}
 * (by {@link SendRequest} or {@link SendBatch}) of a key of one of the context's type 2 windows that
 * is not bound under that key (never bound, or invalidated already) or is bound through another
 * queue pair: the kernel may trip on those (Soft-RoCE dereferences NULL). A peer's
 * {@code SEND_WITH_INV} is not seen here: after one, close the window rather than invalidate it
 * again. A queue pair that a type 2 window was bound through is used by the window (the kernel holds
 * it) until the window is closed: closing the queue pair first is refused, naming the window
 * (Soft-RoCE's {@code ibv_destroy_qp} would otherwise wait 50 s and leave the window pointing at
 * freed memory).
 *
 * <p><b>Type 2 windows on Soft-RoCE</b> are refused ({@link UnsupportedOperationException}) unless
 * the system property {@code panamaverbs.unsafe.rxeType2Windows} is {@code true}: its kernel driver
 * (every release through Linux 7.3-rc7; no fix upstream) panics when a type 2 window that is not
 * bound is invalidated, and any peer that holds the window's rkey can do that with two
 * {@code SEND_WITH_INV}s, which no check on this side can stop. Type 1 windows are not affected.
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

    /** The warning of a type 2 window on Soft-RoCE (with the opt-in) is logged once per process. */
    private static volatile boolean warnedType2OnRxe;

    private final ProtectionDomain pd;
    private final Type type;
    private final MemorySegment deallocFn;
    /** The key it was allocated with: its index (the upper 24 bits) stays for its life. */
    private final int allocatedRkey;

    // A type 2 window's binding as far as the posts through this API say (guarded by this): set when a bind
    // is posted, cleared when a LOCAL_INV of its key is. The kernel would trip on an invalidation of a window
    // that is not bound (Soft-RoCE: a NULL dereference in rxe_invalidate_mw), so the API refuses one it
    // knows is not; a peer's SEND_WITH_INV is not seen here.
    private QueuePair boundQp;
    private int boundRkey;
    /** The queue pairs a type 2 bind went through: the kernel holds each until the window is freed, so each is used by it until it closes. */
    private final Set<QueuePair> boundThrough = new LinkedHashSet<>();

    MemoryWindow(ProtectionDomain pd, Type type, MemorySegment allocated, MemorySegment deallocFn) {
        super(allocated, ibv_mw.sizeof(), pd);
        this.deallocFn = deallocFn;
        this.pd = pd;
        this.type = type;
        this.allocatedRkey = ibv_mw.rkey(ptr());
        if (type == Type.TYPE_2) {
            pd.context().registerWindow(this, allocatedRkey);
        }
    }

    /** {@code ibv_alloc_mw}, an inline of verbs.h: {@code pd->context->ops.alloc_mw}, EOPNOTSUPP if the device has none. */
    static MemoryWindow allocate(ProtectionDomain pd, Type type) {
        Objects.requireNonNull(type, "type");
        MemorySegment pdHandle = checkOpen(pd);
        Context context = pd.context();
        MemorySegment alloc;
        MemorySegment dealloc;
        try {
            alloc = context.op(ibv_context_ops.alloc_mw$offset());
            dealloc = context.op(ibv_context_ops.dealloc_mw$offset());
        } catch (VerbsException e) {
            throw new VerbsException("ibv_alloc_mw", Errno.EOPNOTSUPP, context.device().name()
                    + " has no memory windows");
        }
        if (type == Type.TYPE_2 && context.has(Quirks.RXE_TYPE2_WINDOW_INVALIDATE_PANIC)
                && !Quirks.unsafeRxeType2WindowsAllowed()) {
            throw new UnsupportedOperationException("type 2 memory windows are refused on Soft-RoCE (" + context.device().name()
                    + "): its kernel driver dereferences NULL (a kernel panic) when a type 2 window that is not bound is "
                    + "invalidated, and a peer that holds the window's rkey can do that with SEND_WITH_INV (Linux 6.1 to 7.3, "
                    + "no fix upstream). Use a type 1 window or a memory region; to use type 2 windows with peers you trust, "
                    + "set -D" + Quirks.UNSAFE_RXE_TYPE2_WINDOWS + "=true");
        }
        if (type == Type.TYPE_2 && context.has(Quirks.RXE_TYPE2_WINDOW_INVALIDATE_PANIC) && !warnedType2OnRxe) {
            warnedType2OnRxe = true;
            System.getLogger(MemoryWindow.class.getName()).log(System.Logger.Level.WARNING, "type 2 memory windows on "
                    + "Soft-RoCE (" + context.device().name() + "), allowed by -D" + Quirks.UNSAFE_RXE_TYPE2_WINDOWS
                    + ": a peer that holds a window's rkey can panic this host's kernel with SEND_WITH_INV");
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
     * is posted). A type 2 window has the key it was allocated with until a bind request is posted
     * through this API, and then the key that request names (written into {@code struct ibv_mw}, as
     * a type 1 bind does: Soft-RoCE's next bind checks it).
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

    /**
     * A change of a type 2 window's binding made by a post: recorded before the request reaches the
     * provider, so that two threads cannot both invalidate one key, and undone if the post fails.
     *
     * @param addedQp whether the bind made {@code qp} one of the queue pairs the window uses
     */
    record Change(MemoryWindow window, QueuePair qp, QueuePair previousQp, int previousRkey, int previousWindowRkey,
                  int boundKey, boolean addedQp) {
        void undo() {
            window.undo(this);
        }

        /**
         * The request reached the provider (which read the window's current key from {@code struct
         * ibv_mw}): a bind's key is the window's from now on, as {@code ibv_bind_mw} sets it for type 1.
         * Soft-RoCE checks the key the next bind names as the window's against its own, and refuses a
         * stale one (MW_BIND_ERR).
         */
        void posted() {
            if (boundKey != 0) {
                window.setKey(boundKey);
            }
        }
    }

    private synchronized void setKey(int rkey) {
        if (isOpen()) {
            ibv_mw.rkey(ptr(), rkey);
        }
    }

    /**
     * Checks a type 2 bind of this window under {@code rkey} through {@code qp} and records it: the
     * window must not be bound (a type 2 window is invalidated before it is bound again), {@code rkey}
     * must have the window's index, and {@code qp} must be of the window's domain.
     */
    synchronized Change bindPosted(QueuePair qp, int rkey) {
        if (!isOpen()) {
            throw new IllegalStateException(this + " is closed");
        }
        if (qp.protectionDomain() != pd) {
            throw new IllegalArgumentException(qp + " belongs to another protection domain than " + this);
        }
        if (boundQp != null) {
            throw new IllegalStateException(this + " is bound (rkey 0x" + Integer.toHexString(boundRkey) + " through "
                    + boundQp + "): invalidate it (LOCAL_INV there) before binding it again");
        }
        if (((rkey ^ allocatedRkey) & ~0xff) != 0) {
            throw new IllegalArgumentException("rkey 0x" + Integer.toHexString(rkey) + " has another index than " + this
                    + " (0x" + Integer.toHexString(allocatedRkey >>> 8) + "): bind it under nextRkey()");
        }
        boolean added = boundThrough.add(qp);
        if (added) {
            try {
                qp.addUser(this);
            } catch (RuntimeException e) {
                boundThrough.remove(qp);
                throw e;
            }
        }
        Change c = new Change(this, qp, null, 0, ibv_mw.rkey(ptr()), rkey, added);
        boundQp = qp;
        boundRkey = rkey;
        return c;
    }

    /**
     * Checks a {@code LOCAL_INV} of {@code rkey} through {@code qp} and records it: when the key's
     * index is one of this context's type 2 windows, that window must be bound under that very key,
     * through {@code qp}. Null when the key names no such window (a memory region's key, or one the
     * device will refuse itself).
     */
    static Change invalidatePosted(QueuePair qp, int rkey) {
        MemoryWindow w = qp.protectionDomain().context().windowOf(rkey);
        return w == null ? null : w.invalidate(qp, rkey);
    }

    private synchronized Change invalidate(QueuePair qp, int rkey) {
        if (boundQp == null || boundRkey != rkey) {
            throw new IllegalStateException("LOCAL_INV of rkey 0x" + Integer.toHexString(rkey) + " names " + this
                    + ", which is not bound under that key (never bound, or invalidated already" + (boundQp == null ? ""
                    : "; it is bound under 0x" + Integer.toHexString(boundRkey)) + "): refused, a type 2 window that is "
                    + "not bound must not be invalidated (Soft-RoCE's kernel driver dereferences NULL then)");
        }
        if (boundQp != qp) {
            throw new IllegalStateException(this + " is bound through " + boundQp + ": invalidate it there, not through " + qp);
        }
        Change c = new Change(this, qp, boundQp, boundRkey, ibv_mw.rkey(ptr()), 0, false);
        boundQp = null;
        return c;
    }

    private synchronized void undo(Change c) {
        boundQp = c.previousQp;
        boundRkey = c.previousRkey;
        if (isOpen()) {
            ibv_mw.rkey(ptr(), c.previousWindowRkey);
        }
        if (c.addedQp && boundThrough.remove(c.qp)) {
            c.qp.removeUser(this);
        }
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
        MemorySegment bindFn = pd.context().op(ibv_context_ops.bind_mw$offset());
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
        if (type == Type.TYPE_2) {
            pd.context().unregisterWindow(this, allocatedRkey);
            for (QueuePair qp : boundThrough) { // (under this: close() holds the lock)
                qp.removeUser(this);
            }
            boundThrough.clear();
            boundQp = null;
        }
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
