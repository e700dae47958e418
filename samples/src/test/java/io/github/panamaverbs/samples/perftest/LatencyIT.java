package io.github.panamaverbs.samples.perftest;

import static io.github.panamaverbs.samples.SampleRuns.awaitListening;
import static io.github.panamaverbs.samples.SampleRuns.c;
import static io.github.panamaverbs.samples.SampleRuns.cmd;
import static io.github.panamaverbs.samples.SampleRuns.java;
import static io.github.panamaverbs.samples.SampleRuns.otherCpu;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.panamaverbs.samples.SampleRuns.Child;
import io.github.panamaverbs.samples.SampleRuns.Run;
import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The latency tools on a real device (scripts/with-rdma -- scripts/run-it, IT_MODULES=samples):
 * Java to Java, against perftest's own binaries (ib_*_lat) both ways, and a peer that dies mid-run.
 */
@RequiresRdma
class LatencyIT {
    private static String device;
    private static String ibPort;
    private static String gid;
    private static int nextPort = 18640;

    /** The device, port and GID index by the api's rule (RDMA_DEVICE or the first ACTIVE port; see DeviceDetection). */
    @BeforeAll
    static void device(TestDevice d) {
        device = d.name();
        ibPort = Integer.toString(d.port());
        gid = Integer.toString(d.gidIndex());
    }

