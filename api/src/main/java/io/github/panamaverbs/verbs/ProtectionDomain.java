package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_pd;
import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Native;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;
import java.util.function.Consumer;

/**
 * A protection domain ({@code struct ibv_pd}): memory regions, queue pairs, shared receive queues
 * and address handles created from the same domain may be used together, and only then.
 *
 * <p>It cannot be closed while anything created from it is open (memory regions, queue pairs,
 * shared receive queues, address handles): close those first.
 */
public final class ProtectionDomain extends Resource {
    private static final MethodHandle ALLOC_PD = Native.withErrno(
            Verbs.ibv_alloc_pd$address(), Verbs.ibv_alloc_pd$descriptor());
    private static final MethodHandle DEALLOC_PD = Native.withErrno(
            Verbs.ibv_dealloc_pd$address(), Verbs.ibv_dealloc_pd$descriptor());

    private final Context context;

    /** Frees a domain made elsewhere; null for {@code ibv_dealloc_pd}. */
    private final Consumer<MemorySegment> destroyer;

    ProtectionDomain(Context context) {
        this(context, allocate(context), null);
    }

    /** A domain over {@code created}, an {@code ibv_pd} made elsewhere; freed by {@code destroyer}, or by {@code ibv_dealloc_pd} when null. */
    ProtectionDomain(Context context, MemorySegment created, Consumer<MemorySegment> destroyer) {
        super(created, ibv_pd.sizeof(), context);
        this.context = context;
        this.destroyer = destroyer;
    }

    private static MemorySegment allocate(Context context) {
        MemorySegment ctx = checkOpen(context);
        try {
            return Native.create("ibv_alloc_pd", Native.NO_HINT, c -> (MemorySegment) ALLOC_PD.invokeExact(c.errno(), ctx));
        } catch (IllegalStateException e) {
            throw closed(e, context);
        }
    }

    /** {@return the context this domain belongs to} */
    public Context context() {
        return context;
    }

    /**
     * {@code ibv_reg_mr}: registers {@code segment}, memory of the caller's {@code arena}, with the
     * device, so that work requests may use it. The registration is tied to the arena: closing the
     * arena deregisters the region before the memory is freed (see {@link MemoryRegion}). With no
     * flags it gets least privilege: only {@link AccessFlag#LOCAL_WRITE}, enough to receive into it
     * and to send from it. Ask for remote access explicitly.
     *
     * @param arena   the arena {@code segment} was allocated from (for memory that is never freed,
     *                such as a mapping of {@code MemorySegment.ofAddress}, {@link Arena#global()})
     * @param segment a native, writable segment of {@code arena}
     * @param access  the access rights; {@code REMOTE_WRITE} and {@code REMOTE_ATOMIC} need {@code LOCAL_WRITE}, which is added
     * @return the memory region; close it before this protection domain (closing {@code arena}
     *         deregisters it too)
     * @throws NullPointerException     if an argument or an access flag is null
     * @throws IllegalArgumentException for a heap, read-only or empty segment, or one of another arena
     * @throws IllegalStateException    if the segment's arena is already closed, or this domain is closed
     * @throws VerbsException           if registration fails; {@code ENOMEM} usually means the memlock limit
     */
    public MemoryRegion register(Arena arena, MemorySegment segment, AccessFlag... access) {
        return register(arena, segment, flags(access));
    }

    /**
     * {@code ibv_reg_mr} with a set of access flags; see {@link #register(Arena, MemorySegment, AccessFlag...)}.
     *
     * @param arena   the arena {@code segment} was allocated from
     * @param segment a native, writable segment of {@code arena}
     * @param access  the access rights ({@code LOCAL_WRITE} is always added)
     * @return the memory region; close it before this protection domain (closing {@code arena}
     *         deregisters it too)
     * @throws NullPointerException     if an argument or an access flag is null
     * @throws IllegalArgumentException for a heap, read-only or empty segment, or one of another arena
     * @throws IllegalStateException    if the segment's arena is already closed, or this domain is closed
     * @throws VerbsException           if registration fails; {@code ENOMEM} usually means the memlock limit
     */
    public MemoryRegion register(Arena arena, MemorySegment segment, Set<AccessFlag> access) {
        return new MemoryRegion(this, arena, segment, access, false);
    }

    private static Set<AccessFlag> flags(AccessFlag... access) {
        Objects.requireNonNull(access, "access");
        EnumSet<AccessFlag> set = EnumSet.noneOf(AccessFlag.class);
        for (AccessFlag f : access) {
            set.add(Objects.requireNonNull(f, "access flag"));
        }
        return set;
    }

    /**
     * Allocates {@code size} bytes of page-aligned native memory and registers it: the safe default,
     * since the region owns the memory and frees it only after deregistering, when it is closed.
     * The memory is zeroed.
     *
     * @param size   the number of bytes
     * @param access the access rights; with none, only {@link AccessFlag#LOCAL_WRITE} (which is always added)
     * @return the memory region, owner of its memory; close it before this protection domain
     * @throws NullPointerException     if {@code access} or an access flag is null
     * @throws IllegalArgumentException if {@code size} is not positive or cannot be allocated
     * @throws IllegalStateException    if this domain is closed
     * @throws VerbsException           if registration fails; {@code ENOMEM} usually means the memlock limit
     */
    public MemoryRegion allocateAndRegister(long size, AccessFlag... access) {
        return allocate(size, MemoryRegion.NO_IOVA, flags(access));
    }

