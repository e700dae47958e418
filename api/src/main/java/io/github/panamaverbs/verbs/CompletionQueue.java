package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_cq;
import io.github.panamaverbs.bindings.ibv_cq_ex;
import io.github.panamaverbs.bindings.ibv_cq_init_attr_ex;
import io.github.panamaverbs.bindings.verbs_context;
import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Native;
import io.github.panamaverbs.internal.Quirks;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.ref.Reference;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * A completion queue ({@code struct ibv_cq}): where the device reports finished work requests.
 * {@link #poll(WorkCompletions)} reads them without allocating; with a {@link CompletionChannel}, a
 * thread may instead sleep until {@link #requestNotification(boolean) notified}.
 *
 * <p>Several threads may poll one queue (each completion goes to one of them), each with its own
 * {@link WorkCompletions}. Closing it is refused while a queue pair still reports to it.
 *
 * <p><b>Extended</b> ({@code ibv_create_cq_ex}, {@link Context#createCompletionQueue(int, Set,
 * CompletionChannel, int)}): besides {@link #poll(WorkCompletions)}, completions are read in place,
 * one at a time, with the provider's own accessors and no copy:
 * <pre>{@code
 * if (cq.startPoll()) {
 *     do {
 *         long id = cq.wrId();
 *         WcStatus status = cq.status();
 *         int bytes = cq.readByteLength();      // a field asked for at creation
 *     } while (cq.nextPoll());
 *     cq.endPoll();                             // always, once startPoll() returned true
 * }
 * }</pre>
 * The provider holds the queue's lock from a successful {@code startPoll()} to {@code endPoll()}, so
 * one thread polls this way at a time, and the accessors may be called only in between, on the
 * current completion; out of turn they throw {@link IllegalStateException} instead of reaching the
 * provider (which would read a stale or null completion). On the thread that polls this way,
 * {@link #poll}, {@link #await}, {@link #resize} and {@link #requestNotification} are refused between
 * the two (they take the same lock, and would wait for it for ever). None of them allocates.
 */
public final class CompletionQueue extends Resource {
    private static final MethodHandle CREATE = Native.withErrno(
            Verbs.ibv_create_cq$address(), Verbs.ibv_create_cq$descriptor());
    private static final MethodHandle DESTROY = Native.withErrno(
            Verbs.ibv_destroy_cq$address(), Verbs.ibv_destroy_cq$descriptor());
    private static final MethodHandle RESIZE = Native.withErrno(
            Verbs.ibv_resize_cq$address(), Verbs.ibv_resize_cq$descriptor());
    private static final MethodHandle ACK = Native.plain(
            Verbs.ibv_ack_cq_events$address(), Verbs.ibv_ack_cq_events$descriptor());

    private static final FunctionDescriptor OF_CQ = FunctionDescriptor.ofVoid(ADDRESS);
    private static final MethodHandle START_POLL = DataPath.handle(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle NEXT_POLL = DataPath.pollHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle END_POLL = DataPath.pollHandle(OF_CQ);
    private static final MethodHandle READ_INT = DataPath.pollHandle(OF_CQ.changeReturnLayout(JAVA_INT));
    private static final MethodHandle READ_BYTE = DataPath.pollHandle(OF_CQ.changeReturnLayout(JAVA_BYTE));
    private static final MethodHandle READ_SHORT = DataPath.pollHandle(OF_CQ.changeReturnLayout(JAVA_SHORT));
    private static final MethodHandle READ_LONG = DataPath.pollHandle(OF_CQ.changeReturnLayout(JAVA_LONG));
    /** struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *, struct ibv_cq_init_attr_ex *) */
    private static final MethodHandle CREATE_EX = Native.withErrno(FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
    private static final long STATUS = ibv_cq_ex.status$offset();
    private static final long WR_ID = ibv_cq_ex.wr_id$offset();

    /** Completion events acknowledged together ({@code ibv_ack_cq_events} takes a lock in libibverbs). */
    static final int ACK_BATCH = 32;

    private final Context context;
    private final CompletionChannel channel;
    /** Guards {@link #unacked} and {@link #destroying}. */
    private final Object events = new Object();
    /** Events of this queue read from its channel and not yet acknowledged. */
    private int unacked;
    /** Set while {@code ibv_destroy_cq} runs: it waits until every event read is acknowledged. */
    private boolean destroying;
    private final MemorySegment pollFn;
    private final MemorySegment notifyFn;

    /** The fields asked for (extended only); null for a classic queue. */
    private final Set<WcField> fields;
    /** start_poll, next_poll, end_poll, then read_* in {@link Read} order; null for a classic queue. */
    private final MemorySegment[] exFns;
    /** struct ibv_poll_cq_attr, zeroed; extended only. */
    private final MemorySegment pollAttr;
    /** Between a successful startPoll() and endPoll(). */
    private boolean polling;
    /**
     * The thread whose startPoll() holds the provider's queue lock (until endPoll(), or until the provider
     * ended the poll itself): any other call of that thread that takes the lock would wait for ever.
     */
    private Thread cursorOwner;
    /** A completion is current: startPoll() or the last nextPoll() returned true. */
    private boolean current;
    /**
     * Whether the provider ends the poll itself when next_poll finds the queue empty: Soft-RoCE's
     * provider before rdma-core 55 consumed the completions and released the queue's lock there, and
     * an end_poll after it skipped a slot that held no completion (the queue then seemed to hold a
     * full ring of stale ones). The man page's order (end_poll after ENOENT) is right everywhere else.
     */
    private final boolean emptyNextEndsPoll;
    /**
     * SoftiWARP: the queue pairs of this queue's error completions are told
     * ({@link QueuePair#errorSeen}), so that a post that would never complete there is refused
     * ({@link Quirks#SIW_POST_IN_ERROR_NEVER_COMPLETES}); false elsewhere, and the poll does nothing more.
     */
    private final boolean noteErrors;
    /** The provider ended the poll (see {@link #emptyNextEndsPoll}): the next endPoll() calls nothing. */
    private boolean endedByProvider;

    /** The read_* accessors of struct ibv_cq_ex, each with the field that must have been asked for (or null). */
    private enum Read {
        OPCODE(ibv_cq_ex.read_opcode$offset(), null),
        VENDOR_ERR(ibv_cq_ex.read_vendor_err$offset(), null),
        WC_FLAGS(ibv_cq_ex.read_wc_flags$offset(), null),
        BYTE_LEN(ibv_cq_ex.read_byte_len$offset(), WcField.BYTE_LEN),
        IMM_DATA(ibv_cq_ex.read_imm_data$offset(), WcField.IMMEDIATE),
        QP_NUM(ibv_cq_ex.read_qp_num$offset(), WcField.QP_NUM),
        SRC_QP(ibv_cq_ex.read_src_qp$offset(), WcField.SOURCE_QP),
        SLID(ibv_cq_ex.read_slid$offset(), WcField.SLID),
        SL(ibv_cq_ex.read_sl$offset(), WcField.SL),
        DLID_PATH_BITS(ibv_cq_ex.read_dlid_path_bits$offset(), WcField.DLID_PATH_BITS),
        COMPLETION_TS(ibv_cq_ex.read_completion_ts$offset(), WcField.COMPLETION_TIMESTAMP),
        CVLAN(ibv_cq_ex.read_cvlan$offset(), WcField.CVLAN),
        FLOW_TAG(ibv_cq_ex.read_flow_tag$offset(), WcField.FLOW_TAG),
        WALLCLOCK(ibv_cq_ex.read_completion_wallclock_ns$offset(), WcField.COMPLETION_TIMESTAMP_WALLCLOCK);

        final long offset;
        final WcField field;

        Read(long offset, WcField field) {
            this.offset = offset;
            this.field = field;
        }
    }

    CompletionQueue(Context context, int entries, CompletionChannel channel, int compVector) {
        super(create(context, entries, channel, compVector), ibv_cq.sizeof(), context, channel);
        this.context = context;
        this.channel = channel;
        this.fields = null;
        this.exFns = null;
        this.pollAttr = null;
        this.emptyNextEndsPoll = false;
        this.noteErrors = context.has(Quirks.SIW_POST_IN_ERROR_NEVER_COMPLETES);
        try {
            this.pollFn = DataPath.op(context, DataPath.POLL);
            this.notifyFn = DataPath.op(context, DataPath.REQ_NOTIFY);
            context.register(this, ptr().address());
            afterCreate();
        } catch (RuntimeException | Error e) {
            abandon(e); // destroys the completion queue: its context and channel stay closable
            throw e;
        }
    }

    /** An extended queue ({@code ibv_create_cq_ex}) reporting {@code fields}. */
    CompletionQueue(Context context, int entries, Set<WcField> fields, CompletionChannel channel, int compVector) {
        super(createEx(context, entries, fields, channel, compVector), ibv_cq_ex.sizeof(), context, channel);
        this.context = context;
        this.channel = channel;
        this.fields = fields.isEmpty() ? Set.of() : Set.copyOf(EnumSet.copyOf(fields));
        this.exFns = new MemorySegment[3 + Read.values().length];
        this.pollAttr = Arena.ofAuto().allocate(8, 8);
        this.noteErrors = context.has(Quirks.SIW_POST_IN_ERROR_NEVER_COMPLETES);
        try {
            this.pollFn = DataPath.op(context, DataPath.POLL);
            this.notifyFn = DataPath.op(context, DataPath.REQ_NOTIFY);
            MemorySegment cq = ptr();
            exFns[0] = exFn(cq, ibv_cq_ex.start_poll$offset(), "start_poll");
            exFns[1] = exFn(cq, ibv_cq_ex.next_poll$offset(), "next_poll");
            exFns[2] = exFn(cq, ibv_cq_ex.end_poll$offset(), "end_poll");
            this.emptyNextEndsPoll = Quirks.RXE_EMPTY_NEXT_POLL_ENDS_POLL.affects(exFns[0]);
            for (Read r : Read.values()) {
                // The provider sets only the accessors of the fields asked for; the others stay unread.
                exFns[3 + r.ordinal()] = r.field == null || this.fields.contains(r.field)
                        ? exFn(cq, r.offset, "read_" + r.name().toLowerCase()) : MemorySegment.NULL;
            }
            context.register(this, ptr().address());
            afterCreate();
        } catch (RuntimeException | Error e) {
            abandon(e);
            throw e;
        }
    }

    private MemorySegment exFn(MemorySegment cq, long offset, String name) {
        MemorySegment fn = cq.get(ADDRESS, offset);
        if (fn.address() == 0) {
            throw new VerbsException("ibv_create_cq_ex", Errno.EOPNOTSUPP, context.device().name()
                    + " created the queue without its " + name + " accessor");
        }
        return fn;
    }

    private static MemorySegment createEx(Context context, int entries, Set<WcField> fields, CompletionChannel channel,
                                          int compVector) {
        long mask = WcField.mask(Objects.requireNonNull(fields, "fields"));
        checkArguments(context, entries, channel, compVector);
        MemorySegment ctx = checkOpen(context);
        MemorySegment ch = channel == null ? MemorySegment.NULL : checkOpen(channel);
        MemorySegment fn = context.extendedOp(verbs_context.create_cq_ex$offset());
        if (fn.address() == 0) {
            throw new VerbsException("ibv_create_cq_ex", Errno.EOPNOTSUPP, context.device().name()
                    + " has no extended completion queues");
        }
        try {
            return Native.call(c -> {
                MemorySegment attr = c.allocate(ibv_cq_init_attr_ex.layout());
                ibv_cq_init_attr_ex.cqe(attr, entries);
                ibv_cq_init_attr_ex.channel(attr, ch);
                ibv_cq_init_attr_ex.comp_vector(attr, compVector);
                ibv_cq_init_attr_ex.wc_flags(attr, mask);
                MemorySegment cq = (MemorySegment) CREATE_EX.invokeExact(fn, c.errno(), ctx, attr);
                if (cq.address() == 0) {
                    int e = c.lastErrno();
                    EnumSet<WcField> beyond = fields.isEmpty() ? EnumSet.noneOf(WcField.class) : EnumSet.copyOf(fields);
                    beyond.removeAll(WcField.STANDARD);
                    throw Native.fail("ibv_create_cq_ex", e, x -> x == Errno.EOPNOTSUPP || x == Errno.EINVAL
                            ? context.device().name() + (beyond.isEmpty() ? " does not create extended completion queues"
                            + " (or not of " + entries + " entries)" : " does not report " + beyond)
                            : Native.MEMLOCK.explain(x));
                }
                return cq;
            });
        } catch (IllegalStateException e) {
            throw closed(e, context, channel);
        }
    }

    private static void checkArguments(Context context, int entries, CompletionChannel channel, int compVector) {
        if (entries <= 0) {
            throw new IllegalArgumentException("a completion queue needs at least one entry, not " + entries);
        }
        if (channel != null && channel.context() != context) {
            throw new IllegalArgumentException(channel + " belongs to another context than " + context);
        }
        if (compVector < 0 || compVector >= Math.max(1, context.numCompVectors())) {
            throw new IllegalArgumentException("completion vector " + compVector + " is not in [0, "
                    + context.numCompVectors() + ")");
        }
    }

    private static MemorySegment create(Context context, int entries, CompletionChannel channel, int compVector) {
        if (entries <= 0) {
            throw new IllegalArgumentException("a completion queue needs at least one entry, not " + entries);
        }
        MemorySegment ctx = checkOpen(context);
        MemorySegment ch = channel == null ? MemorySegment.NULL : checkOpen(channel);
        checkArguments(context, entries, channel, compVector);
        try {
            return Native.create("ibv_create_cq", e -> e == Errno.EINVAL
                            ? entries + " entries is more than the device's max_cqe" : Native.MEMLOCK.explain(e),
                    c -> (MemorySegment) CREATE.invokeExact(c.errno(), ctx, entries, MemorySegment.NULL, ch, compVector));
        } catch (IllegalStateException e) {
            throw closed(e, context, channel);
        }
    }

    /** {@return the context it was created in} */
    public Context context() {
        return context;
    }

    /** {@return the channel its events go to, or null} */
    public CompletionChannel channel() {
        return channel;
    }

    /**
     * {@code cqe}: how many completions it holds (at least what was asked).
     *
     * @return the capacity
     * @throws IllegalStateException if the queue is closed
     */
    public int capacity() {
        return read(ibv_cq::cqe);
    }

    /**
     * {@code ibv_poll_cq}: moves up to {@code batch.capacity()} completions into {@code batch}.
     * Allocates nothing. A completion polled gives the memory of its work request back to the caller
     * (see <a href="package-summary.html#buffers">when a posted buffer may be reused</a>).
     *
     * @param batch where the completions go; its {@link WorkCompletions#count()} becomes the result
     * @return how many completions were read; 0 when the queue is empty
     * @throws IllegalStateException if this queue is closed, or the batch's memory was freed
     * @throws VerbsException        if the provider reports an error (not a failed completion: those are data)
     */
    public int poll(WorkCompletions batch) {
        Objects.requireNonNull(batch, "batch");
        int n;
        try {
            if (fields == null) {
                n = (int) DataPath.POLL_CQ.invokeExact(pollFn, ptr(), batch.capacity, batch.callSegment);
            } else {
                requireNoCursorOnThisThread("poll");
                n = (int) DataPath.POLL_CQ_EX.invokeExact(pollFn, ptr(), batch.capacity, batch.callSegment);
            }
        } catch (IllegalStateException e) {
            throw isOpen() && !batch.segment.scope().isAlive()
                    ? new IllegalStateException("the memory of the WorkCompletions batch has been freed (its arena is closed)", e)
                    : closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        } finally {
            Reference.reachabilityFence(batch);
        }
        if (n < 0) {
            batch.count = 0;
            throw Native.fail("ibv_poll_cq", -n, Native.NO_HINT);
        }
        batch.count = n;
        if (noteErrors) {
            noteErrors(batch, n);
        }
        return n;
    }

    /** Tells the queue pair of each error completion of {@code batch} that it may be in ERR (SoftiWARP only). */
    private void noteErrors(WorkCompletions batch, int n) {
        for (int i = 0; i < n; i++) {
            if (batch.status(i) != WcStatus.SUCCESS) {
                QueuePair qp = context.queuePairNumbered(batch.qpNumber(i));
                if (qp != null) {
                    qp.errorSeen = true;
                }
            }
        }
    }

    /** {@return whether it was created by {@code ibv_create_cq_ex} (the extended polling below works)} */
    public boolean isExtended() {
        return fields != null;
    }

    /** {@return the fields asked for at creation: empty for a classic queue} */
    public Set<WcField> fields() {
        return fields == null ? Set.of() : fields;
    }

    /**
     * Refuses a call that takes the provider's queue lock on the thread whose {@link #startPoll()}
     * holds it: the call would wait for that thread, itself, for ever.
     */
    private void requireNoCursorOnThisThread(String call) {
        if (cursorOwner == Thread.currentThread()) {
            throw new IllegalStateException(call + "() of " + this + " between startPoll() and endPoll() on the same "
                    + "thread: the provider holds the queue's lock until endPoll(), and the call would wait for it for ever; "
                    + "call endPoll() first");
        }
    }

    private void requireExtended() {
        if (fields == null) {
            throw new IllegalStateException(this + " is not extended: create it with the fields to report "
                    + "(Context.createCompletionQueue(entries, fields, channel, compVector)) to poll it this way");
        }
    }

    /**
     * {@code ibv_start_poll}: makes the oldest completion current, if there is one. When it returns
     * true, {@link #endPoll()} must follow (the provider holds the queue's lock until then).
     *
     * @return true if a completion is current, false if the queue is empty
     * @throws IllegalStateException if the queue is not extended, is closed, or a poll is already under
     *                               way (startPoll without endPoll)
     * @throws VerbsException        if the provider fails (other than ENOENT, "empty")
     */
    public boolean startPoll() {
        requireExtended();
        if (polling || endedByProvider) {
            throw new IllegalStateException("a poll of " + this + " is under way: call endPoll() before startPoll()");
        }
        int rc;
        try {
            rc = (int) START_POLL.invokeExact(exFns[0], ptr(), pollAttr);
        } catch (IllegalStateException e) {
            throw closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
        if (rc == 0) {
            polling = true;
            current = true;
            cursorOwner = Thread.currentThread();
            return true;
        }
        if (rc == Errno.ENOENT) {
            return false;
        }
        throw Native.fail("ibv_start_poll", rc, Native.NO_HINT);
    }

    /**
     * {@code ibv_next_poll}: makes the next completion current.
     *
     * @return true if one is, false when none is left (then call {@link #endPoll()})
     * @throws IllegalStateException if no poll is under way, or the queue is closed
     * @throws VerbsException        if the provider fails (other than ENOENT)
     */
    public boolean nextPoll() {
        if (!polling) {
            throw new IllegalStateException("no poll of " + this + " is under way: startPoll() first");
        }
        int rc;
        try {
            rc = (int) NEXT_POLL.invokeExact(exFns[1], ptr());
        } catch (IllegalStateException e) {
            throw closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
        current = rc == 0;
        if (rc == Errno.ENOENT && emptyNextEndsPoll) {
            polling = false;
            endedByProvider = true;
            cursorOwner = null;
        }
        if (rc == 0 || rc == Errno.ENOENT) {
            return current;
        }
        throw Native.fail("ibv_next_poll", rc, Native.NO_HINT);
    }

    /**
     * {@code ibv_end_poll}: ends the poll that {@link #startPoll()} began; the completions read are
     * consumed.
     *
     * @throws IllegalStateException if no poll is under way, or the queue is closed
     */
    public void endPoll() {
        if (endedByProvider) {
            endedByProvider = false;
            return;
        }
        if (!polling) {
            throw new IllegalStateException("no poll of " + this + " is under way: endPoll() follows a startPoll() "
                    + "that returned true");
        }
        polling = false;
        current = false;
        cursorOwner = null;
        try {
            END_POLL.invokeExact(exFns[2], ptr());
        } catch (IllegalStateException e) {
            throw closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    private MemorySegment currentFn(Read r) {
        MemorySegment fn = exFns == null ? null : exFns[3 + r.ordinal()];
        currentCq();
        if (fn.address() == 0) {
            throw new IllegalStateException(r.field + " was not asked for when " + this + " was created");
        }
        return fn;
    }

    /** The queue, once a completion is current; else why not. */
    private MemorySegment currentCq() {
        if (!current) {
            requireExtended();
            throw new IllegalStateException("no completion of " + this + " is current: read between a startPoll() "
                    + "or nextPoll() that returned true and the next call");
        }
        return ptr();
    }

    private int readInt(Read r) {
        MemorySegment fn = currentFn(r);
        try {
            return (int) READ_INT.invokeExact(fn, ptr());
        } catch (IllegalStateException e) {
            throw closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    private int readByte(Read r) {
        MemorySegment fn = currentFn(r);
        try {
            return Byte.toUnsignedInt((byte) READ_BYTE.invokeExact(fn, ptr()));
        } catch (IllegalStateException e) {
            throw closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    private long readLong(Read r) {
        MemorySegment fn = currentFn(r);
        try {
            return (long) READ_LONG.invokeExact(fn, ptr());
        } catch (IllegalStateException e) {
            throw closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    /**
     * {@return {@code wr_id} of the current completion (a field of {@code struct ibv_cq_ex})}
     *
     * @throws IllegalStateException if no completion is current, or the queue is closed
     */
    public long wrId() {
        try {
            return currentCq().get(JAVA_LONG, WR_ID);
        } catch (IllegalStateException e) {
            throw closed(e);
        }
    }

    /**
     * {@return {@code status} of the current completion}
     *
     * @throws IllegalStateException if no completion is current, or the queue is closed
     */
    public WcStatus status() {
        try {
            return WcStatus.of(currentCq().get(JAVA_INT, STATUS));
        } catch (IllegalStateException e) {
            throw closed(e);
        }
    }

    /**
     * {@return {@code ibv_wc_read_opcode}: the current completion's operation}
     *
     * @throws IllegalStateException if no completion is current, or the queue is closed
     */
    public WcOpcode readOpcode() {
        return WcOpcode.of(readInt(Read.OPCODE));
    }

    /**
     * {@return {@code ibv_wc_read_vendor_err}: the device's own error code, for a failed completion}
     *
     * @throws IllegalStateException if no completion is current, or the queue is closed
     */
    public int readVendorError() {
        return readInt(Read.VENDOR_ERR);
    }

    /**
     * {@return {@code ibv_wc_read_wc_flags}: {@code IBV_WC_GRH}, {@code IBV_WC_WITH_IMM}, … as in {@link WorkCompletions#flags(int)}}
     *
     * @throws IllegalStateException if no completion is current, or the queue is closed
     */
    public int readWcFlags() {
        return readInt(Read.WC_FLAGS);
    }

    /**
     * {@return {@code ibv_wc_read_byte_len}: the bytes received}
     *
     * @throws IllegalStateException if no completion is current, {@link WcField#BYTE_LEN} was not asked
     *                               for, or the queue is closed
     */
    public int readByteLength() {
        return readInt(Read.BYTE_LEN);
    }

    /**
     * {@return {@code ibv_wc_read_imm_data}, in host order ({@code ntohl} done)}
     *
     * @throws IllegalStateException if no completion is current, {@link WcField#IMMEDIATE} was not asked
     *                               for, or the queue is closed
     */
    public int readImmediate() {
        return Integer.reverseBytes(readInt(Read.IMM_DATA));
    }

    /**
     * {@return {@code ibv_wc_read_qp_num}: the local queue pair's number}
     *
     * @throws IllegalStateException if no completion is current, {@link WcField#QP_NUM} was not asked
     *                               for, or the queue is closed
     */
    public int readQpNumber() {
        return readInt(Read.QP_NUM);
    }

    /**
     * {@return {@code ibv_wc_read_src_qp}: the sender's queue pair number (UD)}
     *
     * @throws IllegalStateException if no completion is current, {@link WcField#SOURCE_QP} was not asked
     *                               for, or the queue is closed
     */
    public int readSourceQp() {
        return readInt(Read.SRC_QP);
    }

    /**
     * {@return {@code ibv_wc_read_slid}: the sender's LID (UD, InfiniBand)}
     *
     * @throws IllegalStateException if no completion is current, {@link WcField#SLID} was not asked
     *                               for, or the queue is closed
     */
    public int readSourceLid() {
        return readInt(Read.SLID);
    }

    /**
     * {@return {@code ibv_wc_read_sl}: the service level}
     *
     * @throws IllegalStateException if no completion is current, {@link WcField#SL} was not asked
     *                               for, or the queue is closed
     */
    public int readServiceLevel() {
        return readByte(Read.SL);
    }

    /**
     * {@return {@code ibv_wc_read_dlid_path_bits}}
     *
     * @throws IllegalStateException if no completion is current, {@link WcField#DLID_PATH_BITS} was not
     *                               asked for, or the queue is closed
     */
    public int readDlidPathBits() {
        return readByte(Read.DLID_PATH_BITS);
    }

    /**
     * {@return {@code ibv_wc_read_completion_ts}: when the device completed it, in its own clock's ticks}
     *
     * @throws IllegalStateException if no completion is current, {@link WcField#COMPLETION_TIMESTAMP}
     *                               was not asked for, or the queue is closed
     */
    public long readCompletionTimestamp() {
        return readLong(Read.COMPLETION_TS);
    }

    /**
     * {@return {@code ibv_wc_read_cvlan}: the customer VLAN tag (raw packet queue pairs)}
     *
     * @throws IllegalStateException if no completion is current, {@link WcField#CVLAN} was not asked
     *                               for, or the queue is closed
     */
    public int readCvlan() {
        MemorySegment fn = currentFn(Read.CVLAN);
        try {
            return Short.toUnsignedInt((short) READ_SHORT.invokeExact(fn, ptr()));
        } catch (IllegalStateException e) {
            throw closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    /**
     * {@return {@code ibv_wc_read_flow_tag}: the flow steering tag}
     *
     * @throws IllegalStateException if no completion is current, {@link WcField#FLOW_TAG} was not asked
     *                               for, or the queue is closed
     */
    public int readFlowTag() {
        return readInt(Read.FLOW_TAG);
    }

    /**
     * {@return {@code ibv_wc_read_completion_wallclock_ns}: when it completed, in nanoseconds of the
     * wall clock}
     *
     * @throws IllegalStateException if no completion is current, {@link WcField#COMPLETION_TIMESTAMP_WALLCLOCK}
     *                               was not asked for, or the queue is closed
     */
    public long readCompletionWallclockNanos() {
        return readLong(Read.WALLCLOCK);
    }

    /**
     * {@code ibv_req_notify_cq}: asks for one event on the channel when the next completion arrives
     * (any, or only solicited ones).
     *
     * @param solicitedOnly true to be notified only of solicited completions (and errors), false for any
     * @throws IllegalStateException if the queue has no completion channel, or is closed
     * @throws VerbsException        if {@code ibv_req_notify_cq} fails
     */
    public void requestNotification(boolean solicitedOnly) {
        if (channel == null) {
            throw new IllegalStateException(this + " has no completion channel to notify");
        }
        requireNoCursorOnThisThread("requestNotification");
        int rc;
        try {
            rc = (int) DataPath.REQ_NOTIFY_CQ.invokeExact(notifyFn, ptr(), solicitedOnly ? 1 : 0);
        } catch (IllegalStateException e) {
            throw closed(e);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
        if (rc != 0) {
            throw Native.fail("ibv_req_notify_cq", rc, Native.NO_HINT);
        }
    }

    /**
     * Waits for completions of this queue through its completion channel, never longer than
     * {@code timeout}, in the order the verbs require: polls; if nothing is there, asks for
     * notification and polls again (a completion that arrived in between is found then, not lost
     * until the next one), then waits for the channel's event and polls. A virtual thread that waits
     * here parks and leaves its carrier to others (see {@link CompletionChannel#awaitEvent}); busy
     * polling with {@link #poll(WorkCompletions)} stays the fastest path.
     *
     * <p>The queue must be the only one on its channel: an event of another queue would be consumed
     * here. With a shared channel, wait with {@link CompletionChannel#awaitEvent} and poll the queue
     * it names.
     *
     * @param batch   where the completions go
     * @param timeout the longest to wait
     * @return the number of completions polled into {@code batch}; 0 if none came in time
     * @throws IllegalStateException if the queue has no completion channel or shares it with another
     *                               queue, if the queue or the channel is closed (also while waiting:
     *                               a close wakes the waiter within about 50 ms), if the thread is
     *                               interrupted while waiting (its interrupt status stays set), or
     *                               between {@link #startPoll()} and {@link #endPoll()} on this thread
     * @throws VerbsException        if polling, {@code ibv_req_notify_cq} or {@code ibv_get_cq_event} fails
     */
    public int await(WorkCompletions batch, Duration timeout) {
        Objects.requireNonNull(batch, "batch");
        requireNoCursorOnThisThread("await");
        long deadline = Native.deadline(Objects.requireNonNull(timeout, "timeout"));
        if (channel == null) {
            throw new IllegalStateException(this + " has no completion channel to wait on: create it with one, or poll");
        }
        int sharing = channel.countUsers(CompletionQueue.class);
        if (sharing != 1) {
            throw new IllegalStateException(this + " shares " + channel + " with " + (sharing - 1) + " other completion "
                    + "queue(s), whose events a wait here would consume: wait with CompletionChannel.awaitEvent");
        }
        int n = poll(batch);
        while (n == 0) {
            requestNotification(false);
            n = poll(batch);
            if (n > 0) {
                break; // the notification stays armed: a later wait may see its event and find nothing, and wait again
            }
            if (channel.awaitEvent(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())), this).isEmpty()) {
                return 0;
            }
            n = poll(batch);
            if (n == 0 && System.nanoTime() - deadline >= 0) {
                return 0;
            }
        }
        return n;
    }

    /**
     * {@code ibv_resize_cq}: changes the capacity to at least {@code entries}.
     *
     * @param entries the minimum number of completions it holds
     * @throws IllegalArgumentException if {@code entries} is not positive
     * @throws IllegalStateException    if the queue is closed
     * @throws VerbsException           if the provider cannot resize it: more than the device's
     *                                  {@code max_cqe}, fewer than it holds now, or not supported
     */
    public void resize(int entries) {
        if (entries <= 0) {
            throw new IllegalArgumentException("a completion queue needs at least one entry, not " + entries);
        }
        requireNoCursorOnThisThread("resize");
        MemorySegment cq = handle();
        check("ibv_resize_cq", e -> e == Errno.EINVAL ? entries + " entries is more than the device's max_cqe, "
                + "or fewer than the completions it holds now" : null,
                c -> (int) RESIZE.invokeExact(c.errno(), cq, entries));
    }

    /**
     * Counts an event of this queue read from its channel ({@code cq} is its C struct), and
     * acknowledges the events counted every {@link #ACK_BATCH} (and all of them before the queue is
     * destroyed, which waits for that), as libibverbs advises for a busy channel.
     */
    void eventRead(MemorySegment cq) {
        int n = 0;
        synchronized (events) {
            if (destroying) {
                n = 1; // ibv_destroy_cq is waiting for this one
            } else if (++unacked == ACK_BATCH) {
                n = unacked;
                unacked = 0;
            }
        }
        if (n > 0) {
            ackEvents(cq, n);
        }
    }

    /** {@code ibv_ack_cq_events}. */
    static void ackEvents(MemorySegment cq, int n) {
        try {
            ACK.invokeExact(cq, n);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    @Override
    void destroy(MemorySegment address) {
        int n;
        synchronized (events) {
            destroying = true;
            n = unacked;
            unacked = 0;
        }
        if (n > 0) {
            ackEvents(address, n);
        }
        try {
            Native.check("ibv_destroy_cq", e -> e == Errno.EBUSY ? "a queue pair still reports to it" : null,
                    c -> (int) DESTROY.invokeExact(c.errno(), address));
        } catch (RuntimeException | Error e) {
            synchronized (events) {
                destroying = false; // it stays open: later events are counted again
            }
            throw e;
        }
        context.unregister(address.address());
    }

    @Override
    public String toString() {
        return "CompletionQueue[" + context.device().name() + "]";
    }
}
