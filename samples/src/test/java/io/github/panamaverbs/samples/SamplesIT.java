package io.github.panamaverbs.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.panamaverbs.verbs.Device;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * The samples on a real device (scripts/with-rdma -- scripts/run-it, IT_MODULES=samples): devinfo
 * against ibv_devinfo, each ping-pong against its C tool both ways (on one device: the C tool is
 * a process, the Java side runs in this JVM), the latency tools Java to Java and against perftest's
 * own binaries both ways, and a peer that dies mid-run. Every ping-pong transfer with -c.
 */
class SamplesIT {
    private static String device;
    private static String gid;
    private static int nextPort = 18600;

    @BeforeAll
    static void device() {
        device = requireDevice();
        gid = gidIndex();
    }

    /**
     * The device to test: RDMA_DEVICE, or the first one; with none, the calling class's tests are
     * aborted, or fail with -Drdma.required=true (CI=true).
     */
    static String requireDevice() {
        String name = System.getenv("RDMA_DEVICE");
        if (name == null && !Device.list().isEmpty()) {
            name = Device.list().getFirst().name();
        }
        if (name == null) {
            if (Boolean.getBoolean("rdma.required")) {
                fail("no RDMA device (CI=true: a missing device is a failure)");
            }
            Assumptions.abort("no RDMA device; run through scripts/with-rdma");
        }
        return name;
    }

    /** The GID index (needed on RoCE): RDMA_GID_INDEX, default 1. */
    static String gidIndex() {
        return System.getenv().getOrDefault("RDMA_GID_INDEX", "1");
    }

    record Run(int status, String out, String err) {
    }

    static Run java(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(rc, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    static Run c(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(false).start();
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> slurp(p.getInputStream()));
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> slurp(p.getErrorStream()));
        if (!p.waitFor(300, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail(String.join(" ", command) + " did not end within 300 s");
        }
        return new Run(p.exitValue(), out.get(), err.get());
    }

    private static String slurp(java.io.InputStream in) {
        try {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return e.toString();
        }
    }

    /** Waits until something listens on TCP {@code port} (from /proc, without connecting to it). */
    static void awaitListening(int port) throws Exception {
        String hex = String.format(":%04X ", port);
        for (int i = 0; i < 1200; i++) {
            for (String f : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
                for (String line : Files.readAllLines(Path.of(f))) {
                    String[] cols = line.trim().split("\\s+");
                    if (cols.length > 3 && (cols[1] + " ").endsWith(hex) && cols[3].equals("0A")) {
                        return;
                    }
                }
            }
            Thread.sleep(100);
        }
        fail("nothing listens on port " + port + " after 120 s");
    }

    @Test
    void devinfoMatchesIbvDevinfo() throws Exception {
        for (String flags : List.of("", "-v")) {
            List<String> args = new ArrayList<>(List.of("ibv_devinfo", "-d", device));
            Run c = c(flags.isEmpty() ? args.toArray(String[]::new) : concat(args, flags));
            Run j = java(flags.isEmpty() ? new String[] {"devinfo", "-d", device} : new String[] {"devinfo", "-d", device, flags});
            assertEquals(0, c.status, c.err);
            assertEquals(0, j.status, j.err);
            List<String> cl = sortGids(c.out.lines().toList());
            List<String> jl = sortGids(j.out.lines().toList());
            for (int i = 0; i < Math.max(cl.size(), jl.size()); i++) {
                String a = i < cl.size() ? cl.get(i) : "<none>";
                String b = i < jl.size() ? jl.get(i) : "<none>";
                assertEquals(a, b, "line " + (i + 1) + " of devinfo " + flags + " differs from ibv_devinfo");
            }
        }
        Run list = java("devinfo", "-l");
        assertTrue(list.out.contains("\t" + device + "\n"), list.out);
        Run devices = java("devices");
        assertTrue(devices.out.contains(device), devices.out);
    }

    private static String[] concat(List<String> a, String b) {
        List<String> l = new ArrayList<>(a);
        l.add(b);
        return l.toArray(String[]::new);
    }

    /** GID lines may come in another order; everything else must be line for line the same. */
    private static List<String> sortGids(List<String> lines) {
        List<String> result = new ArrayList<>(lines);
        List<Integer> at = new ArrayList<>();
        List<String> gids = new ArrayList<>();
        for (int i = 0; i < result.size(); i++) {
            if (result.get(i).contains("GID[")) {
                at.add(i);
                gids.add(result.get(i));
            }
        }
        gids.sort(null);
        for (int i = 0; i < at.size(); i++) {
            result.set(at.get(i), gids.get(i));
        }
        return result;
    }

    @ParameterizedTest
    @ValueSource(strings = {"rc", "uc", "ud", "srq"})
    void javaServerCClient(String kind) throws Exception {
        int port = nextPort++;
        List<String> flags = pingPongFlags(kind, port);
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> java(cmd(kind + "-pingpong", flags, "--timeout", "120")));
        awaitListening(port);
        Run client = c(cmd("ibv_" + kind + "_pingpong", flags, "127.0.0.1"));
        Run s = server.get(300, TimeUnit.SECONDS);
        assertEquals(0, client.status, "C client: " + client.out + client.err);
        assertEquals(0, s.status, "Java server: " + s.out + s.err);
        checkPingPong(kind, s.out);
        assertTrue(s.out.contains("data check: all 100 received messages are correct"), s.out);
        assertTrue(!client.out.contains("invalid data"), client.out);
    }

