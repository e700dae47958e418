package io.github.panamaverbs.samples.perftest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.panamaverbs.samples.CmTools;
import io.github.panamaverbs.samples.SampleRuns;
import io.github.panamaverbs.samples.SampleRuns.Child;
import io.github.panamaverbs.samples.SampleRuns.Run;
import io.github.panamaverbs.verbs.testing.RequiresRdma;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The perftest tools with perftest's {@code -R} (queue pairs and control channel connected with
 * rdma_cm) against Debian's perftest binaries both ways, and Java to Java, on each provider of
 * {@code scripts/with-rdma --provider both}: rxe (RoCE v2) and siw (iWARP, which can only connect
 * through rdma_cm), over loopback to the device's own IPv4 address (RDMA_RXE_IP, RDMA_SIW_IP).
 * Every side is a process of its own, started with a time limit; the client starts once the
 * server's rdma_cm ID listens (perftest's client does not retry a refused control connection).
 */
@RequiresRdma
class PerftestCmIT {
    /** Seconds a process may run (a JVM starts slowly under the VM's emulated CPU). */
    private static final int LIMIT = 240;
    private static final int ITERS = 100;
    private static int nextPort = 18700;

    private static synchronized String port() {
        return Integer.toString(nextPort++);
    }

    /** perftest's binary for {@code tool} (write-lat: ib_write_lat), line-buffered, without the CPU frequency check. */
    private static Child c(List<String> cpu, String tool, List<String> args) throws IOException {
        List<String> cmd = new ArrayList<>(cpu);
        cmd.addAll(List.of("stdbuf", "-oL", "ib_" + tool.replace('-', '_'), "-F"));
        cmd.addAll(args);
        return new Child(cmd);
    }

    /** The Java tool: samples/run (from the repository's root), else this JVM's java and class path. */
    private static Child java(List<String> cpu, String tool, List<String> args) throws IOException {
        List<String> cmd = new ArrayList<>(cpu);
        cmd.addAll(SampleRuns.javaCommand());
        cmd.add(tool);
        cmd.addAll(args);
        cmd.addAll(List.of("--timeout", "120"));
        return new Child(cmd);
    }

