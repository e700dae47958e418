package io.github.panamaverbs.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.verbs.Gid;
import io.github.panamaverbs.verbs.RemoteEndpoint;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** The parts of the samples that need no device: wire format, statistics, flags. */
class SamplesTest {
    @Test
    void wireMessageIsTheCToolsFormat() {
        Gid gid = Gid.of(HexFormat.of().parseHex("00000000000000000000ffff0a4d0001"));
        byte[] msg = Wire.encode(new RemoteEndpoint(0, 0x11, 0xabcdef, gid));
        assertEquals(52, msg.length);
        assertEquals("0000:000011:abcdef:00000000000000000000ffff0a4d0001", new String(msg, 0, 51, StandardCharsets.US_ASCII));
        assertEquals(0, msg[51]);
        RemoteEndpoint back = Wire.decode(msg);
        assertEquals(0x11, back.qpn());
        assertEquals(0xabcdef, back.psn());
        assertEquals(gid, back.gid());
        assertThrows(SampleException.class, () -> Wire.decode("garbage".getBytes(StandardCharsets.US_ASCII)));
    }

    @Test
    void statisticsArePerftests() {
        // Round trips of 10 us x 7, 20, 50, 30: sorted, the top two (30, 50) are dropped, but perftest's
        // t_max is delta[n] of the remaining n = 8, the first dropped one; halved for writes.
        long[] posted = new long[11];
        for (int i = 1; i < posted.length; i++) {
            posted[i] = posted[i - 1] + (i == 3 ? 20_000 : i == 5 ? 50_000 : i == 7 ? 30_000 : 10_000);
        }
        Latency.Stats s = Latency.Stats.of(posted, 2);
        assertEquals(5.0, s.min());
        assertEquals(5.0, s.typical());
        assertEquals(5.625, s.avg());
        assertEquals(15.0, s.max());
        assertEquals(15.0, s.p99());
        assertTrue(s.min() <= s.typical() && s.typical() <= s.p99() && s.p99() <= s.max());
    }

    @Test
    void flagsAndErrors() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertEquals(1, Main.run(new String[] {"rc-pingpong", "-x"}, new PrintStream(out), new PrintStream(err)));
        assertTrue(err.toString().contains("unknown option -x"), err.toString());
        assertEquals(1, Main.run(new String[] {"rc-pingpong", "-m", "1000"}, new PrintStream(out), new PrintStream(err)));
        assertEquals(1, Main.run(new String[] {"write-lat", "-n", "zz"}, new PrintStream(out), new PrintStream(err)));
        assertTrue(err.toString().contains("not a number"), err.toString());
        assertEquals(0, Main.run(new String[] {"srq-pingpong", "--help"}, new PrintStream(out), new PrintStream(err)));
        assertTrue(out.toString().contains("--num-qp"));
        assertEquals(1, Main.run(new String[] {"nope"}, new PrintStream(out), new PrintStream(err)));
        assertEquals(1, Main.run(new String[] {"send-lat", "-c", "XRC"}, new PrintStream(out), new PrintStream(err)));
        assertTrue(err.toString().contains("XRC is not RC, UC or UD"), err.toString());
        assertEquals(1, Main.run(new String[] {"write-bw", "-c", "UD"}, new PrintStream(out), new PrintStream(err)));
        assertTrue(err.toString().contains("UD connection only possible in SEND verb"), err.toString());
        assertEquals(0, Main.run(new String[] {"send-lat", "--help"}, new PrintStream(out), new PrintStream(err)));
        assertTrue(out.toString().contains("ib_send_lat") && out.toString().contains("default 236"), out.toString());
        assertEquals(1, Main.run(new String[] {"asyncwatch", "--count", "zz"}, new PrintStream(out), new PrintStream(err)));
        assertEquals(1, Main.run(new String[] {"asyncwatch", "--timeout", "0"}, new PrintStream(out), new PrintStream(err)));
        assertEquals(0, Main.run(new String[] {"asyncwatch", "--help"}, new PrintStream(out), new PrintStream(err)));
        assertTrue(out.toString().contains("--count") && out.toString().contains("--timeout"), out.toString());
        assertEquals(0x10, Options.parseNumber("0x10"));
        assertEquals(8, Options.parseNumber("010"));
    }
}