    @ParameterizedTest
    @ValueSource(strings = {"write-lat", "read-lat", "atomic-lat", "send-lat"})
    void latencyTableParsesAndIsOrdered(String tool) throws Exception {
        int port = nextPort++;
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> java(tool, "-d", device, "-i", ibPort, "-x", gid,
                "-p", "" + port, "-n", "200", "--timeout", "120"));
        awaitListening(port);
        Run client = java(tool, "-d", device, "-i", ibPort, "-x", gid, "-p", "" + port, "-n", "200", "--timeout", "120", "127.0.0.1");
        Run s = server.get(300, TimeUnit.SECONDS);
        assertEquals(0, client.status(), client.out() + client.err());
        assertEquals(0, s.status(), s.out() + s.err());
        for (Run r : tool.equals("write-lat") || tool.equals("send-lat") ? List.of(client, s) : List.of(client)) {
            List<String> header = r.out().lines().filter(l -> l.startsWith(" #bytes #iterations")).toList();
            assertEquals(1, header.size(), r.out());
            List<String> rows = r.out().lines().filter(l -> l.matches("^ \\d+\\s+200\\s+.*")).toList();
            assertEquals(1, rows.size(), r.out());
            String[] f = rows.getFirst().trim().split("\\s+");
            assertEquals(9, f.length, rows.getFirst());
            double min = Double.parseDouble(f[2]), max = Double.parseDouble(f[3]), typical = Double.parseDouble(f[4]);
            double avg = Double.parseDouble(f[5]), p99 = Double.parseDouble(f[7]), p999 = Double.parseDouble(f[8]);
            assertTrue(min > 0 && avg > 0, rows.getFirst());
            assertTrue(min <= typical && typical <= p99 && p99 <= p999 && p999 <= max,
                    String.format(Locale.ROOT, "not ordered: %s", rows.getFirst()));
        }
    }

    @Test
    void sendLatOverUc() throws Exception {
        int port = nextPort++;
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> java("send-lat", "-d", device, "-i", ibPort, "-x", gid,
                "-p", "" + port, "-n", "100", "-c", "UC", "-s", "64", "--timeout", "120"));
        awaitListening(port);
        Run client = java("send-lat", "-d", device, "-i", ibPort, "-x", gid, "-p", "" + port, "-n", "100", "-c", "UC", "-s", "64",
                "--timeout", "120", "127.0.0.1");
        Run s = server.get(300, TimeUnit.SECONDS);
        assertEquals(0, client.status(), client.out() + client.err());
        assertEquals(0, s.status(), s.out() + s.err());
        assertTrue(client.out().contains("Connection type : UC"), client.out());
        assertTrue(client.out().lines().anyMatch(l -> l.matches("^ 64\\s+100\\s+.*")), client.out());
    }

    /** The perftest command for {@code java} ("write-lat" → ib_write_lat) with {@code flags}, on the other CPU. */
    static List<String> perftest(String tool, List<String> flags, String... more) {
        List<String> cmd = new ArrayList<>(otherCpu());
        cmd.addAll(List.of("stdbuf", "-oL"));   // so that a failure shows all it printed
        cmd.add("ib_" + tool.replace("-", "_"));
        cmd.add("-F");   // no CPU frequency check (the VM's clock is emulated)
        cmd.addAll(flags);
        cmd.addAll(List.of(more));
        return cmd;
    }

    private static List<String> latencyFlags(int port, String extra) {
        List<String> f = new ArrayList<>(List.of("-d", device, "-i", ibPort, "-x", gid, "-p", "" + port, "-n", "200"));
        if (!extra.isBlank()) {
            f.addAll(List.of(extra.trim().split("\\s+")));
        }
        return f;
    }

    /** Which sides print a result table: both for write and send; only the client for read and atomic. */
    private static boolean printsTable(String tool, boolean client) {
        return client || tool.equals("write-lat") || tool.equals("send-lat");
    }

    /**
     * Checks a latency tool's output (Java's or perftest's): the banner's connection type, and,
     * where that side measures, one header and one row per size, whose figures are ordered.
     */
    private static void checkLatencyOutput(String who, String out, String type, boolean table, int... sizes) {
        assertTrue(out.contains("Connection type : " + type), who + ": " + out);
        assertTrue(out.lines().anyMatch(l -> l.startsWith(" remote address: LID")), who + ": " + out);
        long headers = out.lines().filter(l -> l.startsWith(" #bytes #iterations")).count();
        List<String> rows = out.lines().filter(l -> l.matches("^ \\d+\\s+\\d+\\s+\\d+\\.\\d+\\s+.*")).toList();
        if (!table) {
            assertEquals(0, headers, who + " measures nothing, yet printed a table: " + out);
            return;
        }
        assertEquals(1, headers, who + ": " + out);
        assertEquals(sizes.length, rows.size(), who + ": " + out);
        for (int i = 0; i < sizes.length; i++) {
            String[] f = rows.get(i).trim().split("\\s+");
            assertEquals(9, f.length, who + ": " + rows.get(i));
            assertEquals(sizes[i], Integer.parseInt(f[0]), who + ": " + rows.get(i));
            double min = Double.parseDouble(f[2]), max = Double.parseDouble(f[3]), typical = Double.parseDouble(f[4]);
            double p99 = Double.parseDouble(f[7]), p999 = Double.parseDouble(f[8]);
            assertTrue(min > 0 && min <= typical && typical <= p99 && p99 <= p999 && p999 <= max,
                    who + ": figures not ordered: " + rows.get(i));
        }
    }

    /** perftest's server, the Java client (in this JVM). */
    @ParameterizedTest(name = "{0} {1}: ib_* server, Java client")
    @CsvSource(delimiter = '|', value = {"write-lat|", "read-lat|", "atomic-lat|", "send-lat|", "send-lat|-c UD",
            "send-lat|-c UC -s 64", "write-lat|-s 4096"})
    void perftestServerJavaClient(String tool, String extra) throws Exception {
        extra = extra == null ? "" : extra;
        int port = nextPort++;
        List<String> flags = latencyFlags(port, extra);
        try (Child server = new Child(perftest(tool, flags))) {
            awaitListening(port);
            Run client = java(cmd(tool, flags, "--timeout", "120", "127.0.0.1"));
            Run s = server.await(120, "Java client: " + client.out() + client.err());
            assertEquals(0, client.status(), "Java client: " + client.out() + client.err());
            assertEquals(0, s.status(), "perftest server: " + s.out());
            String type = extra.contains("UD") ? "UD" : extra.contains("UC") ? "UC" : "RC";
            int size = extra.contains("-s") ? Integer.parseInt(extra.replaceAll(".*-s\\s+(\\d+).*", "$1"))
                    : tool.equals("atomic-lat") ? 8 : 2;
            checkLatencyOutput("Java client", client.out(), type, true, size);
            checkLatencyOutput("ib_ server", s.out(), type, printsTable(tool, false), size);
        }
    }

    /** The Java server (in this JVM), perftest's client. */
    @ParameterizedTest(name = "{0} {1}: Java server, ib_* client")
    @CsvSource(delimiter = '|', value = {"write-lat|", "read-lat|", "atomic-lat|", "send-lat|", "send-lat|-c UD",
            "read-lat|-s 4096"})
    void javaServerPerftestClient(String tool, String extra) throws Exception {
        extra = extra == null ? "" : extra;
        int port = nextPort++;
        List<String> flags = latencyFlags(port, extra);
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> java(cmd(tool, flags, "--timeout", "120")));
        awaitListening(port);
        Run client = c(perftest(tool, flags, "127.0.0.1").toArray(String[]::new));
        Run s = server.get(300, TimeUnit.SECONDS);
        assertEquals(0, client.status(), "perftest client: " + client.out() + client.err());
        assertEquals(0, s.status(), "Java server: " + s.out() + s.err());
        String type = extra.contains("UD") ? "UD" : "RC";
        int size = extra.contains("-s") ? Integer.parseInt(extra.replaceAll(".*-s\\s+(\\d+).*", "$1"))
                : tool.equals("atomic-lat") ? 8 : 2;
        checkLatencyOutput("ib_ client", client.out(), type, true, size);
        checkLatencyOutput("Java server", s.out(), type, printsTable(tool, false), size);
    }

    /** send-lat over UD, Java to Java: every size of -a up to the MTU (and none above), the GRH on each receive. */
    @Test
    void sendLatOverUdAllSizes() throws Exception {
        int port = nextPort++;
        List<String> flags = List.of("-d", device, "-i", ibPort, "-x", gid, "-p", "" + port, "-n", "20", "-c", "UD", "-a", "--timeout", "120");
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> java(cmd("send-lat", flags)));
        awaitListening(port);
        Run client = java(cmd("send-lat", flags, "127.0.0.1"));
        Run s = server.get(300, TimeUnit.SECONDS);
        assertEquals(0, client.status(), client.out() + client.err());
        assertEquals(0, s.status(), s.out() + s.err());
        int mtu = Integer.parseInt(client.out().replaceAll("(?s).* Mtu +: (\\d+)\\[B].*", "$1"));
        List<Integer> sizes = new ArrayList<>();
        for (int n = 2; n <= mtu; n *= 2) {
            sizes.add(n);
        }
        int[] expected = sizes.stream().mapToInt(Integer::intValue).toArray();
        checkLatencyOutput("client", client.out(), "UD", true, expected);
        checkLatencyOutput("server", s.out(), "UD", true, expected);
    }

    /** A UD message above the MTU is an error on both sides when -s asks for it (perftest's check_mtu). */
    @Test
    void sendLatOverUdRefusesSizeAboveMtu() throws Exception {
        int port = nextPort++;
        List<String> flags = List.of("-d", device, "-i", ibPort, "-x", gid, "-p", "" + port, "-n", "20", "-c", "UD", "-s", "8192",
                "--timeout", "60");
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> java(cmd("send-lat", flags)));
        awaitListening(port);
        Run client = java(cmd("send-lat", flags, "127.0.0.1"));
        Run s = server.get(300, TimeUnit.SECONDS);
        for (Run r : List.of(client, s)) {
            assertEquals(1, r.status(), r.out() + r.err());
            assertTrue(r.err().contains("Max message size in UD cannot be greater than MTU"), r.err());
        }
    }

    // ---- a peer that vanishes ----

    /**
     * How long the surviving side waits for a silent peer. Short, but not too short for a JVM
     * that starts cold in the VM's emulated CPU: the same timeout covers the TCP set-up, where
     * the survivor waits while its peer loads classes between two messages, and the hand-shake
     * after the warm-ups, where it waits for its peer's warm-up (the test's JVM and both tools share
     * one vCPU). 8 s was once too short for send-lat's client (a final CI check, 2026-12-01).
     */
    private static final int VANISH_TIMEOUT = 12;

    /**
     * The server (a JVM of its own) is killed while the client measures: the client, with a short
     * {@code --timeout}, must give up on its own within a bound, saying the peer is gone.
     */
    @ParameterizedTest
    @ValueSource(strings = {"write-lat", "send-lat"})
    void serverVanishesMidRun(String tool) throws Exception {
        int port = nextPort++;
        List<String> flags = List.of("-d", device, "-i", ibPort, "-x", gid, "-p", "" + port, "-n", "1000000", "--timeout", "" + VANISH_TIMEOUT);
        try (Child server = Child.java(cmd(tool, flags))) {
            awaitListening(port);
            CompletableFuture<Run> client = CompletableFuture.supplyAsync(() -> java(cmd(tool, flags, "127.0.0.1")));
            killMidRun(server, "server", client, "client");
        }
    }

    /** The client (a JVM of its own) is killed mid-run: the write-lat server, spinning on its buffer, gives up after --timeout. */
    @Test
    void clientVanishesMidRun() throws Exception {
        int port = nextPort++;
        List<String> flags = List.of("-d", device, "-i", ibPort, "-x", gid, "-p", "" + port, "-n", "1000000", "--timeout", "" + VANISH_TIMEOUT);
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> java(cmd("write-lat", flags)));
        awaitListening(port);
        try (Child client = Child.java(cmd("write-lat", flags, "127.0.0.1"))) {
            killMidRun(client, "client", server, "server");
        }
    }

    /**
     * Kills {@code victim} once it measures (its table header is out, and a second more); the
     * {@code survivor}, in this JVM with {@code --timeout} {@link #VANISH_TIMEOUT}, must then give up on
     * its own within a bound: status 1, saying the peer is gone.
     */
    private static void killMidRun(Child victim, String victimName, CompletableFuture<Run> survivor, String survivorName)
            throws Exception {
        try {
            awaitOutput(victim, " #bytes #iterations", 120);
        } catch (AssertionError e) {
            // the victim ended first: what the survivor said, if it has ended too, is the reason
            Run r = survivor.isDone() && !survivor.isCompletedExceptionally() ? survivor.getNow(null) : null;
            throw new AssertionError(e.getMessage() + (r == null ? "\n(the " + survivorName + " is still running)"
                    : "\nthe " + survivorName + " ended with status " + r.status() + ":\n" + r.out() + r.err()), e);
        }
        Thread.sleep(1000);   // measuring now
        assertTrue(!survivor.isDone(), "the " + survivorName + " ended before the " + victimName + " was killed: "
                + survivor.getNow(null));
        victim.process.destroyForcibly();
        long killed = System.nanoTime();
        Run r = survivor.get(120, TimeUnit.SECONDS);
        double seconds = (System.nanoTime() - killed) / 1e9;
        assertEquals(1, r.status(), r.out() + r.err());
        assertTrue(r.err().contains("the peer is gone"), r.err());
        assertTrue(seconds < VANISH_TIMEOUT + 45, "the " + survivorName + " took " + seconds + " s to give up (--timeout "
                + VANISH_TIMEOUT + ")");
    }

    /** A latency tool's client with no server: perftest's "Couldn't connect to" message, status 1, at once. */
    @Test
    void latencyRefusedConnection() {
        for (String tool : List.of("write-lat", "send-lat")) {
            long start = System.nanoTime();
            Run r = java(tool, "-d", device, "-i", ibPort, "-x", gid, "-p", "1", "--timeout", "30", "127.0.0.1");
            assertEquals(1, r.status(), r.out() + r.err());
            assertTrue(r.err().contains("Couldn't connect to 127.0.0.1:1"), r.err());
            assertTrue((System.nanoTime() - start) / 1e9 < 20, "a refused connection took more than 20 s");
        }
    }

    private static void awaitOutput(Child child, String text, int seconds) throws Exception {
        for (int i = 0; i < seconds * 10; i++) {
            if (child.output().contains(text)) {
                return;
            }
            if (!child.process.isAlive()) {
                fail("ended before printing \"" + text + "\": " + child.output());
            }
            Thread.sleep(100);
        }
        fail("no \"" + text + "\" within " + seconds + " s: " + child.output());
    }
}
