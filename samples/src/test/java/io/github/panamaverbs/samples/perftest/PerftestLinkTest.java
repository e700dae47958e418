package io.github.panamaverbs.samples.perftest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.samples.common.SampleException;
import io.github.panamaverbs.verbs.Gid;
import io.github.panamaverbs.verbs.Mtu;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * PerftestLink without a device: the per-QP message in both of perftest's forms, and the preamble
 * (versions, system data, MTU) against a stand-in that sends and expects exactly the bytes
 * perftest 4.5-0.17's server does (perftest_communication.c: exchange_versions, check_sys_data,
 * check_mtu; the server reads first).
 */
class PerftestLinkTest {
    private static final Gid GID = Gid.of(HexFormat.of().parseHex("00000000000000000000ffff0a4d0001"));

    @Test
    void keyWithGidIsKeyPrintFmtGid() {
        PerftestLink.Key k = new PerftestLink.Key(0, 0x10, 0x11, 0xabcdef, 0x23c, 0x7f66e02fd002L, GID, 0);
        byte[] msg = k.encode(true);
        assertEquals(108, msg.length);
        String text = "0000:0010:000011:abcdef:0000023c:00007f66e02fd002:"
                + "00:00:00:00:00:00:00:00:00:00:ff:ff:0a:4d:00:01:00000000:";
        assertArrayEquals(text.getBytes(StandardCharsets.US_ASCII), Arrays.copyOf(msg, text.length()));
        for (int i = text.length(); i < msg.length; i++) {
            assertEquals(0, msg[i], "NUL padding at " + i);
        }
        assertEquals(k, PerftestLink.Key.parse(msg));
        assertArrayEquals(msg, k.encode());
    }

    @Test
    void keyWithoutGidIsKeyPrintFmt() {
        PerftestLink.Key k = new PerftestLink.Key(0x1a, 1, 0x11, 0xabcdef, 0xffffffff, -2L, Gid.ZERO, 7);
        byte[] msg = k.encode(false);
        assertEquals(59, msg.length);
        assertEquals("001a:0001:000011:abcdef:ffffffff:fffffffffffffffe:00000007",
                new String(msg, 0, 58, StandardCharsets.US_ASCII));
        assertEquals(0, msg[58]);
        assertEquals(k, PerftestLink.Key.parse(msg));
        assertThrows(SampleException.class, () -> PerftestLink.Key.parse(new byte[59]));
    }

    @Test
    void versionsReadAsAtofDoes() {
        assertEquals(6.06, PerftestLink.leadingNumber("6.06"), 1e-9);
        assertEquals(5.7, PerftestLink.leadingNumber("5.70-rc1"), 1e-9);
        assertEquals(0, PerftestLink.leadingNumber("done"), 1e-9);
        assertEquals(0, PerftestLink.leadingNumber(""), 1e-9);
    }

    /** A perftest server's side of the preamble: returns the bytes the client sent. */
    private static byte[][] perftestServer(ServerSocket ss, String version, int mtuEnum) throws IOException {
        try (Socket s = ss.accept()) {
            DataInputStream in = new DataInputStream(s.getInputStream());
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            byte[] v = new byte[16];
            in.readFully(v);
            byte[] mine = Arrays.copyOf(version.getBytes(StandardCharsets.US_ASCII), 16);
            out.write(mine);
            int page = in.readInt();
            out.writeInt(4096);
            int line = in.readInt();
            out.writeInt(64);
            byte[] m = new byte[2];
            in.readFully(m);
            out.write(new byte[] {(byte) ('0' + mtuEnum), 0});
            return new byte[][] {v, {(byte) (page >> 12), (byte) line}, m};
        }
    }

    @Test
    void preambleIsPerftestsByteSequence() throws Exception {
        try (ServerSocket ss = new ServerSocket(0)) {
            CompletableFuture<byte[][]> server = CompletableFuture.supplyAsync(() -> {
                try {
                    return perftestServer(ss, "6.06", Mtu.MTU_512.value());
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            });
            Mtu agreed;
            try (PerftestLink link = PerftestLink.open("127.0.0.1", ss.getLocalPort(), Duration.ofSeconds(10), quiet())) {
                agreed = link.preamble(Mtu.MTU_1024);
                assertEquals("6.06", link.peerVersion());
            }
            byte[][] sent = server.get(10, TimeUnit.SECONDS);
            assertArrayEquals(Arrays.copyOf("6.06".getBytes(StandardCharsets.US_ASCII), 16), sent[0]);
            assertArrayEquals(new byte[] {1, 64}, sent[1], "page size 4096 and cache line 64, big-endian");
            assertArrayEquals(new byte[] {(byte) ('0' + Mtu.MTU_1024.value()), 0}, sent[2], "the MTU enum as text");
            assertEquals(Mtu.MTU_512, agreed, "the smaller MTU wins");
        }
    }

    @Test
    void preambleRefusesOldPerftest() throws Exception {
        try (ServerSocket ss = new ServerSocket(0)) {
            CompletableFuture.runAsync(() -> {
                try {
                    perftestServer(ss, "5.60", Mtu.MTU_1024.value());
                } catch (IOException e) {
                    // the client hangs up after the version
                }
            });
            try (PerftestLink link = PerftestLink.open("127.0.0.1", ss.getLocalPort(), Duration.ofSeconds(10), quiet())) {
                SampleException e = assertThrows(SampleException.class, () -> link.preamble(Mtu.MTU_1024));
                assertTrue(e.getMessage().contains("older than 5.7"), e.getMessage());
            }
        }
    }

    @Test
    void refusedConnectionSaysCouldntConnect() throws Exception {
        int port;
        try (ServerSocket ss = new ServerSocket(0)) {
            port = ss.getLocalPort();
        }
        int closed = port;
        SampleException e = assertThrows(SampleException.class,
                () -> PerftestLink.open("127.0.0.1", closed, Duration.ofSeconds(5), quiet()));
        assertTrue(e.getMessage().startsWith("Couldn't connect to 127.0.0.1:" + closed), e.getMessage());
    }

    private static PrintStream quiet() {
        return new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
    }
}
