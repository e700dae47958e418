package io.github.panamaverbs.samples.perftest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.samples.SampleRuns;
import io.github.panamaverbs.samples.SampleRuns.Child;
import io.github.panamaverbs.samples.SampleRuns.Run;
import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * write-bw and send-bw on a real device (scripts/with-rdma -- scripts/run-it, IT_MODULES=samples),
 * server and client in this JVM: the result table parses, has the requested size and iterations,
 * and holds perftest's arithmetic (MsgRate = BW average / size; peak at least the average on the
 * client, 0 on the send-bw server); the server's data check passes.
 */
@RequiresRdma
class BandwidthIT {
    private static final Pattern ROW = Pattern.compile("^ (\\d+)\\s+(\\d+)\\s+(\\d+\\.\\d\\d)\\s+(\\d+\\.\\d\\d)\\s+(\\d+\\.\\d{6})$");
    private static String device;
    private static String ibPort;
    private static String gid;
    private static int nextPort = 18700;

    /** The device, port and GID index by the api's rule (RDMA_DEVICE or the first ACTIVE port; see DeviceDetection). */
    @BeforeAll
    static void device(TestDevice d) {
        device = d.name();
        ibPort = Integer.toString(d.port());
        gid = Integer.toString(d.gidIndex());
    }

    /** One result row: #bytes, #iterations, BW peak, BW average, MsgRate. */
    record Row(long size, long iters, double peak, double average, double msgRate) {
    }