    /**
     * {@code ibv_reg_mr_iova2}: as {@link #allocateAndRegister(long, AccessFlag...)}, with the keys
     * addressing the memory from {@code iova} on instead of its own addresses: peers and local scatter
     * entries use {@code iova + offset} ({@link MemoryRegion#address()} returns {@code iova}).
     *
     * @param size   the number of bytes
     * @param iova   the address of the first byte for the keys, any 64-bit value but -1
     * @param access the access rights ({@link AccessFlag#LOCAL_WRITE} is always added)
     * @return the memory region, owner of its memory; close it before this protection domain
     * @throws NullPointerException     if {@code access} or an access flag is null
     * @throws IllegalArgumentException if {@code size} is not positive or cannot be allocated, or {@code iova} is -1
     * @throws IllegalStateException    if this domain is closed
     * @throws VerbsException           if registration fails
     */
    public MemoryRegion allocateAndRegister(long size, long iova, Set<AccessFlag> access) {
        if (iova == MemoryRegion.NO_IOVA) {
            throw new IllegalArgumentException("-1 is not an IOVA this API can register at");
        }
        return allocate(size, iova, flags(Objects.requireNonNull(access, "access").toArray(AccessFlag[]::new)));
    }

    /**
     * {@code ibv_reg_dmabuf_mr}: registers {@code length} bytes of a dma-buf (memory another driver
     * exports, such as a GPU's or a {@code udmabuf} made from a memfd) from {@code offset}, addressed
     * by the keys from {@code iova}. The JVM does not map that memory: the region's
     * {@link MemoryRegion#segment()} throws; work requests name it as any region, by offset. The kernel
     * holds its own reference to the dma-buf, so {@code fd} may be closed once this returns.
     *
     * @param fd     an open dma-buf file descriptor
     * @param offset the first byte, in the dma-buf
     * @param length the number of bytes
     * @param iova   the address of the first byte for the keys ({@link MemoryRegion#address()})
     * @param access the access rights ({@link AccessFlag#LOCAL_WRITE} is always added; not
     *               {@link AccessFlag#ON_DEMAND})
     * @return the memory region; close it before this protection domain
     * @throws NullPointerException     if {@code access} or an access flag is null
     * @throws IllegalArgumentException if {@code fd} or {@code offset} is negative, {@code length} is not
     *                                  positive, or {@code access} holds {@code ON_DEMAND}
     * @throws IllegalStateException    if this domain is closed
     * @throws VerbsException           if registration fails: EOPNOTSUPP where the provider or its kernel
     *                                  driver does not take dma-bufs (Soft-RoCE and SoftiWARP), EBADF or
     *                                  EINVAL for an fd that is not an open dma-buf
     */
    public MemoryRegion registerDmaBuf(int fd, long offset, long length, long iova, Set<AccessFlag> access) {
        return MemoryRegion.dmaBuf(this, fd, offset, length, iova, access);
    }

    /**
     * Implicit On-Demand Paging: {@code ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND | ...)}, one
     * region over the whole address space of the process. Its keys reach any memory of the process
     * at its own address ({@link MemoryRegion#address()} is 0, so a work request's offset is the
     * address), faulted in by the device when first touched; nothing is pinned, and nothing ties
     * the memory's lifetime to the region: memory freed and reused is what the device then reaches,
     * as in C. Grant remote access only to peers trusted with the whole process. The JVM maps no
     * segment for it ({@link MemoryRegion#segment()} throws).
     *
     * @param access the access rights ({@link AccessFlag#ON_DEMAND} and {@link AccessFlag#LOCAL_WRITE}
     *               are always added)
     * @return the memory region; close it before this protection domain
     * @throws NullPointerException  if {@code access} or an access flag is null
     * @throws IllegalStateException if this domain is closed
     * @throws VerbsException        EOPNOTSUPP, in Java before any call, where the device's
     *                               {@code odp_caps.general_caps} lack {@code IBV_ODP_SUPPORT_IMPLICIT}
     *                               (Soft-RoCE and SoftiWARP on Linux 6.1); else what registration returns
     */
    public MemoryRegion registerImplicitOnDemand(Set<AccessFlag> access) {
        return MemoryRegion.implicitOnDemand(this, access);
    }

    private MemoryRegion allocate(long size, long iova, Set<AccessFlag> access) {
        if (size <= 0) {
            throw new IllegalArgumentException("size must be positive, not " + size);
        }
        Set<AccessFlag> flags = access;
        Arena arena = Arena.ofShared();
        try {
            MemorySegment segment;
            try {
                segment = arena.allocate(size, MemoryRegion.PAGE_SIZE);
            } catch (OutOfMemoryError e) {
                throw new IllegalArgumentException("cannot allocate " + size + " bytes of native memory", e);
            }
            return new MemoryRegion(this, arena, segment, flags, true, iova);
        } catch (RuntimeException | Error e) {
            if (arena.scope().isAlive()) { // a region that failed after registering closed it already
                arena.close();
            }
            throw e;
        }
    }

