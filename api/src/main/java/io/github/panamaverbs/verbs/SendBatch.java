package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.github.panamaverbs.bindings.ibv_data_buf;
import io.github.panamaverbs.bindings.ibv_mw_bind_info;
import io.github.panamaverbs.bindings.ibv_qp_ex;
import io.github.panamaverbs.bindings.ibv_sge;
import io.github.panamaverbs.internal.DataPath;
import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Native;
import io.github.panamaverbs.internal.Quirks;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Objects;
import java.util.Set;

/**
 * The {@code ibv_wr_*} post API of a queue pair created with {@link QpInitAttributes#sendOps(Set)}:
 * work requests written straight into the provider's send queue, no {@code ibv_send_wr} in between,
 * and nothing allocated. One per queue pair ({@link QueuePair#sendBatch()}), reused:
 * <pre>{@code
 * SendBatch b = qp.sendBatch().start();                  // ibv_wr_start
 * b.id(1).signaled(true).rdmaWrite(rkey, remoteAddress)  // wr_id, wr_flags, ibv_wr_rdma_write
 *  .sge(mr, 0, 4096);                                    // ibv_wr_set_sge
 * b.id(2).signaled(true).send().inlineData(header);      // ibv_wr_send, ibv_wr_set_inline_data
 * b.complete();                                          // ibv_wr_complete: both posted, or neither
 * }</pre>
 * For each request: its {@link #id(long) ID} and flags first (the operation copies them), then the
 * operation, then its data ({@link #sge}, {@link #sges}, {@link #inlineData}) and, on a UD queue pair,
 * its {@link #udAddress destination}. Java keeps that order: a setter with no request under way, a UD
 * request without a destination, or an operation not in the queue pair's {@code sendOps} is refused
 * before it reaches the provider (which would write into a slot of the queue already posted, or
 * follow a null address handle). The provider holds the send queue's lock from {@link #start()} to
 * {@link #complete()} or {@link #abort()}: one thread builds a batch at a time, and always ends it.
 * The buffers named belong to the device until the completions are polled, as with
 * {@link QueuePair#postSend(SendRequest)}.
 */
