package io.github.panamaverbs.verbs;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Optional;

/**
 * A 128-bit global identifier ({@code union ibv_gid}): the port's address in the GRH. On RoCE it is
 * an IPv6 address, or an IPv4 address mapped into IPv6 ({@code ::ffff:a.b.c.d}).
 */
public final class Gid {
    /** The all-zero GID: an empty table entry. */
    public static final Gid ZERO = new Gid(new byte[16]);

    private final byte[] raw;

    private Gid(byte[] raw) {
        this.raw = raw;
    }

    /** A GID from its 16 bytes in network order. */
    public static Gid of(byte[] raw) {
        if (raw.length != 16) {
            throw new IllegalArgumentException("a GID has 16 bytes, not " + raw.length);
        }
        return new Gid(raw.clone());
    }

    /** Parses the form {@link #toString()} prints: eight groups of four hex digits, or 32 hex digits. */
    public static Gid parse(String text) {
        String hex = text.replace(":", "");
        if (hex.length() != 32) {
            throw new IllegalArgumentException("not a GID: " + text);
        }
        return new Gid(HexFormat.of().parseHex(hex));
    }

    static Gid read(MemorySegment segment, long offset) {
        return new Gid(segment.asSlice(offset, 16).toArray(ValueLayout.JAVA_BYTE));
    }

    void write(MemorySegment segment, long offset) {
        MemorySegment.copy(MemorySegment.ofArray(raw), 0, segment, offset, 16);
    }

    /** The 16 bytes, in network order. */
    public byte[] bytes() {
        return raw.clone();
    }

    /** The subnet prefix: the first 8 bytes, as a number. */
    public long subnetPrefix() {
        return java.nio.ByteBuffer.wrap(raw).getLong(0);
    }

    /** The interface ID: the last 8 bytes, as a number. */
    public long interfaceId() {
        return java.nio.ByteBuffer.wrap(raw).getLong(8);
    }

    /** Whether every byte is zero (an unused table entry). */
    public boolean isZero() {
        return Arrays.equals(raw, ZERO.raw);
    }

    /** The IPv4 address of an IPv4-mapped GID ({@code ::ffff:a.b.c.d}); empty for any other. */
    public Optional<Inet4Address> ipv4() {
        for (int i = 0; i < 10; i++) {
            if (raw[i] != 0) {
                return Optional.empty();
            }
        }
        if (raw[10] != (byte) 0xff || raw[11] != (byte) 0xff) {
            return Optional.empty();
        }
        try {
            return Optional.of((Inet4Address) InetAddress.getByAddress(Arrays.copyOfRange(raw, 12, 16)));
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    /** As {@code ibv_devinfo -v} prints it: {@code fe80:0000:0000:0000:5054:00ff:fe12:3456}. */
    @Override
    public String toString() {
        String hex = HexFormat.of().formatHex(raw);
        StringBuilder sb = new StringBuilder(39);
        for (int i = 0; i < 32; i += 4) {
            if (i > 0) {
                sb.append(':');
            }
            sb.append(hex, i, i + 4);
        }
        return sb.toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Gid g && Arrays.equals(raw, g.raw);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(raw);
    }
}