    /**
     * Waits until the server printed its "Waiting for client" banner and an rdma_cm ID listens on
     * {@code port} ({@code rdma resource show cm_id}); fails if the server ends first.
     */
    private static void awaitListening(Child server, String port) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(LIMIT);
        String[] last = {""};
        while (System.nanoTime() - end < 0) {
            if (!server.process.isAlive()) {
                Run r = server.await(10);
                fail("the server ended (status " + r.status() + ") before it listened:\n" + r.out());
            }
            if (server.output().contains("Waiting for client to connect") && CmTools.cmIdListens(port, last)) {
                return;
            }
            Thread.sleep(200);
        }
        fail("no rdma_cm ID listens on port " + port + " after " + LIMIT + " s:\n" + last[0] + "\nserver:\n" + server.output());
    }

    /** Runs {@code server} and then {@code client} (each made for the port), and checks both. */
    private static void pair(String tool, String provider, String serverKind, String clientKind) throws Exception {
        String device = CmTools.env(provider, "DEVICE");
        String ip = CmTools.ip(provider);
        String port = port();
        List<String> flags = new ArrayList<>(List.of("-R", "-d", device, "-p", port, "-n", "" + ITERS));
        if (tool.endsWith("-bw")) {
            flags.addAll(List.of("-s", "" + BW_SIZE));
        }
        List<String> clientFlags = new ArrayList<>(flags);
        clientFlags.add(ip);
        try (Child server = serverKind.equals("java") ? java(SampleRuns.otherCpu(), tool, flags) : c(SampleRuns.otherCpu(), tool, flags)) {
            awaitListening(server, port);
            try (Child client = clientKind.equals("java") ? java(List.of(), tool, clientFlags)
                    : c(List.of(), tool, clientFlags)) {
                Run c = client.await(LIMIT, "[server so far]\n" + server.output());
                Run s = server.await(LIMIT, "[client]\n" + c.out());
                String both = "\n[" + serverKind + " server]\n" + s.out() + "\n[" + clientKind + " client]\n" + c.out();
                assertEquals(0, c.status(), "client status" + both);
                assertEquals(0, s.status(), "server status" + both);
                check(tool, clientKind + " client", c.out(), device, both);
                check(tool, serverKind + " server", s.out(), device, both);
            }
        }
    }

    private static final int BW_SIZE = 4096;

    /**
     * The banner says rdma_cm on RC, the remote address was printed, and one table of one ordered row
     * (latency: size 2, 8 for atomics; bandwidth: {@link #BW_SIZE}), or none on the passive server of
     * reads and atomics.
     */
    private static void check(String tool, String who, String out, String device, String both) {
        if (tool.endsWith("-bw")) {
            checkBandwidth(who, out, device, both);
            return;
        }
        boolean passive = who.endsWith("server") && (tool.equals("read-lat") || tool.equals("atomic-lat"));
        assertTrue(out.contains("Connection type : RC"), who + both);
        assertTrue(out.contains(" rdma_cm QPs\t : ON"), who + both);
        assertTrue(out.contains(" Data ex. method : rdma_cm"), who + both);
        assertTrue(out.contains("Device         : " + device), who + both);
        assertTrue(out.lines().anyMatch(l -> l.startsWith(" remote address: LID")), who + both);
        if (passive) {   // the target of reads and atomics measures nothing and prints no table, as perftest's
            assertEquals(0, out.lines().filter(l -> l.startsWith(" #bytes #iterations")).count(), who + both);
            return;
        }
        assertEquals(1, out.lines().filter(l -> l.startsWith(" #bytes #iterations")).count(), who + both);
        List<String> rows = out.lines().filter(l -> l.matches("^ \\d+\\s+\\d+\\s+\\d+\\.\\d+\\s+.*")).toList();
        assertEquals(1, rows.size(), who + both);
        String[] f = rows.getFirst().trim().split("\\s+");
        assertEquals(9, f.length, who + ": " + rows.getFirst());
        assertEquals(tool.equals("atomic-lat") ? 8 : 2, Integer.parseInt(f[0]), who + ": " + rows.getFirst());
        assertEquals(ITERS, Integer.parseInt(f[1]), who + ": " + rows.getFirst());
        double min = Double.parseDouble(f[2]), max = Double.parseDouble(f[3]), typical = Double.parseDouble(f[4]);
        double p99 = Double.parseDouble(f[7]), p999 = Double.parseDouble(f[8]);
        assertTrue(min > 0 && min <= typical && typical <= p99 && p99 <= p999 && p999 <= max,
                who + ": figures not ordered: " + rows.getFirst());
    }

    private static void checkBandwidth(String who, String out, String device, String both) {
        assertTrue(out.contains("Connection type : RC"), who + both);
        assertTrue(out.contains(" rdma_cm QPs\t : ON"), who + both);
        assertTrue(out.contains("Device         : " + device), who + both);
        assertTrue(out.lines().anyMatch(l -> l.startsWith(" remote address: LID")), who + both);
        assertEquals(1, out.lines().filter(l -> l.startsWith(" #bytes     #iterations")).count(), who + both);
        List<String> rows = out.lines().filter(l -> l.matches("^ \\d+\\s+\\d+\\s+\\d+\\.\\d+\\s+.*")).toList();
        assertEquals(1, rows.size(), who + both);
        String[] f = rows.getFirst().trim().split("\\s+");
        assertEquals(5, f.length, who + ": " + rows.getFirst());
        assertEquals(BW_SIZE, Integer.parseInt(f[0]), who + ": " + rows.getFirst());
        assertEquals(ITERS, Integer.parseInt(f[1]), who + ": " + rows.getFirst());
        assertTrue(Double.parseDouble(f[3]) > 0, who + ": no bandwidth: " + rows.getFirst());
    }

    /**
     * The other tools against perftest, on siw (iWARP connects only this way), the two directions in
     * turn; atomic-lat on rxe (siw has no atomics); send-bw both ways, since on iWARP it runs
     * perftest's receive credits (no receiver-not-ready retry there).
     */
    @ParameterizedTest(name = "{0} -R on {1}: {2} server, {3} client")
    @CsvSource({"read-lat,siw,java,c", "atomic-lat,rxe,c,java", "write-bw,siw,c,java", "send-bw,siw,java,c",
            "send-bw,siw,c,java"})
    void theOtherToolsAgainstPerftest(String tool, String provider, String serverKind, String clientKind) throws Exception {
        pair(tool, provider, serverKind, clientKind);
    }

    @ParameterizedTest(name = "{0} -R on {1}: Java server, perftest client")
    @CsvSource({"write-lat,rxe", "write-lat,siw", "send-lat,rxe", "send-lat,siw"})
    void javaServerPerftestClient(String tool, String provider) throws Exception {
        pair(tool, provider, "java", "c");
    }

    @ParameterizedTest(name = "{0} -R on {1}: perftest server, Java client")
    @CsvSource({"write-lat,rxe", "write-lat,siw", "send-lat,rxe", "send-lat,siw"})
    void perftestServerJavaClient(String tool, String provider) throws Exception {
        pair(tool, provider, "c", "java");
    }

    @ParameterizedTest(name = "{0} -R on {1}: Java server, Java client")
    @CsvSource({"write-lat,siw"}) // (Java with perftest runs on both providers; one Java pair keeps CI short)
    void javaServerJavaClient(String tool, String provider) throws Exception {
        pair(tool, provider, "java", "java");
    }
}
