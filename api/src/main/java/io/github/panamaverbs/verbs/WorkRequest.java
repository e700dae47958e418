package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.github.panamaverbs.internal.Errno;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * What {@link SendRequest} and {@link ReceiveRequest} share: the off-heap request ({@code ibv_send_wr}
 * or {@code ibv_recv_wr}), its {@code bad_wr} slot and SGE array in one allocation, the id, the
 * scatter/gather entries, the chain ({@code next}) and how a failed post names the request.
 *
 * @param <R> the request type, returned by the setters
 */
abstract sealed class WorkRequest<R extends WorkRequest<R>> permits SendRequest, ReceiveRequest {
    /** Longest chain accepted: a guard against cycles. */
    static final int MAX_CHAIN = 1 << 16;
    /** Most scatter/gather entries one request may have room for (devices allow a few dozen). */
    static final int MAX_SGE = 1 << 16;

    private final long wrIdOffset;
    private final long nextOffset;
    /** The work request; the bad_wr slot and the SGE array follow it in the same allocation. */
    final MemorySegment segment;
    final MemorySegment badWr;
    /**
     * What the post passes to C for {@link #segment} and {@link #badWr}: for memory the GC frees, the
     * plain addresses, so that a post acquires no arena for them (the request is kept reachable
     * across the call instead, {@link java.lang.ref.Reference#reachabilityFence}); for a caller's
     * arena, its segments, so that FFM refuses a closed one.
     */
    final MemorySegment callWr;
    final MemorySegment callBadWr;
    /** For memory the GC frees, the addresses of {@link #callWr} and {@link #callBadWr} (a confined view's raw post); else 0. */
    final long callWrAddress;
    final long callBadWrAddress;
    final ScatterGather sgl;
    R next;

    /** {@code arena} null: memory the GC frees. */
    WorkRequest(int maxSge, Arena arena, long wrSize, long wrIdOffset, long nextOffset, long sgListOffset,
                long numSgeOffset) {
        if (maxSge < 1 || maxSge > MAX_SGE) {
            throw new IllegalArgumentException("maxSge must be in [1, " + MAX_SGE + "], not " + maxSge);
        }
        this.wrIdOffset = wrIdOffset;
        this.nextOffset = nextOffset;
        boolean gc = arena == null;
        this.segment = allocate(gc ? Arena.ofAuto() : arena, wrSize + 8 + ScatterGather.SGE_SIZE * maxSge);
        this.badWr = segment.asSlice(wrSize, 8);
        this.callWr = gc ? MemorySegment.ofAddress(segment.address()) : segment;
        this.callBadWr = gc ? MemorySegment.ofAddress(badWr.address()) : badWr;
        this.callWrAddress = gc ? segment.address() : 0;
        this.callBadWrAddress = gc ? badWr.address() : 0;
        this.sgl = new ScatterGather(segment, sgListOffset, numSgeOffset,
                segment.asSlice(wrSize + 8, ScatterGather.SGE_SIZE * maxSge));
    }

    /** {@code arena.allocate}, naming a closed arena (FFM's own message, "Already closed", names nothing). */
    private MemorySegment allocate(Arena arena, long size) {
        try {
            return arena.allocate(size, 8);
        } catch (IllegalStateException e) {
            throw new IllegalStateException("cannot allocate a " + getClass().getSimpleName() + " in a closed arena", e);
        }
    }

    @SuppressWarnings("unchecked")
    private R self() {
        return (R) this;
    }

    /**
     * {@code wr_id}: the caller's id for this request, returned in its completion
     * ({@link WorkCompletions#wrId(int)}).
     *
     * @param wrId any value
     * @return this request
     */
    public R id(long wrId) {
        putLong(wrIdOffset, wrId);
        return self();
    }

    /** {@return {@code wr_id}: the id returned in this request's completion} */
    public long id() {
        return getLong(wrIdOffset);
    }

