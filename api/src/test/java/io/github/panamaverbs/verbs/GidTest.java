package io.github.panamaverbs.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** GID text forms, as inet_ntop (and so ibv_devinfo) writes them, and the endpoint wire form. */
class GidTest {
    private static Gid hex(String h) {
        return Gid.of(HexFormat.of().parseHex(h));
    }

    @Test
    void printsLikeInetNtop() {
        assertEquals("fe80::5054:ff:fe12:3456", hex("fe80000000000000505400fffe123456").toString());
        assertEquals("::ffff:10.77.0.1", hex("00000000000000000000ffff0a4d0001").toString());
        assertEquals("::", Gid.ZERO.toString());
        assertEquals("1:0:2::3", hex("00010000000200000000000000000003").toString());
        assertEquals("fe80:0000:0000:0000:5054:00ff:fe12:3456", hex("fe80000000000000505400fffe123456").toFullString());
    }

    @Test
    void parsesWhatItPrints() {
        for (String h : new String[] {"fe80000000000000505400fffe123456", "00000000000000000000ffff0a4d0001",
                "00000000000000000000000000000000", "20010db8000000000000000000000001"}) {
            Gid g = hex(h);
            assertEquals(g, Gid.parse(g.toString()));
            assertEquals(g, Gid.parse(g.toFullString()));
            assertEquals(g, Gid.parse(h));
        }
        assertThrows(IllegalArgumentException.class, () -> Gid.parse("not-a-gid"));
    }

    @Test
    void ipv4OfMappedGids() {
        assertEquals("10.77.0.1", hex("00000000000000000000ffff0a4d0001").ipv4().orElseThrow().getHostAddress());
        assertFalse(hex("fe80000000000000505400fffe123456").ipv4().isPresent());
        assertTrue(Gid.ZERO.isZero());
    }

    @Test
    void endpointRoundTrip() {
        RemoteEndpoint e = new RemoteEndpoint(0x12, 0xabcdef, 0x123456, hex("fe80000000000000505400fffe123456"));
        assertEquals(e, RemoteEndpoint.fromBytes(e.toBytes()));
        assertThrows(IllegalArgumentException.class, () -> new RemoteEndpoint(0, 1 << 24, 0, null));
    }
}
