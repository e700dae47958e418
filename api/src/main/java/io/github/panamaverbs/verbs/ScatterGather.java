package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.github.panamaverbs.bindings.ibv_sge;
import java.lang.foreign.MemorySegment;

/**
 * The {@code struct ibv_sge} list of one work request, shared by {@link SendRequest} and
 * {@link ReceiveRequest}: the one place where scatter/gather entries are checked against their
 * memory regions (the range when set, the region and its memory still alive when posted).
 */
final class ScatterGather {
    static final long SGE_SIZE = ibv_sge.sizeof();
    private static final long ADDR = ibv_sge.addr$offset();
    private static final long LENGTH = ibv_sge.length$offset();
    private static final long LKEY = ibv_sge.lkey$offset();

    private final MemorySegment wr;
    private final long numSgeOffset;
    private final MemorySegment sges;
    /** The region of each entry; null for inline data. */
    private final MemoryRegion[] regions;
    /**
     * The memory each entry points into: the region's segment when the entry was set (a
     * reregistration may move the region since), or the inline data.
     */
    private final MemorySegment[] memory;
    /** The most bytes each entry may span from its start, in its region (for {@link #length}). */
    private final long[] room;
    private int count;

    /**
     * @param wr           the work request, whose {@code sg_list} is pointed at {@code sges}
     * @param sgListOffset offset of {@code sg_list} in the request
     * @param numSgeOffset offset of {@code num_sge} in the request
     * @param sges         room for the entries
     */
    ScatterGather(MemorySegment wr, long sgListOffset, long numSgeOffset, MemorySegment sges) {
        this.wr = wr;
        this.numSgeOffset = numSgeOffset;
        this.sges = sges;
        int capacity = (int) (sges.byteSize() / SGE_SIZE);
        this.regions = new MemoryRegion[capacity];
        this.memory = new MemorySegment[capacity];
        this.room = new long[capacity];
        wr.set(ADDRESS, sgListOffset, sges);
    }

    int count() {
        return count;
    }

    /** The native field first: if the request's memory is freed, it throws and nothing changed. */
    private void setCount(int n) {
        wr.set(JAVA_INT, numSgeOffset, n);
        count = n;
    }

    void add(MemoryRegion region, long offset, int length) {
        if (count == regions.length) {
            throw new IllegalStateException("this request has room for " + regions.length + " scatter/gather entries");
        }
        set(count, region, offset, length);
    }

    /**
     * Sets entry {@code index}, which exists or is the next one (then the count grows). Checks come
     * first: a call that throws leaves the entries as they were.
     */
    void set(int index, MemoryRegion region, long offset, int length) {
        if (index < 0 || index > count || index >= regions.length) {
            throw new IndexOutOfBoundsException("SGE index " + index + " with " + count + " set, room for " + regions.length);
        }
        region.checkRange(offset, Integer.toUnsignedLong(length));
        MemorySegment in = region.memory();
        write(index, region.address() + offset, length, region.lkey());
        regions[index] = region;
        memory[index] = in;
        room[index] = in.byteSize() - offset;
        if (index == count) {
            setCount(count + 1);
        }
    }

    /** Makes {@code [offset, offset + length)} of {@code region} the only entry; unchanged if it throws. */
    void single(MemoryRegion region, long offset, int length) {
        set(0, region, offset, length);
        setCount(1);
    }

    /** One entry over {@code data}, which needs no region (the provider copies it at post time). */
    void inline(MemorySegment data) {
        if (!data.isNative()) {
            throw new IllegalArgumentException("inline data must be a native segment");
        }
        if (data.byteSize() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("inline data too long: " + data.byteSize());
        }
        write(0, data.address(), (int) data.byteSize(), 0);
        regions[0] = null;
        memory[0] = data;
        setCount(1);
    }

    /** Changes the length of entry {@code index} (of a region), which keeps its start: checked against the region. */
    void length(int index, int length) {
        if (index < 0 || index >= count) {
            throw new IndexOutOfBoundsException("SGE index " + index + " with " + count + " set");
        }
        if (regions[index] == null) {
            throw new IllegalStateException("SGE " + index + " is inline data: set it again to change its length");
        }
        if (Integer.toUnsignedLong(length) > room[index]) {
            throw new IndexOutOfBoundsException(Integer.toUnsignedString(length) + " bytes from SGE " + index + "'s start reach past "
                    + regions[index] + " (" + room[index] + " bytes left in it)");
        }
        sges.set(JAVA_INT, index * SGE_SIZE + LENGTH, length);
    }

    void clear() {
        setCount(0);
    }

    private void write(int index, long address, int length, int lkey) {
        long at = index * SGE_SIZE;
        sges.set(JAVA_LONG, at + ADDR, address);
        sges.set(JAVA_INT, at + LENGTH, length);
        sges.set(JAVA_INT, at + LKEY, lkey);
    }

    /**
     * Throws if an entry's region was closed or deregistered, or the memory it points into was freed,
     * since it was set. Allocation-free.
     */
    void check(int requestIndex) {
        for (int i = 0; i < count; i++) {
            MemoryRegion region = regions[i];
            if (region != null) {
                region.checkMemory();
                if (!memory[i].scope().isAlive()) {
                    throw new IllegalStateException("SGE " + i + " of work request #" + requestIndex + " points into memory "
                            + "that has been freed (" + region + " was reregistered onto other memory since)");
                }
            } else if (!memory[i].scope().isAlive()) {
                throw new IllegalStateException("the inline data of work request #" + requestIndex + " has been freed");
            }
        }
    }
}
