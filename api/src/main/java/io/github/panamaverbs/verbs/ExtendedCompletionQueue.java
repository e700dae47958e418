package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.github.panamaverbs.bindings.ibv_cq_ex;
import io.github.panamaverbs.bindings.ibv_cq_init_attr_ex;
import io.github.panamaverbs.bindings.verbs_context;
import io.github.panamaverbs.internal.DataPath;
import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Native;
import io.github.panamaverbs.internal.Quirks;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.ref.Reference;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * An extended completion queue ({@code struct ibv_cq_ex}, {@code ibv_create_cq_ex},
 * {@link Context#createCompletionQueue(int, Set, CompletionChannel, int)}): a
 * {@link CompletionQueue} whose completions can also be read in place, one at a time, with the
 * provider's own accessors and no copy, and which reports the fields asked for at creation:
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
public final class ExtendedCompletionQueue extends CompletionQueue {
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

    /** An extended queue ({@code ibv_create_cq_ex}) reporting {@code fields}. */
    ExtendedCompletionQueue(Context context, int entries, Set<WcField> fields, CompletionChannel channel, int compVector) {
        super(context, createEx(context, entries, fields, channel, compVector), channel);
        this.fields = fields.isEmpty() ? Set.of() : Set.copyOf(EnumSet.copyOf(fields));
        this.exFns = new MemorySegment[3 + Read.values().length];
        this.pollAttr = Arena.ofAuto().allocate(8, 8);
        try {
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


    /** {@return the fields asked for at creation} */
    public Set<WcField> fields() {
        return fields == null ? Set.of() : fields;
    }

    /**
     * Refuses a call that takes the provider's queue lock on the thread whose {@link #startPoll()}
     * holds it: the call would wait for that thread, itself, for ever.
     */
    @Override
    void requireNoCursorOnThisThread(String call) {
        if (cursorOwner == Thread.currentThread()) {
            throw new IllegalStateException(call + "() of " + this + " between startPoll() and endPoll() on the same "
                    + "thread: the provider holds the queue's lock until endPoll(), and the call would wait for it for ever; "
                    + "call endPoll() first");
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
        MemorySegment fn = exFns[3 + r.ordinal()];
        currentCq();
        if (fn.address() == 0) {
            throw new IllegalStateException(r.field + " was not asked for when " + this + " was created");
        }
        return fn;
    }

    /** The queue, once a completion is current; else why not. */
    private MemorySegment currentCq() {
        if (!current) {
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
     * {@code ibv_poll_cq} on the extended queue (libibverbs' own emulation over start/next/end_poll
     * where the provider has no other); as {@link CompletionQueue#poll(WorkCompletions)}.
     *
     * @throws IllegalStateException also between {@link #startPoll()} and {@link #endPoll()} on this thread
     */
    @Override
    public int poll(WorkCompletions batch) {
        Objects.requireNonNull(batch, "batch");
        requireNoCursorOnThisThread("poll");
        int n;
        try {
            n = (int) DataPath.POLL_CQ_EX.invokeExact(pollFn(), ptr(), batch.capacity, batch.callSegment);
        } catch (IllegalStateException e) {
            throw pollRefused(e, batch);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        } finally {
            Reference.reachabilityFence(batch);
        }
        return polled(batch, n);
    }

    @Override
    int pollConfined(long address, WorkCompletions batch) {
        long wc = batch.callAddress;
        if (wc == 0) {
            return poll(batch);
        }
        requireNoCursorOnThisThread("poll");
        int n;
        try {
            n = (int) DataPath.POLL_CQ_EX_RAW.invokeExact(pollFn(), address, batch.capacity, wc);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        } finally {
            Reference.reachabilityFence(batch);
        }
        return polled(batch, n);
    }
}
