package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_async_event;
import io.github.panamaverbs.bindings.ibv_context;
import io.github.panamaverbs.bindings.ibv_device;
import io.github.panamaverbs.bindings.ibv_device_attr_ex;
import io.github.panamaverbs.bindings.ibv_gid_entry;
import io.github.panamaverbs.bindings.ibv_port_attr;
import io.github.panamaverbs.bindings.verbs_context;
import io.github.panamaverbs.access.VerbsAccess;
import io.github.panamaverbs.internal.DataPath;
import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Jfr;
import io.github.panamaverbs.internal.Native;
import io.github.panamaverbs.internal.Quirks;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An open RDMA device: {@code struct ibv_context}. Everything else — protection domains, completion
 * queues, queue pairs — is created from a context, and must be closed before it.
 * Get one from {@link Device#open(String)}.
 *
 * <p>Queries and the creation of children may be called from any thread; see the
 * <a href="package-summary.html">package documentation</a> for the object model, the closing rule
 * and threads.
 */
public final class Context extends Resource {
    static {
        VerbsAccess.register(new Bridge()); // what cm and the diagnostics need of this package
    }

    private static final MethodHandle CLOSE_DEVICE = Native.withErrno(
            Verbs.ibv_close_device$address(), Verbs.ibv_close_device$descriptor());
    private static final MethodHandle QUERY_DEVICE = Native.withErrno(
            Verbs.ibv_query_device$address(), Verbs.ibv_query_device$descriptor());
    private static final MethodHandle QUERY_PORT_COMPAT = Native.withErrno(
            Verbs.ibv_query_port$address(), Verbs.ibv_query_port$descriptor());
    private static final MethodHandle INIT_AH_FROM_WC = Native.withErrno(
            Verbs.ibv_init_ah_from_wc$address(), Verbs.ibv_init_ah_from_wc$descriptor());
    private static final MethodHandle QUERY_GID = Native.withErrno(
            Verbs.ibv_query_gid$address(), Verbs.ibv_query_gid$descriptor());
    private static final MethodHandle QUERY_GID_TABLE = Native.withErrno(
            Verbs._ibv_query_gid_table$address(), Verbs._ibv_query_gid_table$descriptor());
    private static final MethodHandle GET_ASYNC_EVENT = Native.withErrno(
            Verbs.ibv_get_async_event$address(), Verbs.ibv_get_async_event$descriptor());
    private static final MethodHandle ACK_ASYNC_EVENT = Native.plain(
            Verbs.ibv_ack_async_event$address(), Verbs.ibv_ack_async_event$descriptor());
    /** verbs_context.query_port(ctx, port, attr, size): called through the pointer, as the inline ibv_query_port does. */
    private static final MethodHandle QUERY_PORT_EX = Native.withErrno(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS, JAVA_LONG));
    /** verbs_context.query_device_ex(ctx, input, attr, size). */
    private static final MethodHandle QUERY_DEVICE_EX = Native.withErrno(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG));

    private final Device device;
    /** The extended context ({@code verbs_get_ctx}), or NULL for a provider without one. */
    private final MemorySegment verbsContext;
    /** Queue pairs, completion queues and SRQs by C address, so events can name the Java object. */
    private final Map<Long, Resource> byAddress = new ConcurrentHashMap<>();

    /** Contexts that librdmacm opened, by address: one Java object per device. */
    private static final Map<Long, Context> BORROWED = new ConcurrentHashMap<>();

    /** False for a context that librdmacm opened and closes: closing it here frees nothing. */
    private final boolean owned;

    Context(MemorySegment context, Device device) {
        this(context, device, true);
    }

    private Context(MemorySegment context, Device device, boolean owned) {
        super(context, ibv_context.sizeof());
        this.device = device;
        this.owned = owned;
        try {
            Jfr.init();
            Native.prepareWaits();
            this.verbsContext = extended(handle());
            Native.setNonBlocking(ibv_context.async_fd(handle()), "async_fd");
            afterCreate();
        } catch (RuntimeException | Error e) {
            abandon(e); // closes the device (ibv_close_device) if it is this context's own
            throw e;
        }
    }

    /** {@code verbs_get_ctx}: the verbs_context that contains this ibv_context, if the provider has one. */
    private static MemorySegment extended(MemorySegment ctx) {
        if (ibv_context.abi_compat(ctx).address() != -1L) {
            return MemorySegment.NULL;
        }
        long at = ctx.address() - verbs_context.context$offset();
        return MemorySegment.ofAddress(at).reinterpret(verbs_context.sizeof());
    }

    /**
     * {@code verbs_get_ctx_op}: the function pointer at {@code offset} in verbs_context, or NULL when
     * the provider's verbs_context is too old to have it or leaves it unset.
     */
    MemorySegment extendedOp(long offset) {
        if (verbsContext.address() == 0) {
            return MemorySegment.NULL;
        }
        long sz = verbsContext.get(JAVA_LONG, verbs_context.sz$offset());
        if (sz < verbs_context.sizeof() - offset) {
            return MemorySegment.NULL;
        }
        return verbsContext.get(ADDRESS, offset);
    }

    /** {@return the device this context was opened on} */
    public Device device() {
        return device;
    }

    /**
     * {@code num_comp_vectors}: how many completion vectors (interrupt queues) the device has.
     *
     * @return the number of completion vectors
     * @throws IllegalStateException if the context is closed
     */
    public int numCompVectors() {
        return read(ibv_context::num_comp_vectors);
    }

    /**
     * {@code ibv_query_device_ex} (falling back to {@code ibv_query_device}, as the inline C does).
     *
     * @return what the device can do, a snapshot
     * @throws IllegalStateException if the context is closed
     * @throws VerbsException        if the query fails
     */
    public DeviceAttributes queryDevice() {
        MemorySegment ctx = handle();
        return call(c -> {
            MemorySegment attr = c.allocate(ibv_device_attr_ex.layout());
            MemorySegment fn = extendedOp(verbs_context.query_device_ex$offset());
            int rc = Errno.EOPNOTSUPP;
            if (fn.address() != 0) {
                rc = (int) QUERY_DEVICE_EX.invokeExact(fn, c.errno(), ctx, MemorySegment.NULL, attr, ibv_device_attr_ex.sizeof());
            }
            if (rc == Errno.EOPNOTSUPP || rc == Errno.ENOSYS) {
                attr.fill((byte) 0);
                rc = (int) QUERY_DEVICE.invokeExact(c.errno(), ctx, ibv_device_attr_ex.orig_attr(attr));
                Native.checkStatus("ibv_query_device", Native.NO_HINT, rc, c);
            } else {
                Native.checkStatus("ibv_query_device_ex", Native.NO_HINT, rc, c);
            }
            return new DeviceAttributes(attr);
        });
    }

    /**
     * {@code ibv_query_port}: the full port attributes, through {@code verbs_context.query_port} as the
     * inline function in verbs.h does (the exported symbol fills only the older, shorter struct).
     *
     * @param port the port number, from 1
     * @return the port's state and properties, a snapshot
     * @throws IllegalArgumentException if {@code port} is not in [1, 255]
     * @throws IllegalStateException    if the context is closed
     * @throws VerbsException           if the query fails, e.g. EINVAL when the device has no such port
     */
    public PortAttributes queryPort(int port) {
        checkPort(port);
        MemorySegment ctx = handle();
        return call(c -> {
            MemorySegment attr = c.allocate(ibv_port_attr.layout());
            MemorySegment fn = extendedOp(verbs_context.query_port$offset());
            int rc = fn.address() != 0
                    ? (int) QUERY_PORT_EX.invokeExact(fn, c.errno(), ctx, (byte) port, attr, ibv_port_attr.sizeof())
                    : (int) QUERY_PORT_COMPAT.invokeExact(c.errno(), ctx, (byte) port, attr);
            Native.checkStatus("ibv_query_port", e -> e == Errno.EINVAL
                    ? "port " + port + " does not exist on " + device.name() : null, rc, c);
            return new PortAttributes(attr);
        });
    }

    /**
     * {@code ibv_query_gid}: entry {@code index} of the GID table of {@code port}.
     *
     * @param port  the port number, from 1
     * @param index the GID index
     * @return the GID; {@link Gid#ZERO} for an unused entry
     * @throws IllegalArgumentException if {@code port} is not in [1, 255]
     * @throws IllegalStateException    if the context is closed
     * @throws VerbsException           if the query fails, e.g. EINVAL when there is no such index
     */
    public Gid queryGid(int port, int index) {
        checkPort(port);
        MemorySegment ctx = handle();
        return call(c -> {
            MemorySegment gid = c.allocate(ValueLayout.JAVA_LONG, 2);
            Native.checkStatus("ibv_query_gid", e -> e == Errno.EINVAL ? "no GID index " + index + " on port " + port
                    + " of " + device.name() : null, (int) QUERY_GID.invokeExact(c.errno(), ctx, (byte) port, index, gid), c);
            return Gid.read(gid, 0);
        });
    }

    /**
     * {@code ibv_init_ah_from_wc}: the address vector that replies to the sender of a received UD
     * datagram, from its completion and, where the completion has a global route header
     * ({@link WorkCompletions#hasGrh(int)}; always on RoCE), the 40 bytes at the start of its receive
     * buffer.
     *
     * @param port        the local port the datagram arrived on
     * @param completions the batch holding the completion
     * @param i           the index of the completion, below {@link WorkCompletions#count()}
     * @param grh         the first 40 bytes of the receive buffer (copied), or null when the
     *                    completion has no GRH
     * @return the reply's address vector
     * @throws NullPointerException      if {@code completions} is null, or {@code grh} is null for a
     *                                   completion with a GRH
     * @throws IllegalArgumentException  if {@code port} is out of range or {@code grh} is shorter than 40 bytes
     * @throws IndexOutOfBoundsException if {@code i} is not a completion of the batch
     * @throws IllegalStateException     if the context is closed or the batch or {@code grh} freed
     * @throws VerbsException            if {@code ibv_init_ah_from_wc} fails
     */
    public AddressVector addressVectorFrom(int port, WorkCompletions completions, int i, MemorySegment grh) {
        checkPort(port);
        Objects.requireNonNull(completions, "completions");
        long at = completions.at(i);
        if (completions.hasGrh(i)) {
            Objects.requireNonNull(grh, "grh (the completion has a global route header: pass the first 40 bytes "
                    + "of its receive buffer)");
        }
        if (grh != null && grh.byteSize() < GRH_BYTES) {
            throw new IllegalArgumentException("a global route header is " + GRH_BYTES + " bytes, not " + grh.byteSize());
        }
        MemorySegment ctx = handle();
        return call(c -> {
            MemorySegment wc = c.arena().allocate(WorkCompletions.SIZE, 8);
            MemorySegment.copy(completions.segment, at, wc, 0, WorkCompletions.SIZE);
            MemorySegment header = MemorySegment.NULL;
            if (grh != null) {
                header = c.arena().allocate(GRH_BYTES, 8);
                MemorySegment.copy(grh, 0, header, 0, GRH_BYTES);
            }
            MemorySegment attr = c.allocate(io.github.panamaverbs.bindings.ibv_ah_attr.layout());
            Native.checkStatus("ibv_init_ah_from_wc", Native.NO_HINT,
                    (int) INIT_AH_FROM_WC.invokeExact(c.errno(), ctx, (byte) port, wc, header, attr), c);
            return AddressVector.readFrom(attr);
        });
    }

    /** The size of a global route header ({@code struct ibv_grh}), at the start of a UD receive buffer. */
    static final int GRH_BYTES = 40;

    /**
     * {@code ibv_query_gid_table}: the valid GID entries of every port, with their types (IB, RoCE v1,
     * RoCE v2) and network interfaces.
     *
     * @return the valid entries of all ports, an unmodifiable list
     * @throws IllegalStateException if the context is closed
     * @throws VerbsException        if a query fails
     */
    public List<GidEntry> gidTable() {
        MemorySegment ctx = handle();
        int ports = queryDevice().physPortCnt();
        long max = 0;
        for (int p = 1; p <= ports; p++) {
            max += queryPort(p).gidTblLen();
        }
        long capacity = max;
        return call(c -> {
            MemorySegment entries = c.allocate(ibv_gid_entry.layout(), Math.max(1, capacity));
            long n = (long) QUERY_GID_TABLE.invokeExact(c.errno(), ctx, entries, capacity, 0, ibv_gid_entry.sizeof());
            if (n < 0) {
                throw Native.fail("ibv_query_gid_table", (int) -n, Native.NO_HINT);
            }
            List<GidEntry> result = new ArrayList<>((int) n);
            for (long i = 0; i < n; i++) {
                MemorySegment e = ibv_gid_entry.asSlice(entries, i);
                result.add(new GidEntry(ibv_gid_entry.port_num(e), ibv_gid_entry.gid_index(e),
                        Gid.read(e, ibv_gid_entry.gid$offset()), GidType.of(ibv_gid_entry.gid_type(e)),
                        ibv_gid_entry.ndev_ifindex(e)));
            }
            return List.copyOf(result);
        });
    }

    /**
     * Waits for the next asynchronous event of this device ({@code ibv_get_async_event}, then
     * {@code ibv_ack_async_event}): a port going up or down, a queue pair that failed, an SRQ below
     * its limit. Never waits longer than {@code timeout}: the context's event file descriptor is
     * polled first.
     *
     * <p>Several threads may wait: each event goes to one of them. Closing the context wakes them
     * within about 50 ms with {@link IllegalStateException}.
     *
     * @param timeout the longest to wait; zero or negative to look once without waiting
     * @return the event, or empty if none came in time
     * @throws IllegalStateException if the context is closed, also while waiting
     * @throws VerbsException        if {@code ibv_get_async_event} or {@code poll(2)} fails
     */
    public Optional<AsyncEvent> nextAsyncEvent(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        long deadline = Native.deadline(timeout);
        int fd = read(ibv_context::async_fd);
        while (Native.awaitReadable(fd, deadline, toString(), this::isOpen)) {
            Optional<AsyncEvent> event = readAsyncEvent();
            if (event.isPresent()) {
                return event;
            }
        }
        return Optional.empty();
    }

    /** {@code ibv_get_async_event} on the non-blocking fd: empty if another thread took the event. */
    private Optional<AsyncEvent> readAsyncEvent() {
        MemorySegment ctx = handle();
        return call(c -> {
            MemorySegment event = c.allocate(ibv_async_event.layout());
            int rc = (int) GET_ASYNC_EVENT.invokeExact(c.errno(), ctx, event);
            if (rc != 0 && c.lastErrno() == Errno.EAGAIN) {
                return Optional.empty();
            }
            Native.checkStatus("ibv_get_async_event", Native.NO_HINT, rc, c);
            AsyncEventType type = AsyncEventType.of(ibv_async_event.event_type(event));
            long element = event.get(JAVA_LONG, ibv_async_event.element$offset());
            AsyncEvent result = switch (type) {
                case PORT_ACTIVE, PORT_ERR, LID_CHANGE, PKEY_CHANGE, SM_CHANGE, CLIENT_REREGISTER, GID_CHANGE ->
                    new AsyncEvent(type, null, (int) (element & 0xffffffffL));
                case DEVICE_FATAL -> new AsyncEvent(type, null, 0);
                default -> new AsyncEvent(type, byAddress.get(element), 0);
            };
            ACK_ASYNC_EVENT.invokeExact(event);
            Jfr.AsyncEvent recorded = new Jfr.AsyncEvent();
            if (recorded.shouldCommit()) {
                recorded.device = device.name();
                recorded.type = type.name();
                recorded.element = result.resource() != null ? result.resource().toString()
                        : type == AsyncEventType.DEVICE_FATAL ? "device" : "port " + result.port();
                recorded.commit();
            }
            return Optional.of(result);
        });
    }

    /**
     * {@code ibv_alloc_pd}: a new protection domain.
     *
     * @return the protection domain; close it before this context
     * @throws IllegalStateException if the context is closed
     * @throws VerbsException        if {@code ibv_alloc_pd} fails
     */
    public ProtectionDomain allocateProtectionDomain() {
        return new ProtectionDomain(this);
    }

    /**
     * {@code ibv_create_comp_channel}: a channel on which completion queues report events.
     *
     * @return the channel; close it after its completion queues, before this context
     * @throws IllegalStateException if the context is closed
     * @throws VerbsException        if {@code ibv_create_comp_channel} fails
     */
    public CompletionChannel createCompletionChannel() {
        return new CompletionChannel(this);
    }

    /**
     * {@code ibv_create_cq}: a completion queue for polling, with no channel.
     *
     * @param entries the minimum number of completions it holds
     * @return the completion queue; close it after the queue pairs that report to it, before this context
     * @throws IllegalArgumentException if {@code entries} is not positive
     * @throws IllegalStateException    if the context is closed
     * @throws VerbsException           if {@code ibv_create_cq} fails, e.g. EINVAL for more entries than
     *                                  the device's {@code max_cqe}, ENOMEM for the memlock limit
     */
    public CompletionQueue createCompletionQueue(int entries) {
        return new CompletionQueue(this, entries, null, 0);
    }

    /**
     * {@code ibv_create_cq} with a completion channel, for event-driven completion.
     *
     * @param entries    the minimum number of completions it holds
     * @param channel    where its events are delivered
     * @param compVector the completion vector, in {@code [0, numCompVectors())}
     * @return the completion queue; close it after the queue pairs that report to it, before the channel
     * @throws IllegalArgumentException if {@code entries} is not positive, {@code channel} belongs to
     *                                  another context, or {@code compVector} is out of range
     * @throws IllegalStateException    if the context or the channel is closed
     * @throws VerbsException           if {@code ibv_create_cq} fails, e.g. EINVAL for more entries than
     *                                  the device's {@code max_cqe}, ENOMEM for the memlock limit
     */
    public CompletionQueue createCompletionQueue(int entries, CompletionChannel channel, int compVector) {
        Objects.requireNonNull(channel, "channel (use createCompletionQueue(entries) for none)");
        return new CompletionQueue(this, entries, channel, compVector);
    }

    /**
     * {@code ibv_create_cq_ex}: an extended completion queue, which reports {@code fields} and can be
     * read in place with {@link ExtendedCompletionQueue#startPoll()} and the {@code read*} accessors, as
     * well as with {@link CompletionQueue#poll(WorkCompletions)}. It serves queue pairs as any other.
     *
     * @param entries    the minimum number of completions it holds
     * @param fields     what each completion reports besides ID, status, opcode, vendor error and flags
     * @param channel    where its events go, or null
     * @param compVector the completion vector, in [0, {@link #numCompVectors()})
     * @return the completion queue; close it before this context (and after its queue pairs)
     * @throws NullPointerException     if {@code fields} or one of them is null
     * @throws IllegalArgumentException if {@code entries} is not positive, {@code compVector} is out of
     *                                  range, or {@code channel} belongs to another context
     * @throws IllegalStateException    if this context or the channel is closed
     * @throws VerbsException           if {@code ibv_create_cq_ex} fails: EOPNOTSUPP naming the fields the
     *                                  device does not report (rxe: any beyond {@link WcField#STANDARD})
     */
    public ExtendedCompletionQueue createCompletionQueue(int entries, java.util.Set<WcField> fields, CompletionChannel channel,
                                                 int compVector) {
        return new ExtendedCompletionQueue(this, entries, fields, channel, compVector);
    }

    void register(Resource r, long address) {
        byAddress.put(address, r);
    }

    /** This context's queue pairs by number, for {@link CompletionQueue}'s note of error completions (SoftiWARP). */
    private final Map<Integer, QueuePair> byNumber = new ConcurrentHashMap<>();

    void registerNumber(QueuePair qp, int qpNum) {
        byNumber.put(qpNum, qp);
    }

    void unregisterNumber(QueuePair qp, int qpNum) {
        byNumber.remove(qpNum, qp);
    }

    QueuePair queuePairNumbered(int qpNum) {
        return byNumber.get(qpNum);
    }

    /**
     * The provider's function at {@code offset} in {@code context->ops} ({@link DataPath}'s offsets),
     * resolved when a queue is created, never per call.
     *
     * @throws VerbsException EOPNOTSUPP if the provider has none
     */
    MemorySegment op(long offset) {
        MemorySegment fn = DataPath.op(handle(), offset);
        if (fn.address() == 0) {
            throw new VerbsException("ibv_context_ops", Errno.EOPNOTSUPP, device().name() + " does not implement this operation");
        }
        return fn;
    }

    /** The provider bugs of {@link Quirks} that affect this device, found once (they read /proc/self/maps). */
    private volatile Set<Quirks> quirks;

    /** {@return the provider bugs of {@link Quirks} that affect this device} */
    Set<Quirks> quirks() {
        Set<Quirks> known = quirks;
        if (known == null) {
            known = Quirks.affecting(op(DataPath.POST_SEND));
            quirks = known;
        }
        return known;
    }

    /** {@link DataPath#postsInUserSpace}, found once. */
    private volatile Boolean postsInUserSpace;

    /** Whether this device's provider posts without entering the kernel (its confined posts may be critical downcalls). */
    boolean postsInUserSpace() {
        Boolean known = postsInUserSpace;
        if (known == null) {
            known = DataPath.postsInUserSpace(op(DataPath.POST_SEND));
            postsInUserSpace = known;
        }
        return known;
    }

    /** Whether {@code q} affects this device: for the checks that objects make when they are created, never per call. */
    boolean has(Quirks q) {
        return quirks().contains(q);
    }

    /** This context's type 2 memory windows by index (rkey >>> 8), for the checks of a local invalidation. */
    private final Map<Integer, MemoryWindow> windows = new ConcurrentHashMap<>();

    void registerWindow(MemoryWindow w, int rkey) {
        windows.put(rkey >>> 8, w);
    }

    void unregisterWindow(MemoryWindow w, int rkey) {
        windows.remove(rkey >>> 8, w);
    }

    /** The open type 2 window whose index {@code rkey} has, or null. */
    MemoryWindow windowOf(int rkey) {
        return windows.get(rkey >>> 8);
    }

    CompletionQueue completionQueueAt(long address) {
        return byAddress.get(address) instanceof CompletionQueue cq ? cq : null;
    }

    void unregister(long address) {
        byAddress.remove(address);
    }

    private static void checkPort(int port) {
        if (port < 1 || port > 255) {
            throw new IllegalArgumentException("port numbers run from 1 to 255, not " + port);
        }
    }

    /**
     * The context over {@code ctx}, an {@code ibv_context} that librdmacm opened for a connection ID
     * (it stays open for the life of the process); one Java object per device, made anew if the
     * last one was closed.
     */
    static Context borrowed(MemorySegment ctx) {
        return BORROWED.compute(ctx.address(), (address, existing) -> existing != null && !existing.isClosed() ? existing
                : borrowed(ctx, Device.describe(ibv_context.device(ctx.reinterpret(ibv_context.sizeof()))
                        .reinterpret(ibv_device.sizeof()))));
    }

    /** A context over an {@code ibv_context} that something else opened and closes, on {@code device}. */
    static Context borrowed(MemorySegment ctx, Device device) {
        return new Context(ctx, device, false);
    }

    @Override
    void destroy(MemorySegment address) {
        if (!owned) {
            return; // librdmacm's: it closes it
        }
        Native.check("ibv_close_device", Native.NO_HINT, c -> (int) CLOSE_DEVICE.invokeExact(c.errno(), address));
    }

    @Override
    public String toString() {
        return "Context[" + device.name() + "]";
    }
}