public final class SendBatch {
    private static final MethodHandle VOID = DataPath.handle(FunctionDescriptor.ofVoid(ADDRESS));
    private static final MethodHandle COMPLETE = DataPath.handle(FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle VOID_INT = DataPath.handle(FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT));
    private static final MethodHandle RKEY_ADDR = DataPath.handle(FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG));
    private static final MethodHandle RKEY_ADDR_INT = DataPath.handle(
            FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_INT));
    private static final MethodHandle RKEY_ADDR_LONG = DataPath.handle(
            FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle RKEY_ADDR_LONG_LONG = DataPath.handle(
            FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle BIND_MW = DataPath.handle(
            FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_INT, ADDRESS));
    private static final MethodHandle SET_SGE = DataPath.handle(
            FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_INT));
    private static final MethodHandle SET_LIST = DataPath.handle(FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS));
    private static final MethodHandle SET_INLINE = DataPath.handle(FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_LONG));
    private static final MethodHandle SET_UD = DataPath.handle(
            FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_INT, JAVA_INT));
    private static final long WR_ID = ibv_qp_ex.wr_id$offset();
    private static final long WR_FLAGS = ibv_qp_ex.wr_flags$offset();
    /** Room for {@link #inlineData(MemorySegment[], int)}'s list. */
    private static final int MAX_INLINE_BUFFERS = 16;

    private final QueuePair qp;
    private final Set<SendOpcode> ops;
    private final MemorySegment start, complete, abort;
    private final MemorySegment send, sendImm, sendInv, write, writeImm, read, cmpSwp, fetchAdd, localInv, bindMw;
    private final MemorySegment setSge, setSgeList, setInline, setInlineList, setUd;
    /** Scratch for sge lists, data buffer lists and bind info: the batch's own memory. */
    private final MemorySegment sgeList;
    private final MemorySegment bufList;
    private final MemorySegment bindInfo;

    /**
     * Soft-RoCE's provider before rdma-core 64 sets a list's total length to the number of entries
     * times the first entry's length (wr_set_sge_list), and the device then moves that many bytes.
     */
    private final boolean sgeListTotalIsWrong;

    private boolean started;
    /** A request's operation was written: its setters may follow. */
    private boolean inRequest;
    /** A UD request still lacks its destination. */
    private boolean needsDestination;
    private int requests;
    private long firstId;
    /** The thread that started the batch under way: a post of its own on the queue pair would wait for ever. */
    private Thread owner;
    /** What the batch's binds and invalidations did to memory windows: undone if it is not posted. */
    private final java.util.List<MemoryWindow.Change> windowChanges = new java.util.ArrayList<>();

    SendBatch(QueuePair qp, MemorySegment qpEx, Set<SendOpcode> ops) {
        this.qp = qp;
        this.ops = ops;
        start = fn(qpEx, ibv_qp_ex.wr_start$offset(), "wr_start");
        complete = fn(qpEx, ibv_qp_ex.wr_complete$offset(), "wr_complete");
        abort = fn(qpEx, ibv_qp_ex.wr_abort$offset(), "wr_abort");
        send = op(qpEx, SendOpcode.SEND, ibv_qp_ex.wr_send$offset());
        sendImm = op(qpEx, SendOpcode.SEND_WITH_IMM, ibv_qp_ex.wr_send_imm$offset());
        sendInv = op(qpEx, SendOpcode.SEND_WITH_INV, ibv_qp_ex.wr_send_inv$offset());
        write = op(qpEx, SendOpcode.RDMA_WRITE, ibv_qp_ex.wr_rdma_write$offset());
        writeImm = op(qpEx, SendOpcode.RDMA_WRITE_WITH_IMM, ibv_qp_ex.wr_rdma_write_imm$offset());
        read = op(qpEx, SendOpcode.RDMA_READ, ibv_qp_ex.wr_rdma_read$offset());
        cmpSwp = op(qpEx, SendOpcode.ATOMIC_CMP_AND_SWP, ibv_qp_ex.wr_atomic_cmp_swp$offset());
        fetchAdd = op(qpEx, SendOpcode.ATOMIC_FETCH_AND_ADD, ibv_qp_ex.wr_atomic_fetch_add$offset());
        localInv = op(qpEx, SendOpcode.LOCAL_INV, ibv_qp_ex.wr_local_inv$offset());
        bindMw = op(qpEx, SendOpcode.BIND_MW, ibv_qp_ex.wr_bind_mw$offset());
        setSge = fn(qpEx, ibv_qp_ex.wr_set_sge$offset(), "wr_set_sge");
        setSgeList = fn(qpEx, ibv_qp_ex.wr_set_sge_list$offset(), "wr_set_sge_list");
        setInline = fn(qpEx, ibv_qp_ex.wr_set_inline_data$offset(), "wr_set_inline_data");
        setInlineList = fn(qpEx, ibv_qp_ex.wr_set_inline_data_list$offset(), "wr_set_inline_data_list");
        setUd = qp.type() == QpType.UD ? fn(qpEx, ibv_qp_ex.wr_set_ud_addr$offset(), "wr_set_ud_addr") : MemorySegment.NULL;
        Arena arena = Arena.ofAuto();
        sgeList = arena.allocate(MemoryLayout.sequenceLayout(Math.max(1, qp.capabilities().maxSendSge()), ibv_sge.layout()));
        bufList = arena.allocate(MemoryLayout.sequenceLayout(MAX_INLINE_BUFFERS, ibv_data_buf.layout()));
        bindInfo = arena.allocate(ibv_mw_bind_info.layout());
        sgeListTotalIsWrong = Quirks.RXE_SGE_LIST_TOTAL.affects(setSgeList);
    }

    /** The ibv_qp_ex operation flag of {@code op}, 0 where the batch API does not offer it. */
    static long opFlag(SendOpcode op) {
        return switch (op) {
            case RDMA_WRITE -> 1L << 0;
            case RDMA_WRITE_WITH_IMM -> 1L << 1;
            case SEND -> 1L << 2;
            case SEND_WITH_IMM -> 1L << 3;
            case RDMA_READ -> 1L << 4;
            case ATOMIC_CMP_AND_SWP -> 1L << 5;
            case ATOMIC_FETCH_AND_ADD -> 1L << 6;
            case LOCAL_INV -> 1L << 7;
            case BIND_MW -> 1L << 8;
            case SEND_WITH_INV -> 1L << 9;
            default -> 0;
        };
    }

    static long mask(Set<SendOpcode> ops) {
        long m = 0;
        for (SendOpcode op : ops) {
            m |= opFlag(op);
        }
        return m;
    }

    private MemorySegment fn(MemorySegment qpEx, long offset, String name) {
        MemorySegment f = qpEx.get(ADDRESS, offset);
        if (f.address() == 0) {
            throw new VerbsException("ibv_create_qp_ex", Errno.EOPNOTSUPP, qp.protectionDomain().context().device().name()
                    + " created the queue pair without " + name);
        }
        return f;
    }

    private MemorySegment op(MemorySegment qpEx, SendOpcode op, long offset) {
        return ops.contains(op) ? fn(qpEx, offset, "wr_" + op.name().toLowerCase()) : MemorySegment.NULL;
    }

    /** {@return the queue pair it posts on} */
    public QueuePair queuePair() {
        return qp;
    }

    /** {@return the operations it offers: the queue pair's {@code sendOps}} */
    public Set<SendOpcode> operations() {
        return ops;
    }

    /**
     * {@code ibv_wr_start}: begins a batch.
     *
     * @return this batch
     * @throws IllegalStateException if a batch is already under way, or the queue pair is closed
     */
    public SendBatch start() {
        if (started) {
            throw new IllegalStateException("a batch on " + qp + " is under way: complete() or abort() it first");
        }
        callVoid(start);
        started = true;
        owner = Thread.currentThread();
        inRequest = false;
        needsDestination = false;
        requests = 0;
        return this;
    }

    /**
     * {@code qp_ex->wr_id}: the ID of the next request (set before its operation).
     *
     * @param wrId the ID its completion reports
     * @return this batch
     * @throws IllegalStateException if no batch is under way, or the queue pair is closed
     */
    public SendBatch id(long wrId) {
        fields().set(JAVA_LONG, WR_ID, wrId);
        return this;
    }

    /**
     * {@code qp_ex->wr_flags}: the flags of the next request (set before its operation).
     *
     * @param flags the flags; the others are cleared
     * @return this batch
     * @throws IllegalStateException if no batch is under way, or the queue pair is closed
     */
    public SendBatch flags(Set<SendFlag> flags) {
        fields().set(JAVA_INT, WR_FLAGS, SendFlag.mask(Objects.requireNonNull(flags, "flags")));
        return this;
    }

    /**
     * Sets or clears {@code IBV_SEND_SIGNALED} in the next request's flags, keeping the others: the flags
     * stay from one request to the next, and from one batch to the next, as in C.
     *
     * @param on whether it produces a completion on success
     * @return this batch
     * @throws IllegalStateException if no batch is under way, or the queue pair is closed
     */
    public SendBatch signaled(boolean on) {
        MemorySegment q = fields();
        int f = q.get(JAVA_INT, WR_FLAGS);
        q.set(JAVA_INT, WR_FLAGS, on ? f | SendFlag.SIGNALED.value : f & ~SendFlag.SIGNALED.value);
        return this;
    }

    private MemorySegment fields() {
        requireStarted();
        return handle();
    }

    /**
     * {@code ibv_wr_send}.
     *
     * @return this batch
     * @throws IllegalStateException if no batch is under way, the previous UD request has no destination,
     *                               SEND is not among the operations, or the queue pair is closed
     */
    public SendBatch send() {
        return begin(SendOpcode.SEND, send).callVoid(send);
    }

    /**
     * {@code ibv_wr_send_imm}.
     *
     * @param immediate the immediate data, in host order ({@code htonl} is done here)
     * @return this batch
     * @throws IllegalStateException if no batch is under way, the previous UD request has no destination,
     *                               SEND_WITH_IMM is not among the operations, or the queue pair is closed
     */
    public SendBatch sendWithImmediate(int immediate) {
        return begin(SendOpcode.SEND_WITH_IMM, sendImm).callInt(sendImm, Integer.reverseBytes(immediate));
    }

    /**
     * {@code ibv_wr_send_inv}: a send that invalidates {@code rkey} at the peer.
     *
     * @param rkey the peer's key to invalidate
     * @return this batch
     * @throws IllegalStateException as {@link #sendWithImmediate(int)}, for SEND_WITH_INV
     */
    public SendBatch sendWithInvalidate(int rkey) {
        return begin(SendOpcode.SEND_WITH_INV, sendInv).callInt(sendInv, rkey);
    }

    /**
     * {@code ibv_wr_rdma_write}.
     *
     * @param rkey          the peer region's (or window's) rkey
     * @param remoteAddress where the bytes go in the peer's memory
     * @return this batch
     * @throws IllegalStateException as {@link #sendWithImmediate(int)}, for RDMA_WRITE
     */
    public SendBatch rdmaWrite(int rkey, long remoteAddress) {
        return rkeyAddress(SendOpcode.RDMA_WRITE, write, rkey, remoteAddress);
    }

    /** The operations whose arguments are a key and a remote address (RDMA write, RDMA read). */
    private SendBatch rkeyAddress(SendOpcode op, MemorySegment fn, int rkey, long remoteAddress) {
        begin(op, fn);
        try {
            RKEY_ADDR.invokeExact(fn, handle(), rkey, remoteAddress);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        return this;
    }

    /**
     * {@code ibv_wr_rdma_write_imm}.
     *
     * @param rkey          the peer region's (or window's) rkey
     * @param remoteAddress where the bytes go in the peer's memory
     * @param immediate     the immediate data, in host order
     * @return this batch
     * @throws IllegalStateException as {@link #sendWithImmediate(int)}, for RDMA_WRITE_WITH_IMM
     */
    public SendBatch rdmaWriteWithImmediate(int rkey, long remoteAddress, int immediate) {
        begin(SendOpcode.RDMA_WRITE_WITH_IMM, writeImm);
        try {
            RKEY_ADDR_INT.invokeExact(writeImm, handle(), rkey, remoteAddress, Integer.reverseBytes(immediate));
        } catch (Throwable t) {
            throw rethrow(t);
        }
        return this;
    }

    /**
     * {@code ibv_wr_rdma_read}: the bytes land in the request's {@link #sge scatter entries}.
     *
     * @param rkey          the peer region's (or window's) rkey
     * @param remoteAddress where the bytes are read in the peer's memory
     * @return this batch
     * @throws IllegalStateException as {@link #sendWithImmediate(int)}, for RDMA_READ
     */
    public SendBatch rdmaRead(int rkey, long remoteAddress) {
        return rkeyAddress(SendOpcode.RDMA_READ, read, rkey, remoteAddress);
    }

    /**
     * {@code ibv_wr_atomic_cmp_swp}: the old value lands in the request's 8-byte scatter entry.
     *
     * @param rkey          the peer region's rkey
     * @param remoteAddress the remote word, 8-byte aligned
     * @param compare       the value compared
     * @param swap          the value stored if equal
     * @return this batch
     * @throws IllegalArgumentException if {@code remoteAddress} is not 8-byte aligned
     * @throws IllegalStateException    as {@link #sendWithImmediate(int)}, for ATOMIC_CMP_AND_SWP
     */
    public SendBatch compareAndSwap(int rkey, long remoteAddress, long compare, long swap) {
        aligned(remoteAddress);
        begin(SendOpcode.ATOMIC_CMP_AND_SWP, cmpSwp);
        try {
            RKEY_ADDR_LONG_LONG.invokeExact(cmpSwp, handle(), rkey, remoteAddress, compare, swap);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        return this;
    }

    /**
     * {@code ibv_wr_atomic_fetch_add}: the old value lands in the request's 8-byte scatter entry.
     *
     * @param rkey          the peer region's rkey
     * @param remoteAddress the remote word, 8-byte aligned
     * @param add           the value added
     * @return this batch
     * @throws IllegalArgumentException if {@code remoteAddress} is not 8-byte aligned
     * @throws IllegalStateException    as {@link #sendWithImmediate(int)}, for ATOMIC_FETCH_AND_ADD
     */
    public SendBatch fetchAndAdd(int rkey, long remoteAddress, long add) {
        aligned(remoteAddress);
        begin(SendOpcode.ATOMIC_FETCH_AND_ADD, fetchAdd);
        try {
            RKEY_ADDR_LONG.invokeExact(fetchAdd, handle(), rkey, remoteAddress, add);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        return this;
    }

    private static void aligned(long remoteAddress) {
        if ((remoteAddress & 7) != 0) {
            throw new IllegalArgumentException("atomics need an 8-byte aligned remote address, not 0x"
                    + Long.toHexString(remoteAddress));
        }
    }

    /**
     * {@code ibv_wr_local_inv}: invalidates the local key {@code rkey} (a type 2 window's).
     *
     * @param rkey the key
     * @return this batch
     * @throws IllegalStateException as {@link #sendWithImmediate(int)}, for LOCAL_INV
     */
    public SendBatch localInvalidate(int rkey) {
        requireStarted();
        holdWindowLock();
        MemoryWindow.Change c = MemoryWindow.invalidatePosted(qp, rkey);
        try {
            begin(SendOpcode.LOCAL_INV, localInv).callInt(localInv, rkey);
        } catch (RuntimeException e) {
            if (c != null) {
                c.undo();
            }
            throw e;
        }
        if (c != null) {
            windowChanges.add(c);
        }
        return this;
    }

    /**
     * Takes the queue pair's window lock for the rest of the batch (see {@link QueuePair#windowLock}),
     * unless another thread holds it: that thread's post waits for this batch's end (the provider's
     * queue lock), so waiting for it here would wait for ever.
     */
    private void holdWindowLock() {
        if (!qp.windowLock.isHeldByCurrentThread() && !qp.windowLock.tryLock()) {
            throw new IllegalStateException("another thread is posting a memory window bind or invalidation on " + qp
                    + ", which waits for this batch: abort() or complete() it, then bind or invalidate");
        }
    }

    /** Ends what {@link #holdWindowLock()} and the window changes began; {@code posted}: keep the changes. */
    private void endWindows(boolean posted) {
        if (!posted) {
            for (int k = windowChanges.size() - 1; k >= 0; k--) {
                windowChanges.get(k).undo();
            }
        }
        windowChanges.clear();
        owner = null;
        if (qp.windowLock.isHeldByCurrentThread()) {
            qp.windowLock.unlock();
        }
    }

    /** Whether this thread has started the batch under way (a post of its own would wait for the provider's lock). */
    boolean isUnderWayOnThisThread() {
        return started && owner == Thread.currentThread();
    }

    /**
     * {@code ibv_wr_bind_mw}: binds the type 2 {@code window} as {@link SendRequest#bindMemoryWindow} does.
     *
     * @param window a type 2 window
     * @param rkey   the key it has once bound ({@link MemoryWindow#nextRkey()})
     * @param region the region it exposes, owning its memory
     * @param offset where the window starts in {@code region}
     * @param length the window's length, positive
     * @param access the rights it grants
     * @return this batch
     * @throws IllegalArgumentException  as {@link SendRequest#bindMemoryWindow}
     * @throws IndexOutOfBoundsException if the range is not inside {@code region}
     * @throws IllegalStateException     as {@link #sendWithImmediate(int)}, for BIND_MW; or the window or
     *                                   region is closed
     */
    public SendBatch bindMemoryWindow(MemoryWindow window, int rkey, MemoryRegion region, long offset, long length,
                                      Set<AccessFlag> access) {
        int mask = Objects.requireNonNull(window, "window").checkBind(MemoryWindow.Type.TYPE_2, region, offset, length, access);
        MemorySegment mw = window.handle();
        requireStarted();
        holdWindowLock();
        MemoryWindow.Change c = window.bindPosted(qp, rkey);
        try {
            begin(SendOpcode.BIND_MW, bindMw);
            MemoryWindow.writeBindInfo(bindInfo, region, offset, length, mask);
            BIND_MW.invokeExact(bindMw, handle(), mw, rkey, bindInfo);
        } catch (Throwable t) {
            c.undo();
            throw rethrow(t);
        }
        c.posted(); // the provider read the window's key: the new one is its from here on (undone by abort)
        windowChanges.add(c);
        return this;
    }

    /**
     * {@code ibv_wr_set_sge}: the request's one scatter/gather entry.
     *
     * @param region the registered memory
     * @param offset where the bytes start in {@code region}
     * @param length the number of bytes
     * @return this batch
     * @throws IndexOutOfBoundsException if the range is not inside {@code region}
     * @throws IllegalStateException     if no request is under way, or the region or queue pair is closed
     */
    public SendBatch sge(MemoryRegion region, long offset, int length) {
        Objects.requireNonNull(region, "region");
        region.checkRange(offset, Integer.toUnsignedLong(length));
        requireRequest("sge");
        requireNoInlineFlag();
        try {
            SET_SGE.invokeExact(setSge, handle(), region.lkey(), region.address() + offset, length);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        return this;
    }

    /**
     * {@code ibv_wr_set_sge_list}: the request's first {@code n} entries, {@code lengths[i]} bytes at
     * {@code offsets[i]} in {@code regions[i]} (the caller's arrays, reused).
     *
     * @param n       the number of entries, 1 to the queue pair's {@code maxSendSge}
     * @param regions the regions
     * @param offsets the offsets
     * @param lengths the lengths
     * @return this batch
     * @throws NullPointerException      if an array or one of its first {@code n} regions is null
     * @throws IllegalArgumentException  if {@code n} is not in [1, maxSendSge] or an array is shorter
     * @throws IndexOutOfBoundsException if a range is not inside its region
     * @throws IllegalStateException     if no request is under way, or a region or the queue pair is closed
     * @throws UnsupportedOperationException for entries of different lengths on Soft-RoCE before rdma-core
     *                                   64, whose provider would move the wrong number of bytes
     */
    public SendBatch sges(int n, MemoryRegion[] regions, long[] offsets, int[] lengths) {
        int max = qp.capabilities().maxSendSge();
        if (n < 1 || n > max || regions.length < n || offsets.length < n || lengths.length < n) {
            throw new IllegalArgumentException(n + " entries: must be in [1, " + max + "] (the queue pair's maxSendSge), "
                    + "with as many regions, offsets and lengths");
        }
        for (int i = 1; i < n && sgeListTotalIsWrong; i++) {
            if (lengths[i] != lengths[0]) {
                throw new UnsupportedOperationException("this provider (Soft-RoCE, rdma-core before 64) would send "
                        + n + " x " + Integer.toUnsignedString(lengths[0]) + " bytes for entries of different lengths "
                        + "(its wr_set_sge_list bug): give every entry the same length, or post with postSend");
            }
        }
        for (int i = 0; i < n; i++) {
            MemoryRegion r = Objects.requireNonNull(regions[i], "regions[" + i + "]");
            r.checkRange(offsets[i], Integer.toUnsignedLong(lengths[i]));
            MemorySegment e = sgeList.asSlice(i * ibv_sge.sizeof(), ibv_sge.sizeof());
            ibv_sge.addr(e, r.address() + offsets[i]);
            ibv_sge.length(e, lengths[i]);
            ibv_sge.lkey(e, r.lkey());
        }
        requireRequest("sges");
        requireNoInlineFlag();
        try {
            SET_LIST.invokeExact(setSgeList, handle(), (long) n, sgeList);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        return this;
    }

    /**
     * {@code ibv_wr_set_inline_data}: copies {@code data} into the request now; it may be reused at once.
     *
     * @param data the bytes, at most the queue pair's {@code maxInlineData}
     * @return this batch
     * @throws IllegalArgumentException if {@code data} is a heap segment or longer than {@code maxInlineData}
     * @throws IllegalStateException    if no request is under way, its flags lack {@link SendFlag#INLINE},
     *                                  {@code data} is freed, or the queue pair is closed
     */
    public SendBatch inlineData(MemorySegment data) {
        checkInline(Objects.requireNonNull(data, "data"), 0);
        requireRequest("inlineData");
        requireInlineFlag();
        try {
            SET_INLINE.invokeExact(setInline, handle(), data, data.byteSize());
        } catch (Throwable t) {
            throw rethrow(t);
        }
        return this;
    }

    /**
     * {@code ibv_wr_set_inline_data_list}: copies the first {@code n} of {@code buffers}, one after the
     * other, into the request now.
     *
     * @param n       how many, 1 to 16
     * @param buffers the bytes (the caller's array, reused), together at most {@code maxInlineData}
     * @return this batch
     * @throws NullPointerException     if {@code buffers} or one of its first {@code n} is null
     * @throws IllegalArgumentException if {@code n} is out of range, a buffer is on the heap, or the
     *                                  total exceeds {@code maxInlineData}
     * @throws IllegalStateException    if no request is under way, a buffer is freed, or the queue pair is closed
     */
    public SendBatch inlineData(int n, MemorySegment[] buffers) {
        if (n < 1 || n > MAX_INLINE_BUFFERS || buffers.length < n) {
            throw new IllegalArgumentException(n + " buffers: must be in [1, " + MAX_INLINE_BUFFERS + "] and at most "
                    + buffers.length);
        }
        long total = 0;
        for (int i = 0; i < n; i++) {
            MemorySegment b = Objects.requireNonNull(buffers[i], "buffers[" + i + "]");
            checkInline(b, total);
            total += b.byteSize();
            MemorySegment e = bufList.asSlice(i * ibv_data_buf.sizeof(), ibv_data_buf.sizeof());
            e.set(ADDRESS, ibv_data_buf.addr$offset(), b);
            e.set(JAVA_LONG, ibv_data_buf.length$offset(), b.byteSize());
        }
        requireRequest("inlineData");
        requireInlineFlag();
        try {
            // The provider copies the buffers during this call; buffers of automatic arenas stay reachable.
            SET_LIST.invokeExact(setInlineList, handle(), (long) n, bufList);
        } catch (Throwable t) {
            throw rethrow(t);
        } finally {
            java.lang.ref.Reference.reachabilityFence(buffers);
        }
        return this;
    }

    /** The operation copied the flags into the request: inline data needs IBV_SEND_INLINE among them (rxe reads it). */
    private void requireInlineFlag() {
        if ((handle().get(JAVA_INT, WR_FLAGS) & SendFlag.INLINE.value) == 0) {
            throw new IllegalStateException("inline data needs SendFlag.INLINE in the request's flags, set before its "
                    + "operation (flags(...)): the provider would read the data as scatter entries");
        }
    }

    /**
     * Flags stay set from one request to the next (as in C): a request whose flags still hold INLINE would
     * send its scatter entries themselves (addresses and keys) as its data.
     */
    private void requireNoInlineFlag() {
        if ((handle().get(JAVA_INT, WR_FLAGS) & SendFlag.INLINE.value) != 0) {
            throw new IllegalStateException("the request's flags include SendFlag.INLINE (flags stay set from one request "
                    + "to the next): set its data with inlineData(...), or clear INLINE before its operation");
        }
    }

    private void checkInline(MemorySegment data, long before) {
        if (!data.isNative()) {
            throw new IllegalArgumentException("inline data must be native memory, not a heap segment");
        }
        if (!data.scope().isAlive()) {
            throw new IllegalStateException("the inline data's memory has been freed (its arena is closed)");
        }
        int max = qp.capabilities().maxInlineData();
        if (before + data.byteSize() > max) {
            throw new IllegalArgumentException((before + data.byteSize()) + " bytes of inline data is more than the "
                    + "queue pair's maxInlineData, " + max);
        }
    }

    /**
     * {@code ibv_wr_set_ud_addr}: the destination of the current request, needed by every request on a UD
     * queue pair. The provider copies what it needs now.
     *
     * @param destination the address handle
     * @param remoteQpn   the destination queue pair (0xFFFFFF for a multicast group)
     * @param remoteQkey  its Q_Key
     * @return this batch
     * @throws IllegalStateException if the queue pair is not UD, no request is under way, or the address
     *                               handle or queue pair is closed
     */
    public SendBatch udAddress(AddressHandle destination, int remoteQpn, int remoteQkey) {
        Objects.requireNonNull(destination, "destination");
        if (qp.type() != QpType.UD) {
            throw new IllegalStateException(qp + " is " + qp.type() + ", not UD: it has no datagram destination");
        }
        requireRequest("udAddress");
        MemorySegment ah = destination.handle();
        try {
            SET_UD.invokeExact(setUd, handle(), ah, remoteQpn, remoteQkey);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        needsDestination = false;
        return this;
    }

    /**
     * {@code ibv_wr_complete}: posts every request of the batch, or none.
     *
     * @return how many requests were posted
     * @throws IllegalStateException if no batch is under way, the last UD request has no destination (the
     *                               batch is then aborted), or the queue pair is closed
     * @throws VerbsException        if the provider refused the batch (none of it was posted): ENOMEM or
     *                               ENOSPC (rxe), more requests than the send queue had room for, or more
     *                               data than a request holds; EINVAL, a queue pair not in RTS
     */
    public int complete() {
        requireStarted();
        if (needsDestination) {
            abort();
            throw new IllegalStateException("request #" + (requests - 1) + " of the batch on " + qp + " (a UD queue "
                    + "pair) has no destination: set udAddress(...) after each operation; the batch was aborted");
        }
        int rc;
        started = false;
        try {
            rc = (int) COMPLETE.invokeExact(complete, handle());
        } catch (Throwable t) {
            endWindows(false);
            throw rethrow(t);
        }
        endWindows(rc == 0);
        if (rc != 0) {
            throw new VerbsException("ibv_wr_complete", rc, "none of the " + requests + " requests of the batch (wr_id "
                    + firstId + " first) was posted on " + qp + (rc == Errno.ENOMEM || rc == Errno.ENOSPC
                    ? ": more requests than the send queue had room for, or more scatter entries or inline data "
                    + "than a request holds" : ""));
        }
        return requests;
    }

    /**
     * {@code ibv_wr_abort}: discards the batch; nothing of it is posted.
     *
     * @throws IllegalStateException if no batch is under way, or the queue pair is closed
     */
    public void abort() {
        requireStarted();
        started = false;
        endWindows(false);
        callVoid(abort);
    }

    private void requireStarted() {
        if (!started) {
            throw new IllegalStateException("no batch on " + qp + " is under way: start() first");
        }
    }

    private void requireRequest(String setter) {
        requireStarted();
        if (!inRequest) {
            throw new IllegalStateException(setter + "(...) needs a request: call its operation (send(), rdmaWrite(...), "
                    + "...) first");
        }
    }

    /** Checks that {@code op} may start a request now; the caller then writes it. */
    private SendBatch begin(SendOpcode op, MemorySegment fn) {
        requireStarted();
        if (fn.address() == 0) {
            throw new IllegalStateException(op + " is not among the send operations of " + qp + " (" + ops
                    + "; QpInitAttributes.sendOps)");
        }
        if (needsDestination) {
            throw new IllegalStateException("request #" + (requests - 1) + " of the batch on " + qp + " (a UD queue pair) "
                    + "has no destination: call udAddress(...) before the next operation");
        }
        if (requests == 0) {
            firstId = handle().get(JAVA_LONG, WR_ID);
        }
        requests++;
        inRequest = true;
        needsDestination = qp.type() == QpType.UD;
        return this;
    }

    private MemorySegment handle() {
        return qp.ptr();
    }

    private SendBatch callVoid(MemorySegment fn) {
        try {
            VOID.invokeExact(fn, handle());
        } catch (Throwable t) {
            throw rethrow(t);
        }
        return this;
    }

    private SendBatch callInt(MemorySegment fn, int value) {
        try {
            VOID_INT.invokeExact(fn, handle(), value);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        return this;
    }

    private RuntimeException rethrow(Throwable t) {
        if (t instanceof IllegalStateException e) {
            return qp.closed(e);
        }
        return Native.rethrow(t);
    }
}