    /**
     * Sets a single scatter/gather entry: {@code length} bytes at {@code offset} in {@code region},
     * in place of the entries set before. The range is checked against the region now; the region
     * and its memory are checked again when the request is posted. If it throws, the request keeps
     * the entries it had.
     *
     * @param region the registered memory
     * @param offset where the bytes start in {@code region}
     * @param length the number of bytes (unsigned)
     * @return this request
     * @throws IndexOutOfBoundsException if the range is not inside {@code region}
     * @throws IllegalStateException     if {@code region} is closed or its memory freed
     */
    public R sge(MemoryRegion region, long offset, int length) {
        Objects.requireNonNull(region, "region");
        try {
            sgl.single(region, offset, length);
        } catch (IllegalStateException e) {
            throw freed(e);
        }
        return self();
    }

    /**
     * Appends a scatter/gather entry: {@code length} bytes at {@code offset} in {@code region}.
     *
     * @param region the registered memory
     * @param offset where the bytes start in {@code region}
     * @param length the number of bytes (unsigned)
     * @return this request
     * @throws IndexOutOfBoundsException if the range is not inside {@code region}
     * @throws IllegalStateException     if the request has no room for another entry, or
     *                                   {@code region} is closed or its memory freed
     */
    public R addSge(MemoryRegion region, long offset, int length) {
        Objects.requireNonNull(region, "region");
        try {
            sgl.add(region, offset, length);
        } catch (IllegalStateException e) {
            throw freed(e);
        }
        return self();
    }

    /**
     * Replaces scatter/gather entry {@code index}, which must exist, or appends it if it is the next
     * one ({@code index == sgeCount()}). If it throws, the request keeps the entries it had.
     *
     * @param index  the entry, from 0, at most {@link #sgeCount()}
     * @param region the registered memory
     * @param offset where the bytes start in {@code region}
     * @param length the number of bytes (unsigned)
     * @return this request
     * @throws IndexOutOfBoundsException if {@code index} is out of range, or the range is not inside {@code region}
     * @throws IllegalStateException     if {@code region} is closed or its memory freed
     */
    public R setSge(int index, MemoryRegion region, long offset, int length) {
        Objects.requireNonNull(region, "region");
        try {
            sgl.set(index, region, offset, length);
        } catch (IllegalStateException e) {
            throw freed(e);
        }
        return self();
    }

    /**
     * Changes the length of scatter/gather entry {@code index}, which keeps its region and start: the
     * one change a prepared request needs to carry messages of other sizes from the same place (the
     * new range is checked against the region, as when the entry was set; the region and its memory
     * when the request is posted).
     *
     * @param index  the entry, from 0, less than {@link #sgeCount()}
     * @param length the number of bytes (unsigned)
     * @return this request
     * @throws IndexOutOfBoundsException if {@code index} is out of range, or the range is not inside the entry's region
     * @throws IllegalStateException     if the entry is inline data, or the request's memory was freed
     */
    public R sgeLength(int index, int length) {
        try {
            sgl.length(index, length);
        } catch (IllegalStateException e) {
            throw freed(e);
        }
        return self();
    }

    /**
     * Removes all scatter/gather entries (a zero-length message).
     *
     * @return this request
     */
    public R clearSges() {
        try {
            sgl.clear();
        } catch (IllegalStateException e) {
            throw freed(e);
        }
        return self();
    }

    /** {@return the number of scatter/gather entries set} */
    public int sgeCount() {
        try {
            return sgl.count();
        } catch (IllegalStateException e) {
            throw freed(e);
        }
    }

    /**
     * {@code next}: posts {@code request} (and those chained after it) right after this one, in the
     * same call.
     *
     * @param request the next request, or null to end the chain here
     * @return this request
     * @throws IllegalArgumentException if chaining {@code request} would make a cycle
     */
    public R next(R request) {
        for (R r = request; r != null; r = r.next) {
            if (r == this) {
                throw new IllegalArgumentException("chaining " + request + " would make a cycle");
            }
        }
        // The native link first: if this request's memory was freed, it throws and nothing changed.
        putAddress(nextOffset, request == null ? MemorySegment.NULL : request.segment);
        this.next = request;
        return self();
    }

