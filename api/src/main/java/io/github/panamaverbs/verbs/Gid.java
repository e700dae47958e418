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
 * an IPv6 address, or an IPv4 address mapped into IPv6 ({@code ::ffff:a.b.c.d}). Immutable; equal
 * when the bytes are.
 */
public final class Gid {
    /** The all-zero GID: an empty table entry. */
    public static final Gid ZERO = new Gid(new byte[16]);

    private final byte[] raw;

    private Gid(byte[] raw) {
        this.raw = raw;
    }

    /**
     * A GID from its 16 bytes in network order.
     *
     * @param raw the 16 bytes (copied)
     * @return the GID
     * @throws IllegalArgumentException if {@code raw} is not 16 bytes long
     */
    public static Gid of(byte[] raw) {
        if (raw.length != 16) {
            throw new IllegalArgumentException("a GID has 16 bytes, not " + raw.length);
        }
        return new Gid(raw.clone());
    }

    /**
     * Parses an IPv6 text form ({@link #toString()}, {@link #toFullString()}) or 32 hex digits. No
     * name is ever looked up.
     *
     * @param text the text
     * @return the GID
     * @throws IllegalArgumentException if {@code text} is neither form
     */
    public static Gid parse(String text) {
        if (text.length() == 32 && text.indexOf(':') < 0) {
            return new Gid(HexFormat.of().parseHex(text));
        }
        if (!text.contains(":")) {
            throw new IllegalArgumentException("not a GID: " + text);
        }
        try {
            // A literal never triggers a name lookup.
            byte[] a = InetAddress.getByName("[" + text + "]").getAddress();
            return new Gid(a.length == 16 ? a : ipv4Mapped(a)); // Java turns ::ffff:a.b.c.d into IPv4
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("not a GID: " + text, e);
        }
    }

    private static byte[] ipv4Mapped(byte[] v4) {
        byte[] g = new byte[16];
        g[10] = (byte) 0xff;
        g[11] = (byte) 0xff;
        System.arraycopy(v4, 0, g, 12, 4);
        return g;
    }

    static Gid read(MemorySegment segment, long offset) {
        return new Gid(segment.asSlice(offset, 16).toArray(ValueLayout.JAVA_BYTE));
    }

    void write(MemorySegment segment, long offset) {
        MemorySegment.copy(MemorySegment.ofArray(raw), 0, segment, offset, 16);
    }

    /** {@return the 16 bytes, in network order (a copy)} */
    public byte[] bytes() {
        return raw.clone();
    }

    /** {@return the subnet prefix: the first 8 bytes, as a number} */
    public long subnetPrefix() {
        return java.nio.ByteBuffer.wrap(raw).getLong(0);
    }

    /** {@return the interface ID: the last 8 bytes, as a number} */
    public long interfaceId() {
        return java.nio.ByteBuffer.wrap(raw).getLong(8);
    }

    /** {@return whether every byte is zero (an unused table entry)} */
    public boolean isZero() {
        return Arrays.equals(raw, ZERO.raw);
    }

    /** {@return the IPv4 address of an IPv4-mapped GID ({@code ::ffff:a.b.c.d}); empty for any other} */
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

    /**
     * {@return the GID as {@code ibv_devinfo -v} prints it: the IPv6 text form of {@code inet_ntop}
     * ({@code fe80::5054:ff:fe12:3456}, {@code ::ffff:10.0.0.1})}
     */
    @Override
    public String toString() {
        int[] w = new int[8];
        for (int i = 0; i < 8; i++) {
            w[i] = ((raw[2 * i] & 0xff) << 8) | (raw[2 * i + 1] & 0xff);
        }
        // The longest run of two or more zero words becomes "::" (the first, on a tie).
        int bestStart = -1;
        int bestLen = 0;
        for (int i = 0; i < 8;) {
            if (w[i] != 0) {
                i++;
                continue;
            }
            int j = i;
            while (j < 8 && w[j] == 0) {
                j++;
            }
            if (j - i > bestLen) {
                bestStart = i;
                bestLen = j - i;
            }
            i = j;
        }
        if (bestLen < 2) {
            bestStart = -1;
        }
        StringBuilder sb = new StringBuilder(39);
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                sb.append(i == 0 ? "::" : ":");
                i += bestLen - 1;
                continue;
            }
            // An IPv4-mapped (::ffff:a.b.c.d) or IPv4-compatible address ends in dotted decimal, as inet_ntop writes it.
            if (i == 6 && bestStart == 0 && (bestLen == 6 || (bestLen == 7 && w[7] != 1) || (bestLen == 5 && w[5] == 0xffff))) {
                sb.append(raw[12] & 0xff).append('.').append(raw[13] & 0xff).append('.')
                  .append(raw[14] & 0xff).append('.').append(raw[15] & 0xff);
                break;
            }
            sb.append(Integer.toHexString(w[i]));
            if (i < 7) {
                sb.append(':');
            }
        }
        return sb.toString();
    }

    /** {@return all 32 hex digits in four-digit groups: {@code fe80:0000:0000:0000:5054:00ff:fe12:3456}} */
    public String toFullString() {
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