    @ParameterizedTest
    @ValueSource(strings = {"rc", "uc", "ud", "srq"})
    void cServerJavaClient(String kind) throws Exception {
        int port = nextPort++;
        List<String> flags = pingPongFlags(kind, port);
        Process server = new ProcessBuilder(cmd("ibv_" + kind + "_pingpong", flags)).redirectErrorStream(true).start();
        CompletableFuture<String> serverOut = CompletableFuture.supplyAsync(() -> slurp(server.getInputStream()));
        try {
            awaitListening(port);
            Run client = java(cmd(kind + "-pingpong", flags, "--timeout", "120", "127.0.0.1"));
            assertEquals(0, client.status, "Java client: " + client.out + client.err);
            assertTrue(server.waitFor(120, TimeUnit.SECONDS), "C server did not end");
            String so = serverOut.get();
            assertEquals(0, server.exitValue(), "C server: " + so);
            assertTrue(!so.contains("invalid data"), "C server found invalid data: " + so);
            checkPingPong(kind, client.out);
            assertTrue(client.out.contains("data check: all 100 received messages are correct"), client.out);
        } finally {
            server.destroyForcibly();
        }
    }

    /** The flags both sides use: -c, events (one vCPU in the VM), and for UD a size within the port MTU. */
    private static List<String> pingPongFlags(String kind, int port) {
        List<String> f = new ArrayList<>(List.of("-d", device, "-g", gid, "-p", "" + port, "-c", "-e", "-n", "100"));
        if (kind.equals("ud")) {
            f.addAll(List.of("-s", "1024"));
        }
        return f;
    }

    private static String[] cmd(String first, List<String> flags, String... more) {
        List<String> l = new ArrayList<>();
        l.add(first);
        l.addAll(flags);
        l.addAll(List.of(more));
        return l.toArray(String[]::new);
    }

    private static void checkPingPong(String kind, String out) {
        int qps = kind.equals("srq") ? 16 : 1;
        assertEquals(qps, out.lines().filter(l -> l.startsWith("  local address:  LID 0x")).count(), out);
        assertEquals(qps, out.lines().filter(l -> l.startsWith("  remote address: LID 0x")).count(), out);
        assertTrue(out.lines().anyMatch(l -> l.matches("\\d+ bytes in \\d+\\.\\d\\d seconds = \\d+\\.\\d\\d Mbit/sec")), out);
        assertTrue(out.lines().anyMatch(l -> l.matches("100 iters in \\d+\\.\\d\\d seconds = \\d+\\.\\d\\d usec/iter")), out);
    }