    /**
     * What a call on this request throws when FFM refused its memory: "... has been freed", naming
     * the request, instead of FFM's bare "Already closed"; else {@code e} (another segment of the call).
     */
    final IllegalStateException freed(IllegalStateException e) {
        return segment.scope().isAlive() ? e : new IllegalStateException(getClass().getSimpleName()
                + "'s memory has been freed (its arena is closed)", e);
    }

    /** Whether the request's memory is still there (for a toString that never throws). */
    final boolean isAlive() {
        return segment.scope().isAlive();
    }

    final void putInt(long offset, int value) {
        try {
            segment.set(JAVA_INT, offset, value);
        } catch (IllegalStateException e) {
            throw freed(e);
        }
    }

    final void putLong(long offset, long value) {
        try {
            segment.set(JAVA_LONG, offset, value);
        } catch (IllegalStateException e) {
            throw freed(e);
        }
    }

    final void putAddress(long offset, MemorySegment value) {
        try {
            segment.set(ADDRESS, offset, value);
        } catch (IllegalStateException e) {
            throw freed(e);
        }
    }

    final int getInt(long offset) {
        try {
            return segment.get(JAVA_INT, offset);
        } catch (IllegalStateException e) {
            throw freed(e);
        }
    }

    final long getLong(long offset) {
        try {
            return segment.get(JAVA_LONG, offset);
        } catch (IllegalStateException e) {
            throw freed(e);
        }
    }

    /** {@return the next request in the chain, or null} */
    public R next() {
        return next;
    }

    /**
     * Checks every request of the chain right before it is posted: its own memory alive (a chain
     * member may live in another arena), each SGE's region open and its memory alive, and what
     * {@link #checkOwn(int, QpType)} adds. Allocation-free.
     *
     * @param type the type of the queue pair it is posted on; null for a shared receive queue
     * @return whether a request of the chain binds or invalidates a memory window
     */
    final boolean checkChain(QpType type) {
        int n = 0;
        boolean windows = false;
        for (WorkRequest<R> r = this; r != null; r = r.next, n++) {
            if (r.callWrAddress == 0 && !r.segment.scope().isAlive()) { // memory the GC frees is alive while r is
                throw new IllegalStateException("work request #" + n + " of the chain has been freed (its arena is closed)");
            }
            r.sgl.check(n);
            windows |= r.checkOwn(n, type);
        }
        return windows;
    }

    /**
     * Checks of one request type; see {@link #checkChain(QpType)}. Returns whether the request binds or
     * invalidates a memory window (a post of such a chain records what it does to the windows).
     */
    abstract boolean checkOwn(int index, QpType type);

    /** The index in this chain of the request that the last failed post named in bad_wr, or -1; the slot is kept. */
    final int failedIndex() {
        long bad = badWr.get(ADDRESS, 0).address();
        int i = 0;
        for (WorkRequest<R> r = this; r != null && i < MAX_CHAIN; r = r.next, i++) {
            if (r.segment.address() == bad) {
                return i;
            }
        }
        return -1;
    }

    /**
     * The exception for a post of this chain on {@code target} that failed with {@code rc}: which
     * request the provider named in bad_wr (the slot is cleared, so that a stale pointer is never
     * read next time; a provider that fails in its doorbell names none) and why.
     */
    final VerbsException postFailed(String verb, int rc, Resource target, String why) {
        long bad = badWr.get(ADDRESS, 0).address();
        badWr.set(ADDRESS, 0, MemorySegment.NULL);
        int index = -1;
        int i = 0;
        for (WorkRequest<R> r = this; r != null && i < MAX_CHAIN; r = r.next, i++) {
            if (r.segment.address() == bad) {
                index = i;
                break;
            }
        }
        int errno = Math.abs(rc);
        return new VerbsException(verb, errno, (index >= 0 ? "work request #" + index
                + " of the chain and those after it were not posted on "
                : "the provider did not say which work request failed on ") + target + why(errno, why));
    }

    private static String why(int errno, String why) {
        if (why != null) {
            return why;
        }
        return errno == Errno.ENOMEM ? "; the queue is full (more outstanding requests than its depth)" : "";
    }
}
