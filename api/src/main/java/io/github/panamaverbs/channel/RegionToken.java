package io.github.panamaverbs.channel;

import io.github.panamaverbs.verbs.AccessFlag;
import io.github.panamaverbs.verbs.MemoryRegion;
import java.nio.ByteBuffer;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * A range of a registered region that its owner exports to a peer: where it is (address, rkey),
 * how long, and what the peer may do (rights). Sent over a {@link MessageChannel} as
 * {@link #toBytes()} ({@value #BYTES} bytes) and read back with {@link #fromBytes(byte[])}; the peer
 * reaches it through {@link MessageChannel#remote(RegionToken)}, which checks every access against
 * the token in Java before anything is posted.
 *
 * @param address the range's first byte, as the peer's RDMA operations address it
 * @param rkey    the region's remote key
 * @param length  the range's size in bytes
 * @param rights  what the peer may do
 */
public record RegionToken(long address, int rkey, long length, Set<Right> rights) {
    /** The size of {@link #toBytes()}. */
    public static final int BYTES = 24;

    /** What a token lets the peer do. */
    public enum Right {
        /** RDMA READ. */
        READ,
        /** RDMA WRITE. */
        WRITE,
        /** Compare-and-swap and fetch-and-add of aligned 8-byte words. */
        ATOMIC;

        AccessFlag flag() {
            return switch (this) {
                case READ -> AccessFlag.REMOTE_READ;
                case WRITE -> AccessFlag.REMOTE_WRITE;
                case ATOMIC -> AccessFlag.REMOTE_ATOMIC;
            };
        }
    }

    /**
     * The token's fields, checked.
     *
     * @throws IllegalArgumentException if {@code length} is negative or {@code rights} is empty
     */
    public RegionToken {
        Objects.requireNonNull(rights, "rights");
        if (length < 0) {
            throw new IllegalArgumentException("negative length " + length);
        }
        if (rights.isEmpty()) {
            throw new IllegalArgumentException("a token grants at least one right");
        }
        rights = Set.copyOf(EnumSet.copyOf(rights));
    }

    /**
     * Exports {@code length} bytes of {@code region} from {@code offset} with {@code rights}.
     *
     * @param region the registered memory (registered with the remote access that the rights need)
     * @param offset where the range starts in the region
     * @param length the range's size
     * @param rights what the peer may do
     * @return the token
     * @throws IndexOutOfBoundsException if the range is not inside the region
     * @throws IllegalArgumentException  if the region was registered without the access a right needs
     *                                   ({@link AccessFlag#REMOTE_READ}, {@code REMOTE_WRITE},
     *                                   {@code REMOTE_ATOMIC}), or no right is given
     */
    public static RegionToken export(MemoryRegion region, long offset, long length, Right... rights) {
        Objects.requireNonNull(region, "region");
        Objects.checkFromIndexSize(offset, length, region.length());
        EnumSet<Right> set = EnumSet.noneOf(Right.class);
        for (Right r : rights) {
            set.add(Objects.requireNonNull(r, "right"));
            if (!region.access().contains(r.flag())) {
                throw new IllegalArgumentException(region + " was registered without " + r.flag() + ": it cannot be exported for "
                        + r + " (register it with " + r.flag() + ")");
            }
        }
        return new RegionToken(region.address() + offset, region.rkey(), length, set);
    }

    /** {@return the token as {@value #BYTES} bytes: address, length, rkey, rights (big-endian)} */
    public byte[] toBytes() {
        int mask = 0;
        for (Right r : rights) {
            mask |= 1 << r.ordinal();
        }
        return ByteBuffer.allocate(BYTES).putLong(address).putLong(length).putInt(rkey).putInt(mask).array();
    }

    /**
     * Reads a token written by {@link #toBytes()}.
     *
     * @param bytes at least {@value #BYTES} bytes, the token first
     * @return the token
     * @throws IllegalArgumentException if there are fewer bytes, or they hold no valid token
     */
    public static RegionToken fromBytes(byte[] bytes) {
        if (bytes.length < BYTES) {
            throw new IllegalArgumentException("a region token is " + BYTES + " bytes, not " + bytes.length);
        }
        ByteBuffer b = ByteBuffer.wrap(bytes);
        long address = b.getLong();
        long length = b.getLong();
        int rkey = b.getInt();
        int mask = b.getInt();
        if (mask == 0 || (mask & ~0b111) != 0) {
            throw new IllegalArgumentException("not a region token: rights bits 0x" + Integer.toHexString(mask));
        }
        EnumSet<Right> rights = EnumSet.noneOf(Right.class);
        for (Right r : Right.values()) {
            if ((mask & (1 << r.ordinal())) != 0) {
                rights.add(r);
            }
        }
        return new RegionToken(address, rkey, length, rights);
    }
}