    @Test
    void javaPingPongJava() throws Exception {
        int port = nextPort++;
        // the server's loop in a virtual thread (its event waits park it), the client's in the main thread
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> java("rc-pingpong", "-d", device, "-g", gid,
                "-p", "" + port, "-c", "-e", "--virtual", "-n", "50", "--timeout", "120"));
        awaitListening(port);
        Run client = java("rc-pingpong", "-d", device, "-g", gid, "-p", "" + port, "-c", "-e", "-n", "50", "127.0.0.1");
        Run s = server.get(300, TimeUnit.SECONDS);
        assertEquals(0, client.status, client.out + client.err);
        assertEquals(0, s.status, s.out + s.err);
    }

    @ParameterizedTest
    @ValueSource(strings = {"write-lat", "read-lat", "atomic-lat", "send-lat"})
    void latencyTableParsesAndIsOrdered(String tool) throws Exception {
        int port = nextPort++;
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> java(tool, "-d", device, "-x", gid,
                "-p", "" + port, "-n", "200", "--timeout", "120"));
        awaitListening(port);
        Run client = java(tool, "-d", device, "-x", gid, "-p", "" + port, "-n", "200", "--timeout", "120", "127.0.0.1");
        Run s = server.get(300, TimeUnit.SECONDS);
        assertEquals(0, client.status, client.out + client.err);
        assertEquals(0, s.status, s.out + s.err);
        for (Run r : tool.equals("write-lat") || tool.equals("send-lat") ? List.of(client, s) : List.of(client)) {
            List<String> header = r.out.lines().filter(l -> l.startsWith(" #bytes #iterations")).toList();
            assertEquals(1, header.size(), r.out);
            List<String> rows = r.out.lines().filter(l -> l.matches("^ \\d+\\s+200\\s+.*")).toList();
            assertEquals(1, rows.size(), r.out);
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
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> java("send-lat", "-d", device, "-x", gid,
                "-p", "" + port, "-n", "100", "-c", "UC", "-s", "64", "--timeout", "120"));
        awaitListening(port);
        Run client = java("send-lat", "-d", device, "-x", gid, "-p", "" + port, "-n", "100", "-c", "UC", "-s", "64",
                "--timeout", "120", "127.0.0.1");
        Run s = server.get(300, TimeUnit.SECONDS);
        assertEquals(0, client.status, client.out + client.err);
        assertEquals(0, s.status, s.out + s.err);
        assertTrue(client.out.contains("Connection type : UC"), client.out);
        assertTrue(client.out.lines().anyMatch(l -> l.matches("^ 64\\s+100\\s+.*")), client.out);
    }

    @Test
    void asyncwatchTimesOut() {
        Run r = java("asyncwatch", "-d", device, "--timeout", "2");
        assertEquals(0, r.status, r.out + r.err);
        assertTrue(r.out.startsWith(device + ": "), r.out);
    }

    /**
     * Taking the netdev down makes the port report PORT_ERR. (Bringing it up again does not, on the
     * VM's kernel 6.1 rxe, deliver a PORT_ACTIVE to user space within 60 s, though the port goes
     * active and dmesg says "set active": only PORT_ERR is asserted.)
     */
    @Test
    void asyncwatchSeesPortEvents() throws Exception {
        String netdev = System.getenv("RDMA_NETDEV");
        Assumptions.assumeTrue(netdev != null, "RDMA_NETDEV is not set");
        CompletableFuture<Run> watch = CompletableFuture.supplyAsync(() -> java("asyncwatch", "-d", device, "--count", "1", "--timeout", "30"));
        Thread.sleep(2000);   // the device open and the first wait
        try {
            Run down = c("ip", "link", "set", netdev, "down");
            assertEquals(0, down.status, down.err);
            Thread.sleep(1000);
        } finally {
            Run up = c("ip", "link", "set", netdev, "up");
            assertEquals(0, up.status, up.err);
            awaitPortActiveWithGid();
        }
        Run r = watch.get(120, TimeUnit.SECONDS);
        assertEquals(0, r.status, r.out + r.err);
        assertTrue(r.out.lines().anyMatch(l -> l.matches("  event_type IBV_EVENT_PORT_ERR \\(\\d+\\), port 1")), r.out);
    }

    /** After the netdev comes back: the port active and the GID at the index the other tests use back in the table. */
    private static void awaitPortActiveWithGid() throws Exception {
        String last = "";
        for (int i = 0; i < 300; i++) {
            Run v = c("ibv_devinfo", "-d", device, "-v");
            last = v.out;
            boolean active = v.out.contains("PORT_ACTIVE");
            boolean hasGid = v.out.contains("GID[" + String.format("%3s", gid) + "]:");
            if (active && hasGid) {
                return;
            }
            Thread.sleep(100);
        }
        fail("port not active with GID index " + gid + " 30 s after the netdev came up:\n" + last);
    }

    @Test
    void clearErrors() {
        Run refused = java("rc-pingpong", "-d", device, "-g", gid, "-p", "1", "127.0.0.1");
        assertEquals(1, refused.status);
        assertTrue(refused.err.contains("Couldn't connect to 127.0.0.1:1"), refused.err);
        Run missing = java("rc-pingpong", "-d", "nosuchdev0");
        assertTrue(missing.err.contains("IB device nosuchdev0 not found"), missing.err);
        Run devinfo = java("devinfo", "-d", "nosuchdev0");
        assertTrue(devinfo.err.contains("wasn't found"), devinfo.err);
    }

    // ---- the latency tools against perftest's binaries (ib_*_lat), both ways ----

    /**
     * Where a second CPU is online (the VM has two; this JVM is pinned to the first), a process
     * started with this prefix runs on the second: two busy-polling sides on one CPU take turns
     * only at the scheduler's tick.
     */
    static List<String> otherCpu() {
        try {
            String online = Files.readString(Path.of("/sys/devices/system/cpu/online")).trim();
            if (!online.equals("0") && Files.isExecutable(Path.of("/usr/bin/taskset"))) {
                return List.of("taskset", "-c", "1");
            }
        } catch (IOException e) {
            // one CPU it is
        }
        return List.of();
    }

    /**
     * How to start the samples in a JVM of their own: samples/run (which starts faster, from its
     * class data archive) from the repository's root, else this JVM's java and class path.
     */
    static List<String> javaCommand() {
        if (Files.isExecutable(Path.of("samples/run"))) {
            return List.of("samples/run");
        }
        return List.of(ProcessHandle.current().info().command().orElse("java"), "--enable-native-access=ALL-UNNAMED",
                "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
                Main.class.getName());
    }

    /** A command run as a process (a C tool, or this JVM's java with the samples' class path) whose output is collected as it comes. */
    static final class Child implements AutoCloseable {
        final Process process;
        private final StringBuffer output = new StringBuffer();
        private final Thread reader;

        Child(List<String> command) throws IOException {
            process = new ProcessBuilder(command).redirectErrorStream(true).start();
            reader = Thread.ofVirtual().start(() -> {
                try (var in = new java.io.BufferedReader(new java.io.InputStreamReader(process.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    for (String line; (line = in.readLine()) != null; ) {
                        output.append(line).append('\n');
                    }
                } catch (IOException e) {
                    output.append(e).append('\n');
                }
            });
        }

        /**
         * The samples in a JVM of its own: samples/run (which starts faster, from its class data
         * archive) when this runs from the repository's root, else this JVM's java and class path.
         */
        static Child java(String... args) throws IOException {
            List<String> cmd = new ArrayList<>(otherCpu());
            cmd.addAll(javaCommand());
            cmd.addAll(List.of(args));
            return new Child(cmd);
        }

        String output() {
            return output.toString();
        }

        /** Waits for the end; returns the exit status with all the output. */
        Run await(int seconds) throws Exception {
            return await(seconds, "");
        }

        /** As {@link #await(int)}; a failure also shows {@code context} (e.g. the peer's output). */
        Run await(int seconds, String context) throws Exception {
            String command = String.join(" ", process.info().arguments().map(List::of).orElse(List.of()));
            if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                fail(command + " did not end within " + seconds + " s:\n" + output() + "\n" + context);
            }
            reader.join(10_000);
            return new Run(process.exitValue(), output(), "");
        }

        @Override
        public void close() {
            process.destroyForcibly();
        }
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
        List<String> f = new ArrayList<>(List.of("-d", device, "-x", gid, "-p", "" + port, "-n", "200"));
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
            Run s = server.await(120, "Java client: " + client.out + client.err);
            assertEquals(0, client.status, "Java client: " + client.out + client.err);
            assertEquals(0, s.status, "perftest server: " + s.out);
            String type = extra.contains("UD") ? "UD" : extra.contains("UC") ? "UC" : "RC";
            int size = extra.contains("-s") ? Integer.parseInt(extra.replaceAll(".*-s\\s+(\\d+).*", "$1"))
                    : tool.equals("atomic-lat") ? 8 : 2;
            checkLatencyOutput("Java client", client.out, type, true, size);
            checkLatencyOutput("ib_ server", s.out, type, printsTable(tool, false), size);
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
        assertEquals(0, client.status, "perftest client: " + client.out + client.err);
        assertEquals(0, s.status, "Java server: " + s.out + s.err);
        String type = extra.contains("UD") ? "UD" : "RC";
        int size = extra.contains("-s") ? Integer.parseInt(extra.replaceAll(".*-s\\s+(\\d+).*", "$1"))
                : tool.equals("atomic-lat") ? 8 : 2;
        checkLatencyOutput("ib_ client", client.out, type, true, size);
        checkLatencyOutput("Java server", s.out, type, printsTable(tool, false), size);
    }

    /** send-lat over UD, Java to Java: every size of -a up to the MTU (and none above), the GRH on each receive. */
    @Test
    void sendLatOverUdAllSizes() throws Exception {
        int port = nextPort++;
        List<String> flags = List.of("-d", device, "-x", gid, "-p", "" + port, "-n", "20", "-c", "UD", "-a", "--timeout", "120");
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> java(cmd("send-lat", flags)));
        awaitListening(port);
        Run client = java(cmd("send-lat", flags, "127.0.0.1"));
        Run s = server.get(300, TimeUnit.SECONDS);
        assertEquals(0, client.status, client.out + client.err);
        assertEquals(0, s.status, s.out + s.err);
        int mtu = Integer.parseInt(client.out.replaceAll("(?s).* Mtu +: (\\d+)\\[B].*", "$1"));
        List<Integer> sizes = new ArrayList<>();
        for (int n = 2; n <= mtu; n *= 2) {
            sizes.add(n);
        }
        int[] expected = sizes.stream().mapToInt(Integer::intValue).toArray();
        checkLatencyOutput("client", client.out, "UD", true, expected);
        checkLatencyOutput("server", s.out, "UD", true, expected);
    }

    /** A UD message above the MTU is an error on both sides when -s asks for it (perftest's check_mtu). */
    @Test
    void sendLatOverUdRefusesSizeAboveMtu() throws Exception {
        int port = nextPort++;
        List<String> flags = List.of("-d", device, "-x", gid, "-p", "" + port, "-n", "20", "-c", "UD", "-s", "8192",
                "--timeout", "60");
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> java(cmd("send-lat", flags)));
        awaitListening(port);
        Run client = java(cmd("send-lat", flags, "127.0.0.1"));
        Run s = server.get(300, TimeUnit.SECONDS);
        for (Run r : List.of(client, s)) {
            assertEquals(1, r.status, r.out + r.err);
            assertTrue(r.err.contains("Max message size in UD cannot be greater than MTU"), r.err);
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
        List<String> flags = List.of("-d", device, "-x", gid, "-p", "" + port, "-n", "1000000", "--timeout", "" + VANISH_TIMEOUT);
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
        List<String> flags = List.of("-d", device, "-x", gid, "-p", "" + port, "-n", "1000000", "--timeout", "" + VANISH_TIMEOUT);
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
                    : "\nthe " + survivorName + " ended with status " + r.status + ":\n" + r.out + r.err), e);
        }
        Thread.sleep(1000);   // measuring now
        assertTrue(!survivor.isDone(), "the " + survivorName + " ended before the " + victimName + " was killed: "
                + survivor.getNow(null));
        victim.process.destroyForcibly();
        long killed = System.nanoTime();
        Run r = survivor.get(120, TimeUnit.SECONDS);
        double seconds = (System.nanoTime() - killed) / 1e9;
        assertEquals(1, r.status, r.out + r.err);
        assertTrue(r.err.contains("the peer is gone"), r.err);
        assertTrue(seconds < VANISH_TIMEOUT + 45, "the " + survivorName + " took " + seconds + " s to give up (--timeout "
                + VANISH_TIMEOUT + ")");
    }

    /** A latency tool's client with no server: perftest's "Couldn't connect to" message, status 1, at once. */
    @Test
    void latencyRefusedConnection() {
        for (String tool : List.of("write-lat", "send-lat")) {
            long start = System.nanoTime();
            Run r = java(tool, "-d", device, "-x", gid, "-p", "1", "--timeout", "30", "127.0.0.1");
            assertEquals(1, r.status, r.out + r.err);
            assertTrue(r.err.contains("Couldn't connect to 127.0.0.1:1"), r.err);
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