    /** Runs a server and a client with the same flags; returns {server, client}, both exited 0. */
    private static Run[] pair(String tool, String... flags) throws Exception {
        int port = nextPort++;
        List<String> args = new ArrayList<>(List.of(tool, "-d", device, "-i", ibPort, "-x", gid, "-p", "" + port, "--timeout", "60"));
        args.addAll(List.of(flags));
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> SampleRuns.java(args.toArray(String[]::new)));
        SampleRuns.awaitListening(port);
        args.add("127.0.0.1");
        Run client = SampleRuns.java(args.toArray(String[]::new));
        Run s = server.get(120, TimeUnit.SECONDS);
        assertEquals(0, client.status(), "client: " + client.out() + client.err());
        assertEquals(0, s.status(), "server: " + s.out() + s.err());
        assertTrue(client.err().isEmpty(), client.err());
        assertTrue(s.err().isEmpty(), s.err());
        return new Run[] {s, client};
    }

    /** The one row of the table, after its one header; checks the size, the iterations and MsgRate against the average. */
    private static Row row(Run r, int size, int iters) {
        assertEquals(1, r.out().lines().filter(l -> l.equals(
                " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]")).count(), r.out());
        List<Row> rows = new ArrayList<>();
        for (String l : r.out().lines().toList()) {
            Matcher m = ROW.matcher(l);
            if (m.matches()) {
                rows.add(new Row(Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), Double.parseDouble(m.group(3)),
                        Double.parseDouble(m.group(4)), Double.parseDouble(m.group(5))));
            }
        }
        assertEquals(1, rows.size(), r.out());
        Row row = rows.getFirst();
        assertEquals(size, row.size(), r.out());
        assertEquals(iters, row.iters(), r.out());
        assertTrue(row.average() > 0 && row.msgRate() > 0, r.out());
        // BW average [MB/s] = MsgRate [Mpps] * size * 10^6 / 2^20, within the rounding of the two printed figures
        double fromRate = row.msgRate() * size * 1e6 / (1 << 20);
        double slack = 0.005 + 0.5e-6 * size * 1e6 / (1 << 20) + 1e-9;
        assertTrue(Math.abs(fromRate - row.average()) <= slack,
                "MsgRate " + row.msgRate() + " * " + size + " B is " + fromRate + " MB/s, not " + row.average() + ":\n" + r.out());
        return row;
    }

    /** The client's row of a {@link #pair}: as {@link #row}, and its peak at least its average. */
    private static Row clientRow(Run[] r, int size, int iters) {
        Row client = row(r[1], size, iters);
        assertTrue(client.peak() >= client.average(), r[1].out());
        return client;
    }

    @ParameterizedTest
    @CsvSource({"RC, 4096, 2000", "UC, 65536, 200"})
    void writeBw(String type, int size, int iters) throws Exception {
        Run[] r = pair("write-bw", "-c", type, "-s", "" + size, "-n", "" + iters);
        Row client = clientRow(r, size, iters);
        assertEquals(client, row(r[0], size, iters), "the server prints the client's figures");
        for (Run x : r) {
            assertTrue(x.out().contains("Connection type : " + type), x.out());
        }
        assertTrue(r[0].out().contains(" data check: 1 of 1 buffer slots hold the client's " + size + "-byte messages"), r[0].out());
    }

    @Test
    void writeBwPostListCyclesSmallMessages() throws Exception {
        Run[] r = pair("write-bw", "-s", "64", "-n", "800", "-l", "8");
        clientRow(r, 64, 800);
        assertTrue(r[1].out().contains("RDMA_Write Post List BW Test") && r[1].out().contains(" CQ Moderation   : 8"), r[1].out());
        // 64 slots of 64 bytes in the 4 KiB cycle buffer; a list of 8 writes uses the first 8
        assertTrue(r[0].out().contains(" data check: 8 of 64 buffer slots hold the client's 64-byte messages"), r[0].out());
    }

    @ParameterizedTest
    @CsvSource({"RC, 4096, 1000", "UD, 1024, 1000"})
    void sendBw(String type, int size, int iters) throws Exception {
        Run[] r = pair("send-bw", "-c", type, "-s", "" + size, "-n", "" + iters);
        clientRow(r, size, iters);
        Row server = row(r[0], size, iters);
        assertEquals(0.0, server.peak(), "the send-bw server computes no peak, as perftest's: " + r[0].out());
        assertTrue(r[0].out().contains(" RX depth        : " + (type.equals("UD") ? iters : 512)), r[0].out());
        assertTrue(r[0].out().contains(" data check: the last of " + iters + " messages holds the client's " + size + " bytes"),
                r[0].out());
    }

    /**
     * Against perftest's own binaries (ib_write_bw, ib_send_bw), both ways: both sides exit 0 and print
     * one well-formed row of the requested size and iterations; for writes the server's row is the
     * client's figures, as perftest's exchange of reports makes it. perftest fills its buffers with
     * random bytes, so a Java server's data check says it skipped them.
     */
    @ParameterizedTest(name = "{0} -c {1}: perftest server={2}")
    @CsvSource({"write-bw, RC, true", "write-bw, RC, false", "send-bw, RC, true", "send-bw, RC, false",
            "send-bw, UD, true", "send-bw, UD, false"})
    void againstPerftest(String tool, String type, boolean perftestServer) throws Exception {
        int port = nextPort++;
        int size = type.equals("UD") ? 1024 : 4096;
        int iters = 500;
        List<String> flags = List.of("-d", device, "-i", ibPort, "-x", gid, "-p", "" + port, "-c", type, "-s", "" + size, "-n", "" + iters);
        Run server;
        Run client;
        if (perftestServer) {
            try (Child c = new Child(LatencyIT.perftest(tool, flags))) {
                SampleRuns.awaitListening(port);
                List<String> args = new ArrayList<>(List.of(tool));
                args.addAll(flags);
                args.addAll(List.of("--timeout", "60", "127.0.0.1"));
                client = SampleRuns.java(args.toArray(String[]::new));
                server = c.await(120, "Java client: " + client.out() + client.err());
            }
        } else {
            List<String> args = new ArrayList<>(List.of(tool));
            args.addAll(flags);
            args.addAll(List.of("--timeout", "60"));
            CompletableFuture<Run> s = CompletableFuture.supplyAsync(() -> SampleRuns.java(args.toArray(String[]::new)));
            SampleRuns.awaitListening(port);
            client = SampleRuns.c(LatencyIT.perftest(tool, flags, "127.0.0.1").toArray(String[]::new));
            server = s.get(120, TimeUnit.SECONDS);
        }
        String who = perftestServer ? "perftest server / Java client" : "Java server / perftest client";
        assertEquals(0, client.status(), who + ", client: " + client.out() + client.err());
        assertEquals(0, server.status(), who + ", server: " + server.out() + server.err());
        Row c = row(client, size, iters);
        Row s = row(server, size, iters);
        if (tool.equals("write-bw")) {
            assertEquals(c, s, who + ": the server prints the client's figures");
        }
        for (Run x : new Run[] {client, server}) {
            assertTrue(x.out().contains("Connection type : " + type), who + ": " + x.out());
        }
        if (!perftestServer) {
            assertTrue(server.out().contains(" data check: skipped"), server.out());
        }
    }

    @Test
    void refusedAndSilentPeers() throws Exception {
        Run refused = SampleRuns.java("send-bw", "-d", device, "-i", ibPort, "-x", gid, "-p", "1", "127.0.0.1");
        assertEquals(1, refused.status());
        assertTrue(refused.err().contains("Couldn't connect to 127.0.0.1:1"), refused.err());

        // a client that connects and then says nothing: the server gives up after --timeout
        int port = nextPort++;
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> SampleRuns.java("write-bw", "-d", device,
                "-x", gid, "-p", "" + port, "--timeout", "2"));
        SampleRuns.awaitListening(port);
        try (Socket silent = new Socket()) {
            silent.connect(new InetSocketAddress("127.0.0.1", port));
            Run s = server.get(60, TimeUnit.SECONDS);
            assertEquals(1, s.status(), s.out() + s.err());
            assertTrue(s.err().contains("gone"), s.err());
        }
    }
}
