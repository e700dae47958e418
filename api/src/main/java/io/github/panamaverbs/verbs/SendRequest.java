package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.github.panamaverbs.bindings.ibv_send_wr;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * A send work request ({@code struct ibv_send_wr} with its {@code ibv_sge} list), built once off-heap
 * and changed in place: posting it again costs no allocation. Setters write straight into the C
 * struct and return {@code this}.
 *
 * <pre>{@code
 * SendRequest write = new SendRequest(1)
 *         .opcode(SendOpcode.RDMA_WRITE).signaled(true)
 *         .sge(mr, 0, 64)
 *         .rdma(remoteAddress, remoteKey);
 * qp.postSend(write);      // again and again
 * }</pre>
 *
 * <p>Every scatter/gather entry is checked against its {@link MemoryRegion} when set (the range) and
 * when posted (the region and its memory still alive), so a bad entry never reaches the device.
 * Requests can be chained with {@link #next(WorkRequest) next(SendRequest)} and posted in one call.
 *
 * <p>Not thread-safe: one thread at a time. Once {@link QueuePair#postSend(SendRequest)} returns,
 * the request may be changed and posted again; the memory its entries name belongs to the device
 * until the completion is polled (see <a href="package-summary.html#buffers">when a posted buffer
 * may be reused</a>).
 */
public final class SendRequest extends WorkRequest<SendRequest> {
    static final long WR_SIZE = ibv_send_wr.sizeof();
    private static final long OPCODE = ibv_send_wr.opcode$offset();
    /** The opcode written at {@link #OPCODE}, kept here too so that the post's checks read no native memory (0: RDMA_WRITE, as the zeroed struct). */
    private int opcodeValue;
    private static final long SEND_FLAGS = ibv_send_wr.send_flags$offset();
    private static final long IMM_DATA = ibv_send_wr.imm_data$offset();
    private static final long WR = ibv_send_wr.wr$offset();
    private static final long RDMA_ADDR = WR + ibv_send_wr.wr.rdma$offset() + ibv_send_wr.wr.rdma.remote_addr$offset();
    private static final long RDMA_RKEY = WR + ibv_send_wr.wr.rdma$offset() + ibv_send_wr.wr.rdma.rkey$offset();
    private static final long ATOMIC_ADDR = WR + ibv_send_wr.wr.atomic$offset() + ibv_send_wr.wr.atomic.remote_addr$offset();
    private static final long ATOMIC_COMPARE_ADD = WR + ibv_send_wr.wr.atomic$offset() + ibv_send_wr.wr.atomic.compare_add$offset();
    private static final long ATOMIC_SWAP = WR + ibv_send_wr.wr.atomic$offset() + ibv_send_wr.wr.atomic.swap$offset();
    private static final long ATOMIC_RKEY = WR + ibv_send_wr.wr.atomic$offset() + ibv_send_wr.wr.atomic.rkey$offset();
    private static final long UD_AH = WR + ibv_send_wr.wr.ud$offset() + ibv_send_wr.wr.ud.ah$offset();
    private static final long UD_QPN = WR + ibv_send_wr.wr.ud$offset() + ibv_send_wr.wr.ud.remote_qpn$offset();
    private static final long UD_QKEY = WR + ibv_send_wr.wr.ud$offset() + ibv_send_wr.wr.ud.remote_qkey$offset();
    private static final long BIND_MW = ibv_send_wr.bind_mw$offset();
    private static final long BIND_MW_MW = BIND_MW + ibv_send_wr.bind_mw.mw$offset();
    private static final long BIND_MW_RKEY = BIND_MW + ibv_send_wr.bind_mw.rkey$offset();
    private static final long BIND_MW_INFO = BIND_MW + ibv_send_wr.bind_mw.bind_info$offset();

    /**
     * The address handle of {@code wr.ud}, or null when the union holds something else: {@code wr.ud},
     * {@code wr.rdma} and {@code wr.atomic} share memory, so setting one clears the others here.
     */
    private AddressHandle ah;
    /** The window and region of {@link #bindMemoryWindow}; checked when a BIND_MW request is posted. */
    private MemoryWindow window;
    private MemoryRegion windowRegion;

    /**
     * A request with room for {@code maxSge} scatter/gather entries, in memory the GC frees.
     *
     * @param maxSge the room for scatter/gather entries, 1 to 65536
     * @throws IllegalArgumentException if {@code maxSge} is out of range
     */
    public SendRequest(int maxSge) {
        super(maxSge, null, WR_SIZE, ibv_send_wr.wr_id$offset(), ibv_send_wr.next$offset(), ibv_send_wr.sg_list$offset(),
                ibv_send_wr.num_sge$offset());
    }

    /**
     * A request with room for {@code maxSge} scatter/gather entries, allocated in {@code arena}.
     * Once the arena is closed, posting the request throws {@link IllegalStateException}.
     *
     * @param maxSge the room for scatter/gather entries, 1 to 65536
     * @param arena  where the request's memory is allocated
     * @throws IllegalArgumentException if {@code maxSge} is out of range
     * @throws IllegalStateException    if {@code arena} is closed
     */
    public SendRequest(int maxSge, Arena arena) {
        super(maxSge, Objects.requireNonNull(arena, "arena"), WR_SIZE, ibv_send_wr.wr_id$offset(), ibv_send_wr.next$offset(),
                ibv_send_wr.sg_list$offset(), ibv_send_wr.num_sge$offset());
    }

    /**
     * {@code opcode}. {@link SendOpcode#BIND_MW} is set by {@link #bindMemoryWindow} with the window it
     * binds; {@link SendOpcode#TSO} and {@link SendOpcode#DRIVER1} need parts of the request that this
     * class does not build yet. All three are refused here.
     *
     * @param opcode the operation
     * @return this request
     * @throws UnsupportedOperationException for {@code BIND_MW}, {@code TSO} and {@code DRIVER1}
     */
    public SendRequest opcode(SendOpcode opcode) {
        Objects.requireNonNull(opcode, "opcode");
        if (opcode == SendOpcode.BIND_MW) {
            throw new UnsupportedOperationException("BIND_MW is not supported by opcode(): a bind needs its window "
                    + "and region, set by bindMemoryWindow(window, rkey, region, offset, length, access)");
        }
        if (opcode == SendOpcode.TSO || opcode == SendOpcode.DRIVER1) {
            throw new UnsupportedOperationException(opcode + " is not supported by SendRequest yet: "
                    + "it needs request fields (a memory window bind, a TSO header) that it cannot set");
        }
        putInt(OPCODE, opcode.value);
        opcodeValue = opcode.value;
        return this;
    }

    /** {@return {@code opcode}: the operation} */
    public SendOpcode opcode() {
        return SendOpcode.of(getInt(OPCODE));
    }

    /**
     * {@code send_flags}, all at once.
     *
     * @param flags the flags to set; the others are cleared
     * @return this request
     */
    public SendRequest flags(Set<SendFlag> flags) {
        putInt(SEND_FLAGS, SendFlag.mask(Objects.requireNonNull(flags, "flags")));
        return this;
    }

    /** {@return {@code send_flags}: the flags set} */
    public Set<SendFlag> flags() {
        return SendFlag.of(getInt(SEND_FLAGS));
    }

    private SendRequest flag(SendFlag flag, boolean on) {
        int f = getInt(SEND_FLAGS);
        putInt(SEND_FLAGS, on ? f | flag.value : f & ~flag.value);
        return this;
    }

    /**
     * {@code IBV_SEND_SIGNALED}: produce a completion. Without it (and without
     * {@link QpInitAttributes#signalAll(boolean)}) only a failed request completes.
     *
     * @param on whether to set the flag
     * @return this request
     */
    public SendRequest signaled(boolean on) {
        return flag(SendFlag.SIGNALED, on);
    }

    /**
     * {@code IBV_SEND_SOLICITED}: wake a receiver waiting for solicited events.
     *
     * @param on whether to set the flag
     * @return this request
     */
    public SendRequest solicited(boolean on) {
        return flag(SendFlag.SOLICITED, on);
    }

    /**
     * {@code IBV_SEND_FENCE}: wait for earlier reads and atomics first.
     *
     * @param on whether to set the flag
     * @return this request
     */
    public SendRequest fence(boolean on) {
        return flag(SendFlag.FENCE, on);
    }

    /**
     * {@code IBV_SEND_INLINE}: copy the data into the request at post time (up to the QP's
     * {@code max_inline_data}); the buffer may then be reused as soon as the post returns.
     *
     * @param on whether to set the flag
     * @return this request
     */
    public SendRequest inline(boolean on) {
        return flag(SendFlag.INLINE, on);
    }

    /**
     * Sends {@code data} inline: it is copied into the work request when posted, needs no memory
     * region, and may be reused as soon as {@code postSend} returns. Sets {@code IBV_SEND_INLINE}.
     * It replaces the scatter/gather entries set before.
     *
     * @param data the bytes to send, at most the queue pair's {@code max_inline_data}
     * @return this request
     * @throws IllegalArgumentException if {@code data} is a heap segment, or longer than 2<sup>31</sup> - 1 bytes
     */
    public SendRequest inlineData(MemorySegment data) {
        Objects.requireNonNull(data, "data");
        try {
            sgl.inline(data);
        } catch (IllegalStateException e) {
            throw freed(e);
        }
        return inline(true);
    }

    /**
     * {@code wr.rdma}: the remote address and key of an RDMA write or read.
     *
     * @param remoteAddress the address in the peer's memory region ({@link MemoryRegion#address()} plus an offset)
     * @param rkey          the peer's region's {@link MemoryRegion#rkey()}
     * @return this request
     */
    public SendRequest rdma(long remoteAddress, int rkey) {
        ah = null;
        putLong(RDMA_ADDR, remoteAddress);
        putInt(RDMA_RKEY, rkey);
        return this;
    }

    /**
     * {@code wr.atomic}: the remote 8-byte word and operands of an atomic. For fetch-and-add,
     * {@code compareAdd} is the value added and {@code swap} is ignored; for compare-and-swap,
     * {@code swap} is stored if the word equals {@code compareAdd}. The old value lands in the SGE.
     *
     * @param remoteAddress the address of the remote word, 8-byte aligned
     * @param rkey          the peer's region's {@link MemoryRegion#rkey()}
     * @param compareAdd    the value compared (compare-and-swap) or added (fetch-and-add)
     * @param swap          the value stored by compare-and-swap
     * @return this request
     * @throws IllegalArgumentException if {@code remoteAddress} is not 8-byte aligned
     */
    public SendRequest atomic(long remoteAddress, int rkey, long compareAdd, long swap) {
        if ((remoteAddress & 7) != 0) {
            throw new IllegalArgumentException("atomics need an 8-byte aligned remote address, not 0x"
                    + Long.toHexString(remoteAddress));
        }
        ah = null;
        putLong(ATOMIC_ADDR, remoteAddress);
        putLong(ATOMIC_COMPARE_ADD, compareAdd);
        putLong(ATOMIC_SWAP, swap);
        putInt(ATOMIC_RKEY, rkey);
        return this;
    }

    /**
     * {@code imm_data}, given in host order ({@code htonl} is done here): for
     * {@code SEND_WITH_IMM} and {@code RDMA_WRITE_WITH_IMM}.
     *
     * @param value the immediate data
     * @return this request
     */
    public SendRequest immediate(int value) {
        putInt(IMM_DATA, Integer.reverseBytes(value));
        return this;
    }

    /**
     * {@code invalidate_rkey}: the key that {@link SendOpcode#SEND_WITH_INV} invalidates at the peer
     * and {@link SendOpcode#LOCAL_INV} locally. It shares memory with {@code imm_data} and is not
     * byte-swapped.
     *
     * @param rkey the key to invalidate
     * @return this request
     */
    public SendRequest invalidateRkey(int rkey) {
        putInt(IMM_DATA, rkey);
        return this;
    }

    /**
     * {@code wr.ud}: the destination of a UD send; needed for every send on a UD queue pair. The
     * address handle must stay open while the request is posted.
     *
     * @param destination the address handle of the destination
     * @param remoteQpn   the destination queue pair's number
     * @param remoteQkey  the destination queue pair's Q_Key
     * @return this request
     */
    public SendRequest datagram(AddressHandle destination, int remoteQpn, int remoteQkey) {
        Objects.requireNonNull(destination, "destination");
        putAddress(UD_AH, destination.ptr());
        putInt(UD_QPN, remoteQpn);
        putInt(UD_QKEY, remoteQkey);
        this.ah = destination;
        return this;
    }

    /**
     * A {@code BIND_MW} request ({@code bind_mw}): binds the type 2 {@code window} to {@code length} bytes
     * at {@code offset} in {@code region} with {@code access}, under the new key {@code rkey} (use
     * {@link MemoryWindow#nextRkey()}: the same index as the window's key, another 8-bit tag). Sets the
     * opcode; the scatter/gather entries are not used. Once the bind completes, the peer may use
     * {@code rkey} through the queue pair that posted it (type 2B: no other), until a
     * {@link SendOpcode#LOCAL_INV} here or the peer's {@link SendOpcode#SEND_WITH_INV} naming {@code rkey}
     * revokes it. The window and region must stay open while the request is posted; both are checked
     * when it is.
     *
     * @param window a type 2 window
     * @param rkey   the key the window has once bound
     * @param region the region it exposes, of the window's protection domain, owning its memory
     * @param offset where the window starts in {@code region}
     * @param length the window's length, positive
     * @param access the rights it grants: a subset of {@code REMOTE_READ}, {@code REMOTE_WRITE},
     *               {@code REMOTE_ATOMIC}
     * @return this request
     * @throws IllegalArgumentException  for a type 1 window (bind it with {@link QueuePair#bindMemoryWindow}),
     *                                   a region of another domain or not owning its memory, a length
     *                                   that is not positive or a right a window does not grant
     * @throws IndexOutOfBoundsException if the range is not inside {@code region}
     * @throws IllegalStateException     if the window or the region is closed
     */
    public SendRequest bindMemoryWindow(MemoryWindow window, int rkey, MemoryRegion region, long offset, long length,
                                        Set<AccessFlag> access) {
        int mask = Objects.requireNonNull(window, "window").checkBind(MemoryWindow.Type.TYPE_2, region, offset, length, access);
        MemorySegment mw = window.handle();
        putAddress(BIND_MW_MW, mw);
        putInt(BIND_MW_RKEY, rkey);
        MemoryWindow.writeBindInfo(segment.asSlice(BIND_MW_INFO, io.github.panamaverbs.bindings.ibv_mw_bind_info.sizeof()),
                region, offset, length, mask);
        putInt(OPCODE, SendOpcode.BIND_MW.value);
        opcodeValue = SendOpcode.BIND_MW.value;
        this.window = window;
        this.windowRegion = region;
        return this;
    }

    /** The address handle set by {@link #datagram}, or null. */
    AddressHandle addressHandle() {
        return ah;
    }

    /** On a UD queue pair every request needs a live address handle: C would follow a wild pointer. */
    @Override
    boolean checkOwn(int index, QpType type) {
        int opcode = opcodeValue;
        if (opcode == SendOpcode.BIND_MW.value) {
            if (window == null) {
                throw new IllegalStateException("work request #" + index + " is a BIND_MW with no window: "
                        + "set it with bindMemoryWindow(...)");
            }
            if (!window.isOpen()) {
                throw new IllegalStateException("work request #" + index + " binds " + window + ", which is closed");
            }
            windowRegion.checkMemory();
        }
        if (type == QpType.UD) {
            if (ah == null) {
                throw new IllegalStateException("work request #" + index + " is posted on a UD queue pair "
                        + "but has no destination: call datagram(addressHandle, qpn, qkey) last");
            }
            if (!ah.isOpen()) {
                throw new IllegalStateException("work request #" + index + " names " + ah + ", which is closed");
            }
        }
        return opcode == SendOpcode.BIND_MW.value || opcode == SendOpcode.LOCAL_INV.value;
    }

    /**
     * Records what the chain's binds and local invalidations do to this context's type 2 windows,
     * in chain order, before it is posted on {@code qp}; refuses (and undoes what it recorded) a bind
     * of a window that is bound, or an invalidation of a window that is not bound under that key or
     * is bound through another queue pair. Returns the changes, each at its request's index.
     */
    List<Map.Entry<Integer, MemoryWindow.Change>> recordWindowChanges(QueuePair qp) {
        List<Map.Entry<Integer, MemoryWindow.Change>> changes = new ArrayList<>();
        int i = 0;
        try {
            for (SendRequest r = this; r != null; r = r.next(), i++) {
                int opcode = r.segment.get(JAVA_INT, OPCODE);
                MemoryWindow.Change c = null;
                if (opcode == SendOpcode.BIND_MW.value) {
                    c = r.window.bindPosted(qp, r.segment.get(JAVA_INT, BIND_MW_RKEY));
                } else if (opcode == SendOpcode.LOCAL_INV.value) {
                    c = MemoryWindow.invalidatePosted(qp, r.segment.get(JAVA_INT, IMM_DATA));
                }
                if (c != null) {
                    changes.add(Map.entry(i, c));
                }
            }
        } catch (RuntimeException e) {
            undoFrom(changes, 0);
            throw e;
        }
        return changes;
    }

    /** Completes the changes of the requests before index {@code end} (those posted). */
    static void postedBefore(List<Map.Entry<Integer, MemoryWindow.Change>> changes, int end) {
        for (Map.Entry<Integer, MemoryWindow.Change> c : changes) {
            if (c.getKey() < end) {
                c.getValue().posted();
            }
        }
    }

    /** Undoes the changes of the requests from index {@code first} on (those not posted), last first. */
    static void undoFrom(List<Map.Entry<Integer, MemoryWindow.Change>> changes, int first) {
        for (int k = changes.size() - 1; k >= 0; k--) {
            if (changes.get(k).getKey() >= first) {
                changes.get(k).getValue().undo();
            }
        }
    }

    @Override
    public String toString() {
        return isAlive() ? "SendRequest[wr_id=" + id() + ", " + opcode() + ", sges=" + sgeCount() + "]" : "SendRequest[freed]";
    }
}