    /**
     * {@code ibv_create_qp}: a queue pair in state RESET.
     *
     * @param init its type, completion queues, optional shared receive queue and capacities
     * @return the queue pair; close it before this domain, its completion queues and its shared
     *         receive queue
     * @throws IllegalArgumentException if a completion queue or the shared receive queue belongs to
     *                                  another context
     * @throws IllegalStateException    if this domain, a completion queue or the shared receive queue is
     *                                  closed
     * @throws VerbsException           if {@code ibv_create_qp} fails: EINVAL when a capacity exceeds the
     *                                  device's limits or the type is not supported, ENOMEM for the memlock
     *                                  limit
     */
    public QueuePair createQueuePair(QpInitAttributes init) {
        return new QueuePair(this, init);
    }

    /**
     * {@code ibv_create_srq}: a receive queue shared by several queue pairs.
     *
     * @param maxWr  the number of receives it holds
     * @param maxSge the number of scatter entries per receive
     * @return the shared receive queue; close it after the queue pairs that use it, before this domain
     * @throws IllegalArgumentException if {@code maxWr} or {@code maxSge} is not positive
     * @throws IllegalStateException    if this domain is closed
     * @throws VerbsException           if {@code ibv_create_srq} fails, e.g. beyond the device's limits
     */
    public SharedReceiveQueue createSharedReceiveQueue(int maxWr, int maxSge) {
        return new SharedReceiveQueue(this, maxWr, maxSge);
    }

    /**
     * {@code ibv_alloc_mw}: a memory window, unbound (a type 1 window grants nothing until bound).
     *
     * @param type {@link MemoryWindow.Type#TYPE_1} or {@link MemoryWindow.Type#TYPE_2}
     * @return the window; close it before this domain
     * @throws IllegalStateException if this domain is closed
     * @throws VerbsException        if {@code ibv_alloc_mw} fails: EOPNOTSUPP where the device has no
     *                               memory windows (SoftiWARP) or not of this type
     * @throws UnsupportedOperationException for a type 2 window on Soft-RoCE, whose kernel a peer can
     *                               panic through one, unless {@code -Dpanamaverbs.unsafe.rxeType2Windows=true}
     *                               (see {@link MemoryWindow})
     */
    public MemoryWindow allocateMemoryWindow(MemoryWindow.Type type) {
        return MemoryWindow.allocate(this, type);
    }

    /**
     * {@code ibv_create_ah}: an address handle, to send UD datagrams to one destination.
     *
     * @param destination where the datagrams go (on RoCE: with a global route)
     * @return the address handle; close it before this domain
     * @throws IllegalStateException if this domain is closed
     * @throws VerbsException        if {@code ibv_create_ah} fails, e.g. EINVAL on RoCE without a global route
     */
    public AddressHandle createAddressHandle(AddressVector destination) {
        return new AddressHandle(this, destination);
    }

    /**
     * {@code ibv_create_ah_from_wc}: an address handle that replies to the sender of a received UD
     * datagram. As the C function, it is {@link Context#addressVectorFrom} then
     * {@link #createAddressHandle(AddressVector)}; reply with the completion's
     * {@link WorkCompletions#sourceQp(int)} and the sender's Q_Key.
     *
     * @param completions the batch holding the receive's completion
     * @param i           the index of the completion
     * @param grh         the first 40 bytes of the receive buffer, or null when the completion has no GRH
     * @param port        the local port the datagram arrived on
     * @return the address handle; close it before this domain
     * @throws NullPointerException      if {@code completions} is null, or {@code grh} is null for a
     *                                   completion with a GRH
     * @throws IllegalArgumentException  if {@code port} is out of range or {@code grh} is shorter than 40 bytes
     * @throws IndexOutOfBoundsException if {@code i} is not a completion of the batch
     * @throws IllegalStateException     if this domain is closed
     * @throws VerbsException            if {@code ibv_init_ah_from_wc} or {@code ibv_create_ah} fails
     */
    public AddressHandle createAddressHandle(WorkCompletions completions, int i, MemorySegment grh, int port) {
        checkOpen(this);
        return createAddressHandle(context.addressVectorFrom(port, completions, i, grh));
    }

    @Override
    void destroy(MemorySegment address) {
        if (destroyer != null) {
            destroyer.accept(address);
            return;
        }
        Native.check("ibv_dealloc_pd", e -> e == Errno.EBUSY ? "something created outside this binding still uses it" : null,
                c -> (int) DEALLOC_PD.invokeExact(c.errno(), address));
    }

    @Override
    public String toString() {
        return "ProtectionDomain[" + context.device().name() + ", handle=" + ibvHandle() + "]";
    }

    private String ibvHandle() {
        try {
            return isOpen() ? Integer.toString(ibv_pd.handle(handle())) : "closed";
        } catch (IllegalStateException e) {
            return "closed"; // by another thread, just now
        }
    }
}
