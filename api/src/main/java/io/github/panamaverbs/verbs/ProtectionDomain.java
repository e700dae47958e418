package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_pd;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.EnumSet;
import java.util.Set;

/**
 * A protection domain ({@code struct ibv_pd}): memory regions, queue pairs, shared receive queues
 * and address handles created from the same domain may be used together, and only then.
 */
public final class ProtectionDomain extends Resource {
    private static final MethodHandle ALLOC_PD = Native.withErrno(
            Verbs.ibv_alloc_pd$address(), Verbs.ibv_alloc_pd$descriptor());
    private static final MethodHandle DEALLOC_PD = Native.withErrno(
            Verbs.ibv_dealloc_pd$address(), Verbs.ibv_dealloc_pd$descriptor());

    private final Context context;

    ProtectionDomain(Context context) {
        super(allocate(context), ibv_pd.sizeof(), context);
        this.context = context;
    }

    private static MemorySegment allocate(Context context) {
        MemorySegment ctx = checkOpen(context);
        try (Arena call = Arena.ofConfined()) {
            MemorySegment errno = Native.errnoSegment(call);
            MemorySegment pd = (MemorySegment) ALLOC_PD.invokeExact(errno, ctx);
            if (pd.address() == 0) {
                throw Native.fail("ibv_alloc_pd", Native.errno(errno));
            }
            return pd;
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    /** The context this domain belongs to. */
    public Context context() {
        return context;
    }

    /**
     * {@code ibv_reg_mr}: registers {@code segment} with the device, so that work requests may use it.
     * With no flags it gets least privilege: only {@link AccessFlag#LOCAL_WRITE}, enough to receive into
     * it and to send from it. Ask for remote access explicitly.
     *
     * @param segment a native, writable segment whose arena stays open while it is registered
     * @param access  the access rights; {@code REMOTE_WRITE} and {@code REMOTE_ATOMIC} need {@code LOCAL_WRITE}, which is added
     * @throws IllegalArgumentException for a heap, read-only or empty segment
     * @throws IllegalStateException    if the segment's arena is already closed
     * @throws VerbsException           if registration fails; {@code ENOMEM} usually means the memlock limit
     */
    public MemoryRegion register(MemorySegment segment, AccessFlag... access) {
        return register(segment, access.length == 0 ? EnumSet.noneOf(AccessFlag.class) : EnumSet.of(access[0], access));
    }

    /** {@code ibv_reg_mr} with a set of access flags; see {@link #register(MemorySegment, AccessFlag...)}. */
    public MemoryRegion register(MemorySegment segment, Set<AccessFlag> access) {
        return new MemoryRegion(this, segment, access, null);
    }

    /**
     * Allocates {@code size} bytes of page-aligned native memory and registers it. The memory is freed
     * when the region is closed.
     */
    public MemoryRegion allocateAndRegister(long size, AccessFlag... access) {
        if (size <= 0) {
            throw new IllegalArgumentException("size must be positive, not " + size);
        }
        Arena arena = Arena.ofShared();
        try {
            MemorySegment segment = arena.allocate(size, MemoryRegion.PAGE_SIZE);
            return new MemoryRegion(this, segment,
                    access.length == 0 ? EnumSet.noneOf(AccessFlag.class) : EnumSet.of(access[0], access), arena);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /** {@code ibv_create_qp}: a queue pair in state RESET. */
    public QueuePair createQueuePair(QueuePair.Config config) {
        return new QueuePair(this, config);
    }

    /**
     * {@code ibv_create_srq}: a receive queue shared by several queue pairs.
     *
     * @param maxWr  the number of receives it holds
     * @param maxSge the number of scatter entries per receive
     */
    public SharedReceiveQueue createSharedReceiveQueue(int maxWr, int maxSge) {
        return new SharedReceiveQueue(this, maxWr, maxSge);
    }

    /** {@code ibv_create_ah}: an address handle, to send UD datagrams to one destination. */
    public AddressHandle createAddressHandle(AddressVector destination) {
        return new AddressHandle(this, destination);
    }

    @Override
    void destroy(MemorySegment address) {
        Native.destroy("ibv_dealloc_pd", DEALLOC_PD, address);
    }

    @Override
    public String toString() {
        return "ProtectionDomain[" + context.device().name() + ", handle=" + ibvHandle() + "]";
    }

    private String ibvHandle() {
        return isClosed() ? "closed" : Integer.toString(ibv_pd.handle(handle()));
    }
}
