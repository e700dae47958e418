package io.github.panamaverbs.internal;

import java.lang.foreign.MemorySegment;

/** Copies of C structs on the Java heap, readable with the generated accessors. */
public final class Snapshot {
    private Snapshot() {
    }

    /**
     * A heap copy of the first {@code size} bytes of {@code struct}. It is backed by a {@code long[]}
     * so that it has the 8-byte alignment the generated layouts expect.
     */
    public static MemorySegment copy(MemorySegment struct, long size) {
        MemorySegment copy = MemorySegment.ofArray(new long[(int) ((size + 7) / 8)]);
        MemorySegment.copy(struct, 0, copy, 0, size);
        return copy.asSlice(0, size);
    }
}
