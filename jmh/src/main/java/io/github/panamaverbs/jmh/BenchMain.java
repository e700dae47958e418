package io.github.panamaverbs.jmh;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.openjdk.jmh.profile.GCProfiler;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs every benchmark (JMH, with the gc profiler), the C ping-pong timed in C, with {@code --critical}
 * a second pass of the poll and post benchmarks with {@code -Dpanamaverbs.critical=none} (every
 * data-path call a plain downcall, the polls included), with
 * {@code --jfr} one with a Flight Recorder recording on (the library's events enabled), and
 * perftest's {@code ib_write_lat}, {@code ib_send_lat}
 * and {@code ib_write_bw} on the same device; prints the table (Java, C, ratio, B/op) and writes
 * {@code results.md}, {@code results.svg}, the raw JMH JSON and perftest's output into the output
 * directory. scripts/bench runs it (inside scripts/with-rdma when the host has no device).
 *
 * <p>Arguments: {@code [--quick] [--out DIR] [--include REGEX] [--tools REGEX] [--no-perftest] [--critical] [--jfr]
 * [--machine TEXT]}; {@code --tools} runs only the tool pairs whose key (see {@link #runTools})
 * matches, and no JMH benchmark.
 */
public final class BenchMain {
    private static final String PKG = BenchMain.class.getPackageName();
    private static final int[] SIZES = {2, 64, 512, 4096};

    private final boolean quick;
    private final Path out;
    private final String include;
    /** The tool pairs to run (their keys); null: every benchmark and pair. */
    private final Pattern toolsOnly;
    private final boolean perftest;
    private final boolean critical;
    private final boolean jfr;
    private final String machine;
    private final Map<String, RunResult> results = new LinkedHashMap<>();
    private final Map<String, double[]> perf = new LinkedHashMap<>();
    /** The C ping-pong's median round trip per "write:size" / "send:size", in ns. */
    private final Map<String, Double> cPingPong = new LinkedHashMap<>();

    private BenchMain(boolean quick, Path out, String include, Pattern toolsOnly, boolean perftest, boolean critical, boolean jfr,
                      String machine) {
        this.toolsOnly = toolsOnly;
        this.jfr = jfr;
        this.quick = quick;
        this.out = out;
        this.include = include;
        this.perftest = perftest;
        this.critical = critical;
        this.machine = machine;
    }

    public static void main(String[] args) throws Exception {
        boolean quick = false;
        boolean perftest = true;
        boolean critical = false;
        boolean jfr = false;
        Path out = Path.of("jmh/results");
        String include = ".*";
        Pattern toolsOnly = null;
        String machine = System.getenv().getOrDefault("BENCH_MACHINE", "unknown machine");
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--quick", "-quick" -> quick = true;
                case "--out" -> out = Path.of(args[++i]);
                case "--include" -> include = args[++i];
                case "--tools" -> toolsOnly = Pattern.compile(args[++i]);
                case "--no-perftest" -> perftest = false;
                case "--critical" -> critical = true;
                case "--jfr" -> jfr = true;
                case "--machine" -> machine = args[++i];
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        Files.createDirectories(out);
        new BenchMain(quick, out.toAbsolutePath(), include, toolsOnly, perftest, critical, jfr, machine).run();
    }

    private ChainedOptionsBuilder options(String regex, String json, String... jvmArgs) {
        List<String> jvm = new ArrayList<>(List.of("--enable-native-access=ALL-UNNAMED",
                "-Dpvbench.dir=" + C.DIR.toAbsolutePath(), "-Xms256m", "-Xmx256m"));
        jvm.addAll(List.of(jvmArgs));
        ChainedOptionsBuilder o = new OptionsBuilder()
                .include(PKG + "\\.(" + regex + ")")
                .addProfiler(GCProfiler.class)
                .jvmArgsAppend(jvm.toArray(String[]::new))
                .resultFormat(ResultFormatType.JSON)
                .result(out.resolve(json).toString())
                .shouldFailOnError(false);
        if (quick) {
            // in the harness JVM for the main pass (one JVM start instead of one per benchmark)
            o.forks(json.contains("main") ? 0 : 1).warmupIterations(1).warmupTime(TimeValue.milliseconds(300))
                    .measurementIterations(1).measurementTime(TimeValue.milliseconds(300))
                    .param("size", "2", "4096");
        }
        // otherwise the classes' @Fork/@Warmup/@Measurement: Java 10 x 1 s warm-up + 5 measured (PingPong 8 + 4; C2 needs 6 to 12
        // under TCG); the C loops 1 + 3
        return o;
    }

    private void jmh(String phase, String regex, String json, String... jvmArgs) throws Exception {
        Collection<RunResult> rs = new Runner(options(regex, json, jvmArgs).build()).run();
        for (RunResult r : rs) {
            String name = r.getParams().getBenchmark().substring(PKG.length() + 1);
            String size = r.getParams().getParam("size");
            results.put(phase + ":" + name + (size == null ? "" : ":" + size), r);
        }
    }

    private void run() throws Exception {
        long t0 = System.nanoTime();
        if (toolsOnly != null) {
            runTools();
            finish(t0);
            return;
        }
        // CallShapes runs on the host (scripts/bench, before the VM): its point is the real CPU's speed
        jmh("main", include.equals(".*") ? "(?!CallShapes\\.|SharedQueue\\.).*" : include, "jmh-main.json");
        if (include.equals(".*") || Pattern.compile(include).matcher("PingPong.write").find()) {
            cPingPong();
        }
        String dataPath = "PollEmpty\\.(api|raw)|WritePoll\\.(api|raw)";
        if (critical) {
            jmh("crit", dataPath, "jmh-critical-off.json", "-Dpanamaverbs.critical=none");
        }
        if (jfr) {
            // the default settings plus the library's events (enabled by default): what an operator runs
            jmh("jfr", dataPath, "jmh-jfr-on.json", "-XX:StartFlightRecording:filename=" + out.resolve("bench.jfr"));
        }
        if (perftest) {
            runPerftest();
            runTools();
        }
        finish(t0);
    }

    /** Prints and writes the table and chart; fails the run if a benchmark of a full run has no figure. */
    private void finish(long t0) throws IOException {
        String table = table() + channelTable() + hostCalls();
        String when = ZonedDateTime.now().format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm z"));
        String header = "panama-verbs benchmarks, " + when + (quick ? " (quick mode: figures are rough)" : "")
                + "\nMachine: " + machine + "; device " + Rdma.DEVICE
                + "; " + System.getProperty("java.vm.name") + " " + System.getProperty("java.version")
                + String.format(Locale.ROOT, "; run took %.1f min", (System.nanoTime() - t0) / 60e9) + "\n\n";
        System.out.println();
        System.out.println(header + table);
        Files.writeString(out.resolve("results.md"), header + table);
        Files.writeString(out.resolve("results.svg"), Chart.svg(rows, "Java time / C time (1.0 = as fast as C)"
                + (quick ? " [quick run]" : ""), when + ", " + machine));
        // What CI checks: every benchmark ran and produced a number, Java and C alike (never how fast).
        List<String> missing = rows.stream()
                .filter(r -> !(r.java() > 0) || !(r.c() > 0 || r.name().startsWith("tools: ") && r.perftest() > 0))
                .map(Row::name).toList();
        if (include.equals(".*") && toolsOnly == null && !missing.isEmpty()) {
            System.err.println("benchmarks without a figure: " + String.join("; ", missing));
            System.exit(1);
        }
        System.out.println(rows.size() + " benchmarks produced figures");
    }

    /** The ping-pong's C twin, timed per round trip in C (see {@link C#pingPongTimes}). */
    private void cPingPong() {
        for (String kind : new String[] {"write", "send"}) {
            for (int size : quick ? new int[] {2, 4096} : SIZES) {
                long[] t = C.pingPongTimes(Rdma.DEVICE, kind.equals("send"), size, quick ? 50 : 500, quick ? 200 : 3000);
                int n = t.length;
                double median = n % 2 == 0 ? (t[n / 2 - 1] + t[n / 2]) / 2.0 : t[n / 2];
                cPingPong.put(kind + ":" + size, median);
                System.out.printf(Locale.ROOT, "C ping-pong %s %d B: median round trip %.1f us of %d%n", kind, size,
                        median / 1000, n);
            }
        }
    }

    // ---------------------------------------------------------------- perftest

    private void runPerftest() throws IOException, InterruptedException {
        // the benchmarks' device (Rdma: the integration tests' rule), for perftest's flags too
        String dev = Rdma.DEVICE.name();
        int gid = Rdma.DEVICE.gidIndex();
        int port = Rdma.DEVICE.port();
        String common = "-d " + dev + " -i " + port + " -x " + gid + " -F";
        StringBuilder log = new StringBuilder();
        for (String tool : new String[] {"ib_write_lat", "ib_send_lat"}) {
            for (int size : quick ? new int[] {2, 4096} : SIZES) {
                String args = common + " -s " + size + " -n " + (quick ? 200 : 2000);
                String text = pair(tool, args, log);
                double[] v = parse(text, size, 9);
                if (v != null) {
                    // t_typical (median) and t_avg, in µs
                    perf.put(tool + ":" + size, new double[] {v[4], v[5]});
                }
            }
        }
        String text = pair("ib_write_bw", common + " -s 64 -n " + (quick ? 2000 : 50000), log);
        double[] v = parse(text, 64, 5);
        if (v != null) {
            perf.put("ib_write_bw:64", new double[] {v[4]}); // Mpps
        }
        Files.writeString(out.resolve("perftest.txt"), log);
    }

    /**
     * The comparison users make: the Java tools ({@code samples/run}) against perftest's, each as a
     * server and client pair of processes on this device (as {@link #perftest}), 2 bytes, at
     * perftest's default 1,000 iterations and at 100,000 (quick: write-lat at 200); the 64-byte
     * message rate of {@code write-bw} against {@code ib_write_bw}; {@code rc-pingpong -e} against
     * {@code ibv_rc_pingpong -e}; the channel layer's RPC round trip ({@code rpc-ping}: {@link #rpcPing})
     * against {@code ib_send_lat} of the same size (64 B and 4 KiB busy-polling, 64 B on completion
     * events against {@code -e}; quick: the 64 B busy pair). In {@link #TOOL_ROUNDS} rounds (quick: one), each round running
     * every pair once, the Java tool first in odd rounds and perftest first in even ones; a figure
     * is the median of the rounds. One pair run is not enough: on the emulated VM a run's latency
     * settles on one of a few levels about 12 us apart (ib_read_lat's t_typical 30, 30, 30 and 58 us
     * in four runs in a row) whichever tool runs. Results: {@link #tools}, every round in
     * {@link #toolRounds}, and the tools' output in tools.txt.
     */
    private void runTools() throws IOException, InterruptedException {
        // the benchmarks' device (Rdma: the integration tests' rule), for perftest's flags too
        String dev = Rdma.DEVICE.name();
        int gid = Rdma.DEVICE.gidIndex();
        int port = Rdma.DEVICE.port();
        String common = "-d " + dev + " -i " + port + " -x " + gid;
        StringBuilder log = new StringBuilder();
        String[][] pairs = quick ? new String[][] {{"write-lat", "ib_write_lat"}}
                : new String[][] {{"write-lat", "ib_write_lat"}, {"send-lat", "ib_send_lat"}, {"read-lat", "ib_read_lat"}};
        // per key: Java's and perftest's figures of each round (t_typical and 99% in us; Mpps; us/iter)
        Map<String, List<double[]>> runs = new LinkedHashMap<>();
        int rounds = Integer.getInteger("pvbench.toolRounds", quick ? 1 : TOOL_ROUNDS);
        for (int round = 1; round <= rounds; round++) {
            boolean javaFirst = round % 2 == 1;
            log.append("==== round ").append(round).append(" of ").append(rounds).append('\n');
            for (String[] pair : pairs) {
                for (int iters : quick ? new int[] {200} : new int[] {1000, 100_000}) {
                    if (!wanted(pair[0] + ":" + iters)) {
                        continue;
                    }
                    String args = common + " -s 2 -n " + iters;
                    double[][] jc = inTurn(javaFirst, () -> parse(pair("samples/run " + pair[0], args + " --timeout 120", log), 2, 9),
                            () -> parse(pair(pair[1], args + " -F", log), 2, 9));
                    double[] j = jc[0];
                    double[] c = jc[1];
                    runs.computeIfAbsent(pair[0] + ":" + iters, k -> new ArrayList<>()).add(new double[] {
                            j == null ? Double.NaN : j[4], c == null ? Double.NaN : c[4],
                            j == null ? Double.NaN : j[7], c == null ? Double.NaN : c[7]});
                }
            }
            String args = common + " -s 64 -n " + (quick ? 2000 : 50000);
            if (wanted("write-bw")) {
                double[][] jc = inTurn(javaFirst, () -> parse(pair("samples/run write-bw", args + " --timeout 120", log), 64, 5),
                        () -> parse(pair("ib_write_bw", args + " -F", log), 64, 5));
                runs.computeIfAbsent("write-bw", k -> new ArrayList<>()).add(new double[] {
                        jc[0] == null ? Double.NaN : jc[0][4], jc[1] == null ? Double.NaN : jc[1][4]});
            }
            // Woken by completion events: rdma-core's ibv_rc_pingpong -e beside the Java rc-pingpong -e whose
            // loop runs in a virtual thread (each wait parks it; the event loop thread wakes it)
            String ev = "-d " + dev + " -i " + port + " -g " + gid + " -e -n " + (quick ? 200 : 1000);
            if (wanted("rc-pingpong-e")) {
                double[][] u = inTurn(javaFirst, () -> new double[] {usecPerIter(pair("samples/run rc-pingpong", ev + " --virtual --timeout 120", log))},
                        () -> new double[] {usecPerIter(pair("ibv_rc_pingpong", ev, log))});
                runs.computeIfAbsent("rc-pingpong-e", k -> new ArrayList<>()).add(new double[] {u[0][0], u[1][0]});
            }
            // The channel layer's RPC round trip (rpc-ping: request and reply of SIZE bytes, each reply's
            // bytes checked) beside the raw send/receive round trip of the same size: the Java pair below the
            // channel (send-lat; on events rc-pingpong -e, a virtual thread) and perftest's (ib_send_lat);
            // -r: an RDMA READ through the exported region's token, beside read-lat and ib_read_lat;
            // -P: the rate of 8 calls in flight, beside the message rate of send-bw and ib_send_bw;
            // -T: the same calls over the JDK's TCP sockets (no pair beside it)
            for (String[] rpc : quick ? new String[][] {{"64", "busy"}}
                    : new String[][] {{"64", "busy"}, {"4096", "busy"}, {"64", "events"}, {"64", "read"}, {"64", "pipelined"},
                        {"64", "tcp"}}) {
                String key = "rpc:" + rpc[0] + ":" + rpc[1];
                if (!wanted(key)) {
                    continue;
                }
                String size = rpc[0];
                int n = quick ? 200 : 1000;
                double[] row = switch (rpc[1]) {
                    case "busy", "read" -> {
                        boolean read = rpc[1].equals("read");
                        String lat = common + " -s " + size + " -n " + n;
                        // ib_send_lat and send-lat print half the round trip (perftest divides a send's by 2, a
                        // READ's by 1): rpc-ping's round trip goes beside twice their figures
                        double trip = read ? 1 : 2;
                        double[][] r = inTurn(javaFirst, () -> rpcPing("-s " + size + " -n " + n + " -b" + (read ? " -r" : ""), log),
                                () -> parse(pair("samples/run " + (read ? "read-lat" : "send-lat"), lat + " --timeout 120", log), Integer.parseInt(size), 9),
                                () -> parse(pair(read ? "ib_read_lat" : "ib_send_lat", lat + " -F", log), Integer.parseInt(size), 9));
                        yield new double[] {at(r[0], 0), trip * at(r[2], 4), at(r[0], 1), trip * at(r[2], 7), trip * at(r[1], 4)};
                    }
                    case "events" -> {
                        String pp = "-d " + dev + " -i " + port + " -g " + gid + " -e -s " + size + " -n " + n;
                        double[][] r = inTurn(javaFirst, () -> rpcPing("-s " + size + " -n " + n, log),
                                () -> new double[] {usecPerIter(pair("samples/run rc-pingpong", pp + " --virtual --timeout 120", log))},
                                () -> parse(pair("ib_send_lat", common + " -s " + size + " -n " + n + " -e -F", log), Integer.parseInt(size), 9));
                        yield new double[] {at(r[0], 0), 2 * at(r[2], 4), at(r[0], 1), 2 * at(r[2], 7), at(r[1], 0)};
                    }
                    case "pipelined" -> { // rates in Mpps
                        String bw = common + " -s " + size + " -n 50000";
                        double[][] r = inTurn(javaFirst, () -> rpcRate("-s " + size + " -n 20000 -b -P 8", log),
                                () -> parse(pair("samples/run send-bw", bw + " --timeout 120", log), Integer.parseInt(size), 5),
                                () -> parse(pair("ib_send_bw", bw + " -F", log), Integer.parseInt(size), 5));
                        yield new double[] {at(r[0], 0), at(r[2], 4), Double.NaN, Double.NaN, at(r[1], 4)};
                    }
                    default -> { // tcp
                        double[] t = rpcPing("-s " + size + " -n " + n + " -T", log);
                        yield new double[] {at(t, 0), Double.NaN, at(t, 1), Double.NaN, Double.NaN};
                    }
                };
                runs.computeIfAbsent(key, k -> new ArrayList<>()).add(row);
            }
        }
        for (Map.Entry<String, List<double[]>> e : runs.entrySet()) {
            List<double[]> rs = e.getValue();
            double[] med = new double[rs.get(0).length];
            for (int i = 0; i < med.length; i++) {
                final int col = i;
                med[i] = medianOf(rs.stream().mapToDouble(r -> r[col]).toArray());
            }
            tools.put(e.getKey(), med);
            toolRounds.put(e.getKey(), rs);
        }
        Files.writeString(out.resolve("tools.txt"), log);
    }

    /** Rounds of the tool pairs in a full run (see {@link #runTools}); -Dpvbench.toolRounds=N sets another number. */
    static final int TOOL_ROUNDS = 3;

    /** A tool pair's measurement: its figures, or null if the pair did not produce them. */
    private interface PairRun {
        double[] run() throws IOException, InterruptedException;
    }

    /** Whether the tool pair {@code key} runs (every one unless {@code --tools}). */
    private boolean wanted(String key) {
        return toolsOnly == null || toolsOnly.matcher(key).find();
    }

    /** {@code v[i]}, or NaN if the pair gave no figures. */
    private static double at(double[] v, int i) {
        return v == null ? Double.NaN : v[i];
    }

    /**
     * Runs {@code runs} in the order given ({@code forward}) or the reverse, so that neither side
     * of a comparison always goes first; returns their figures in the order given.
     */
    private static double[][] inTurn(boolean forward, PairRun... runs) throws IOException, InterruptedException {
        double[][] r = new double[runs.length][];
        for (int i = 0; i < runs.length; i++) {
            int k = forward ? i : runs.length - 1 - i;
            r[k] = runs[k].run();
        }
        return r;
    }

    /** The median of {@code v}, NaNs (a failed pair) left out; NaN if all are. */
    private static double medianOf(double[] v) {
        double[] s = Arrays.stream(v).filter(x -> !Double.isNaN(x)).sorted().toArray();
        int n = s.length;
        return n == 0 ? Double.NaN : n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }

    /** Java tool / perftest figures per "tool:iters" (medians of the rounds): t_typical, perftest's t_typical, 99%, perftest's 99% (µs); "write-bw": Mpps; "rc-pingpong-e": us/iter. */
    private final Map<String, double[]> tools = new LinkedHashMap<>();

    /** The same, every round's. */
    private final Map<String, List<double[]>> toolRounds = new LinkedHashMap<>();

    /**
     * Runs {@code tool args} as a server (vCPU 1 when there is one) and as its client (vCPU 0) on the
     * same device, over 127.0.0.1, the client again while its server does not listen yet; returns the
     * client's output, then the server's. {@code nproc --all}: this JVM is pinned to vCPU 0, and plain
     * nproc counts only the CPUs it may use (with both on one vCPU, each round trip took two 4 ms
     * scheduler slices).
     */
    private static String pair(String tool, String args, StringBuilder log) throws IOException, InterruptedException {
        return pair(tool + " " + args, tool + " " + args + " 127.0.0.1", false, log);
    }

    /**
     * Runs {@code server} (vCPU 1 when there is one) and {@code client} (vCPU 0, again while the
     * server does not listen yet); a server that serves until stopped ({@code stop}) gets SIGTERM
     * after the client, then SIGKILL. Returns the client's output, then the server's.
     */
    private static String pair(String server, String client, boolean stop, StringBuilder log) throws IOException, InterruptedException {
        String script = "cpus=$(nproc --all); srv=$(( cpus > 1 ? 1 : 0 )); "
                + "taskset -c $srv timeout 900 " + server + " >/tmp/pv-pair-server.txt 2>&1 & s=$!; "
                + "ok=1; for i in $(seq 30); do sleep 0.5; "
                + "if taskset -c 0 timeout 900 " + client + "; then ok=0; break; fi; "
                + "kill -0 $s 2>/dev/null || break; done; "
                + (stop ? "kill $s 2>/dev/null; for i in $(seq 20); do kill -0 $s 2>/dev/null || break; sleep 0.5; done; kill -9 $s 2>/dev/null; "
                : "[ $ok = 0 ] || kill $s 2>/dev/null; ")
                + "wait $s; echo '-- server:'; cat /tmp/pv-pair-server.txt; exit $ok";
        Process p = new ProcessBuilder("bash", "-c", script).redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes());
        boolean done = p.waitFor(60, TimeUnit.SECONDS);
        log.append("$ ").append(client).append(done ? " (exit " + p.exitValue() + ")" : " (timed out)")
                .append('\n').append(text).append('\n');
        System.out.println("pair: " + client);
        return text;
    }

    private static int rpcPort = 7490;

    /**
     * An {@code rpc-ping} pair on the benchmarks' device (its IP address, RDMA_IP). Returns the
     * client's median and 99th percentile (us), or null.
     */
    private static double[] rpcPing(String args, StringBuilder log) throws IOException, InterruptedException {
        String text = rpcPair(args, log);
        Matcher m = Pattern.compile("median ([0-9.]+) us, average [0-9.]+ us, 99% ([0-9.]+) us").matcher(text);
        return m.find() ? new double[] {Double.parseDouble(m.group(1)), Double.parseDouble(m.group(2))} : null;
    }

    /** An {@code rpc-ping -P} pair (as {@link #rpcPing}): its rate in millions of calls a second, or null. */
    private static double[] rpcRate(String args, StringBuilder log) throws IOException, InterruptedException {
        Matcher m = Pattern.compile(": ([0-9.]+) calls/s").matcher(rpcPair(args, log));
        return m.find() ? new double[] {Double.parseDouble(m.group(1)) / 1e6} : null;
    }

    /** The output of an {@code rpc-ping} pair with {@code args} (the server's flags too), over RDMA_IP. */
    private static String rpcPair(String args, StringBuilder log) throws IOException, InterruptedException {
        String ip = System.getenv("RDMA_IP");
        if (ip == null) {
            log.append("rpc-ping: no RDMA_IP (the device's address) in the environment\n");
            return "";
        }
        // the server takes the flags both sides need (-s -b -r -T); -n and -P are the client's alone
        String serverArgs = args.replaceAll("-[nP] [0-9]+ ?", "").trim();
        String port = "-p " + rpcPort++ + " ";
        return pair("samples/run rpc-ping " + port + serverArgs + " " + ip, "samples/run rpc-ping " + port + args + " --client " + ip, true, log);
    }

    /** The client's "N iters in S seconds = U usec/iter" of rc-pingpong (its output comes first), or NaN. */
    private static double usecPerIter(String text) {
        Matcher m = Pattern.compile("= ([0-9.]+) usec/iter").matcher(text);
        return m.find() ? Double.parseDouble(m.group(1)) : Double.NaN;
    }

    /** The numbers of perftest's result line for {@code size}, or null. */
    private static double[] parse(String text, int size, int columns) {
        Pattern line = Pattern.compile("^\\s*" + size + "\\s+\\d+(\\s+[0-9.]+)+\\s*$", Pattern.MULTILINE);
        Matcher m = line.matcher(text);
        if (!m.find()) {
            return null;
        }
        String[] f = m.group().trim().split("\\s+");
        if (f.length < columns) {
            return null;
        }
        double[] v = new double[f.length];
        for (int i = 0; i < f.length; i++) {
            v[i] = Double.parseDouble(f[i]);
        }
        return v;
    }

    // ---------------------------------------------------------------- table

    /** One line of the table; times in ns per operation (NaN when absent). */
    record Row(String name, double java, double c, double perftest, double bytesPerOp, double cBytesPerOp, String unit) {
        double ratio() {
            return java / c;
        }

        double perfRatio() {
            return java / perftest;
        }
    }

    private final List<Row> rows = new ArrayList<>();

    private double score(String key) {
        RunResult r = results.get(key);
        return r == null ? Double.NaN : r.getPrimaryResult().getScore();
    }

    private double median(String key) {
        RunResult r = results.get(key);
        return r == null ? Double.NaN : r.getPrimaryResult().getStatistics().getPercentile(50);
    }

    private double bytesPerOp(String key) {
        RunResult r = results.get(key);
        if (r == null) {
            return Double.NaN;
        }
        for (Map.Entry<String, Result> e : r.getSecondaryResults().entrySet()) {
            if (e.getKey().endsWith("gc.alloc.rate.norm")) {
                return e.getValue().getScore();
            }
        }
        return Double.NaN;
    }

    private void row(String name, String javaKey, String cKey, String unit) {
        if (!results.containsKey(javaKey)) {
            return;
        }
        rows.add(new Row(name, score(javaKey), score(cKey), Double.NaN, bytesPerOp(javaKey), bytesPerOp(cKey), unit));
    }

    private String table() {
        rows.clear();
        row("no-op call: FFM downcall (C = JNI)", "main:CallOverhead.ffm", "main:CallOverhead.jni", "ns");
        row("no-op call: FFM critical (C = JNI)", "main:CallOverhead.ffmCritical", "main:CallOverhead.jni", "ns");
        for (String b : new String[] {"PollEmpty", "WritePoll"}) {
            String what = b.equals("PollEmpty") ? "poll empty CQ" : "64 B RDMA write + poll";
            row(what + ": typed API", "main:" + b + ".api", "main:" + b + ".c", "ns");
            row(what + ": raw bindings", "main:" + b + ".raw", "main:" + b + ".c", "ns");
            row(what + ": typed API, no critical poll", "crit:" + b + ".api", "main:" + b + ".c", "ns");
            row(what + ": raw bindings, no critical poll", "crit:" + b + ".raw", "main:" + b + ".c", "ns");
            row(what + ": typed API, JFR recording on", "jfr:" + b + ".api", "main:" + b + ".c", "ns");
            if (b.equals("PollEmpty")) {
                row("poll empty extended CQ (start_poll): typed API", "main:ExtendedPath.pollEmpty",
                        "main:ExtendedPath.cPollEmpty", "ns");
            } else {
                row(what + ": ibv_wr_* and start_poll, typed API", "main:ExtendedPath.writePoll",
                        "main:ExtendedPath.cWritePoll", "ns");
            }
        }
        for (String kind : new String[] {"write", "send"}) {
            String tool = kind.equals("write") ? "ib_write_lat" : "ib_send_lat";
            for (int size : SIZES) {
                String jk = "main:PingPong." + kind + ":" + size;
                if (!results.containsKey(jk)) {
                    continue;
                }
                // half round trips: JMH's op is a round trip; SampleTime p50 in µs -> ns; C's median in ns
                double java = median(jk) * 1000 / 2;
                double c = cPingPong.getOrDefault(kind + ":" + size, Double.NaN) / 2;
                double[] p = perf.get(tool + ":" + size);
                rows.add(new Row("ping-pong " + kind + " " + size + " B, half RTT p50", java, c,
                        p == null ? Double.NaN : p[0] * 1000, bytesPerOp(jk) / 2, Double.NaN, "ns"));
            }
        }
        row("event-driven send ping-pong 4096 B, round trip: CompletionQueue.await", "main:EventPingPong.send",
                "main:EventPingPong.c", "ns");
        row("event-driven send ping-pong 4096 B, round trip: await in a virtual thread", "main:EventPingPong.sendVirtual",
                "main:EventPingPong.c", "ns");
        double[] bw = perf.get("ib_write_bw:64");
        rows.add(new Row("64 B writes, chains of " + MessageRate.BATCH + ", per message", score("main:MessageRate.api"),
                score("main:MessageRate.c"), bw == null ? Double.NaN : 1000 / bw[0], bytesPerOp("main:MessageRate.api"),
                bytesPerOp("main:MessageRate.c"), "ns"));
        for (Map.Entry<String, double[]> e : tools.entrySet()) {
            double[] v = e.getValue();
            if (e.getKey().equals("rc-pingpong-e")) {
                rows.add(new Row("tools: rc-pingpong -e (events; Java in a virtual thread), 4096 B, per iteration "
                        + "(perftest = ibv_rc_pingpong -e)", v[0] * 1000, Double.NaN, v[1] * 1000, Double.NaN, Double.NaN, "ns"));
                continue;
            }
            if (e.getKey().startsWith("rpc:") && e.getKey().endsWith(":read")) {
                String size = e.getKey().split(":")[1];
                rows.add(new Row("tools: rpc-ping -r -s " + size + " -b (RDMA READ through a RegionToken), median (perftest = ib_read_lat -s "
                        + size + ", t_typical)", v[0] * 1000, Double.NaN, v[1] * 1000, Double.NaN, Double.NaN, "ns"));
                continue;
            }
            if (e.getKey().endsWith(":tcp")) {
                continue; // no perftest beside it: in the channel table only
            }
            if (e.getKey().endsWith(":pipelined")) {
                String size = e.getKey().split(":")[1];
                rows.add(new Row("tools: rpc-ping -P 8 -b -s " + size + " (8 calls in flight), per call (1/call rate; perftest = "
                        + "ib_send_bw -s " + size + ", 1/msg rate)", 1000 / v[0], Double.NaN, 1000 / v[1], Double.NaN, Double.NaN, "ns"));
                continue;
            }
            if (e.getKey().startsWith("rpc:")) {
                String[] k = e.getKey().split(":");
                boolean busy = k[2].equals("busy");
                rows.add(new Row("tools: rpc-ping -s " + k[1] + (busy ? " -b" : "") + " (channel RPC, " + (busy ? "busy polling" : "completion events")
                        + "), round trip median (perftest = ib_send_lat -s " + k[1] + (busy ? "" : " -e") + ", round trip: 2 x t_typical)",
                        v[0] * 1000, Double.NaN, v[1] * 1000, Double.NaN, Double.NaN, "ns"));
                continue;
            }
            if (e.getKey().equals("write-bw")) {
                rows.add(new Row("tools: write-bw -s 64, per message (1/msg rate)", 1000 / v[0], Double.NaN, 1000 / v[1],
                        Double.NaN, Double.NaN, "ns"));
                continue;
            }
            String[] k = e.getKey().split(":");
            String what = "tools: " + k[0] + " 2 B, " + String.format(Locale.ROOT, "%,d", Integer.parseInt(k[1])) + " iters, ";
            rows.add(new Row(what + "t_typical", v[0] * 1000, Double.NaN, v[1] * 1000, Double.NaN, Double.NaN, "ns"));
            rows.add(new Row(what + "99%", v[2] * 1000, Double.NaN, v[3] * 1000, Double.NaN, Double.NaN, "ns"));
        }

        StringBuilder t = new StringBuilder();
        t.append("| Benchmark | Java | C | Java/C | perftest | Java/perftest | Java B/op | C B/op |\n");
        t.append("|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Row r : rows) {
            if (Double.isNaN(r.java())) {
                continue;
            }
            t.append("| ").append(r.name())
                    .append(" | ").append(fmt(r.java(), r.unit()))
                    .append(" | ").append(fmt(r.c(), r.unit()))
                    .append(" | ").append(ratio(r.ratio()))
                    .append(" | ").append(fmt(r.perftest(), r.unit()))
                    .append(" | ").append(ratio(r.perfRatio()))
                    .append(" | ").append(bytes(r.bytesPerOp()))
                    .append(" | ").append(bytes(r.cBytesPerOp()))
                    .append(" |\n");
        }
        t.append("\nTimes per operation. Ping-pong: half a round trip, the median (JMH SampleTime for Java; the same"
                + " loop in C timing each round trip itself; perftest's t_typical). Other rows: means; C = the same loop"
                + " in C (jmh/src/main/c/pvbench.c) called once through FFM for N iterations, and for the call rows a"
                + " JNI native method. perftest = ib_write_lat / ib_send_lat (server and client processes, one vCPU"
                + " each) and ib_write_bw -s 64 (1/msg rate), same device, same job. B/op: JMH -prof gc,"
                + " gc.alloc.rate.norm, which includes JMH's own bookkeeping: the C B/op column is that share alone (a C"
                + " loop cannot allocate on the Java heap), and the ping-pong rows' larger figures are SampleTime keeping"
                + " every sample on the heap. Tools: the Java tool's pair (samples/run, server and client processes, one"
                + " vCPU each, 2 B) beside perftest's pair (the perftest column) at the same iterations, each a fresh"
                + " process as a user runs it; t_typical and 99% as the client prints them, the median of "
                + (toolRounds.isEmpty() || toolRounds.values().iterator().next().size() < 2 ? "one round"
                : toolRounds.values().iterator().next().size() + " rounds (the Java pair first in odd rounds, perftest's in even"
                + " ones; every round below)") + ".\n");
        t.append(roundsTable());
        return t.toString();
    }

    /**
     * The channel layer beside what it is built on, from the rpc-ping rows: its round trip (or
     * rate) against the Java pair below the channel (the targets: at most 1.15x its round
     * trip, 1.10x for a READ, at least 0.8x its rate) and against perftest's; the TCP line.
     */
    private String channelTable() {
        if (tools.keySet().stream().noneMatch(k -> k.startsWith("rpc:"))) {
            return "";
        }
        StringBuilder t = new StringBuilder("\n| Channel layer (rpc-ping pair, medians) | rpc-ping | Java below the channel | ratio (target) | perftest | ratio |\n"
                + "|---|---:|---:|---:|---:|---:|\n");
        for (Map.Entry<String, double[]> e : tools.entrySet()) {
            String[] k = e.getKey().split(":");
            if (!k[0].equals("rpc")) {
                continue;
            }
            double[] v = e.getValue();
            switch (k[2]) {
                case "pipelined" -> t.append(String.format(Locale.ROOT, "| %s B calls, 8 in flight, busy (send-bw; ib_send_bw), M/s | %.4f | %.4f | %.2f (>= 0.8) | %.4f | %.2f |%n",
                        k[1], v[0], v[4], v[0] / v[4], v[1], v[0] / v[1]));
                case "tcp" -> t.append(String.format(Locale.ROOT, "| %s B calls over TCP (JDK sockets, same VM), round trip | %.1f us | | | | |%n", k[1], v[0]));
                default -> {
                    boolean read = k[2].equals("read");
                    String below = read ? "read-lat; ib_read_lat" : k[2].equals("events") ? "rc-pingpong -e --virtual; ib_send_lat -e x 2"
                            : "send-lat x 2; ib_send_lat x 2";
                    t.append(String.format(Locale.ROOT, "| %s B %s, %s (%s) | %.1f us | %.1f us | %.2f (<= %s) | %.1f us | %.2f |%n",
                            k[1], read ? "RDMA READ through a RegionToken" : "call, round trip", read || k[2].equals("busy") ? "busy" : "events",
                            below, v[0], v[4], v[0] / v[4], read ? "1.10" : "1.15", v[1], v[0] / v[1]));
                }
            }
        }
        return t.toString();
    }

    /** Every round of the tool pairs (full runs): Java / perftest per round, t_typical (and the message rate, us/iter). */
    private String roundsTable() {
        if (toolRounds.isEmpty() || toolRounds.values().iterator().next().size() < 2) {
            return "";
        }
        StringBuilder t = new StringBuilder("\n| Tool pair, every round (Java / perftest) |");
        int n = toolRounds.values().iterator().next().size();
        for (int r = 1; r <= n; r++) {
            t.append(" round ").append(r).append(" |");
        }
        t.append("\n|---|").append("---:|".repeat(n)).append('\n');
        for (Map.Entry<String, List<double[]>> e : toolRounds.entrySet()) {
            String k = e.getKey();
            String what = k.equals("write-bw") ? "write-bw -s 64, Mpps" : k.equals("rc-pingpong-e") ? "rc-pingpong -e --virtual, us/iter"
                    : k.endsWith(":pipelined") ? "rpc-ping -P 8 / send-bw / ib_send_bw, 64 B, M calls or msgs/s"
                    : k.endsWith(":tcp") ? "rpc-ping -T (TCP), 64 B, median us (99%)"
                    : k.startsWith("rpc:") ? "rpc-ping " + k.substring(4).replace(":", " B, ") + (k.endsWith(":read")
                    ? " / read-lat / ib_read_lat" : k.endsWith(":events") ? " / rc-pingpong -e / ib_send_lat -e x 2"
                    : " / send-lat x 2 / ib_send_lat x 2") + ", median us (99%)"
                    : k.replace(":", " 2 B, ") + " iters, t_typical us (99%)";
            t.append("| ").append(what).append(" |");
            for (double[] v : e.getValue()) {
                boolean rate = k.equals("write-bw") || k.endsWith(":pipelined");
                t.append(' ').append(String.format(Locale.ROOT, rate ? "%.4f" : "%.1f", v[0]));
                if (v.length == 5) {
                    t.append(String.format(Locale.ROOT, rate ? " / %.4f" : " / %.1f", v[4]));
                }
                if (!k.endsWith(":tcp")) {
                    t.append(String.format(Locale.ROOT, rate ? " / %.4f" : " / %.1f", v[1]));
                }
                if (v.length >= 4 && !rate) {
                    t.append(String.format(Locale.ROOT, " (%.1f / %.1f)", v[2], v[3]));
                }
                t.append(" |");
            }
            t.append('\n');
        }
        return t.toString();
    }

    /**
     * The host's call-shape table, from jmh-host.json (CallShapes, which scripts/bench runs on the host
     * before the VM starts), or nothing when there is none.
     */
    private String hostCalls() throws IOException {
        Path json = out.resolve("jmh-host.json");
        if (!Files.isReadable(json)) {
            return "";
        }
        Map<String, Double> ns = new LinkedHashMap<>();
        Matcher m = Pattern.compile("\"benchmark\"\\s*:\\s*\"[^\"]*\\.CallShapes\\.(\\w+)\".*?\"primaryMetric\"\\s*:\\s*\\{\\s*"
                + "\"score\"\\s*:\\s*([-0-9.eE+]+)", Pattern.DOTALL).matcher(Files.readString(json));
        while (m.find()) {
            ns.put(m.group(1), Double.parseDouble(m.group(2)));
        }
        String[][] shapes = {
            {"C, through the provider's function pointer (as libibverbs' inline functions)", "C"},
            {"JNI native method, long arguments (as DiSNI)", "Jni"},
            {"FFM, the typed API's argument shapes: the queue's segment (its shared arena), the request or batch a plain address"
                    + " (**the typed API's post**)", "OneShared"},
            {"the same, critical (**the typed API's poll** of a classic queue)", "OneSharedCritical"},
            {"FFM, every segment in a shared arena (what the typed API passed before)", "SharedArena"},
            {"the same, critical", "SharedArenaCritical"},
            {"FFM, global segments (no liveness check: a closed queue would reach C)", "Global"},
            {"the same, critical", "GlobalCritical"},
            {"FFM, raw addresses (long parameters)", "Raw"},
            {"the same, critical", "RawCritical"}};
        StringBuilder t = new StringBuilder("\n| Call on the host CPU (no device), ns per call | poll_cq(fn, cq, 16, wc) | post_send(fn, qp, wr, bad_wr) |\n"
                + "|---|---:|---:|\n");
        String[][] typed = {
            {"**typed API**: `CompletionQueue.poll`, `QueuePair.postSend` (any thread)", "typedPoll", "typedPost"},
            {"**typed API, confined view** (`cq.confined().poll`, `qp.confined().postSend`: the owner thread's fast form)",
                    "typedPollConfined", "typedPostConfined"},
            {"the same, the post critical (providers that post in user space, e.g. mlx5)", "-", "typedPostConfinedCritical"}};
        for (String[] shape : shapes) {
            row(t, shape[0], ns.get("poll" + shape[1]), ns.get("post" + shape[1]));
        }
        for (String[] shape : typed) {
            row(t, shape[0], ns.get(shape[1]), ns.get(shape[2]));
        }
        Matcher shared = Pattern.compile("\"benchmark\"\\s*:\\s*\"[^\"]*\\.SharedQueue\\.(\\w+)\".*?\"primaryMetric\"\\s*:\\s*\\{\\s*"
                + "\"score\"\\s*:\\s*([-0-9.eE+]+)", Pattern.DOTALL).matcher(Files.readString(json));
        Map<String, Double> two = new LinkedHashMap<>();
        while (shared.find()) {
            two.put(shared.group(1), Double.parseDouble(shared.group(2)));
        }
        if (!two.isEmpty()) {
            t.append("\n| Two threads, one queue (no device), ns per call per thread | poll | post |\n|---|---:|---:|\n");
            row(t, "C, each thread through the function pointer", two.get("pollCShared"), two.get("postCShared"));
            row(t, "**typed API** (the shared form: one shared arena acquired by both threads)", two.get("typedPollShared"),
                    two.get("typedPostShared"));
            Double pc = two.get("pollCShared");
            Double pj = two.get("typedPollShared");
            Double sc = two.get("postCShared");
            Double sj = two.get("typedPostShared");
            t.append("| ratio, typed / C | ").append(pc == null || pj == null ? "–" : String.format("%.1f", pj / pc))
                    .append(" | ").append(sc == null || sj == null ? "–" : String.format("%.1f", sj / sc)).append(" |\n");
        }
        t.append("\nCallShapes (JMH, average time, on the host: the machine's real speed, not the VM's): the data path's two"
                + " calls into a stand-in provider function (jmh/src/main/c/pvbench.c) doing the trivial part of the real one.\n");
        return t.toString();
    }

    private static void row(StringBuilder t, String what, Double poll, Double post) {
        if (poll != null || post != null) {
            t.append("| ").append(what).append(" | ").append(poll == null ? "–" : fmt(poll, "ns"))
                    .append(" | ").append(post == null ? "–" : fmt(post, "ns")).append(" |\n");
        }
    }

    private static String fmt(double v, String unit) {
        if (Double.isNaN(v)) {
            return "–";
        }
        return v >= 10_000 ? String.format(Locale.ROOT, "%.1f µs", v / 1000)
                : String.format(Locale.ROOT, v >= 100 ? "%.0f %s" : "%.1f %s", v, unit);
    }

    private static String bytes(double v) {
        return Double.isNaN(v) ? "–" : String.format(Locale.ROOT, "%.3f", Math.max(0, v));
    }

    private static String ratio(double v) {
        return Double.isNaN(v) || Double.isInfinite(v) ? "–" : String.format(Locale.ROOT, "%.2f", v);
    }
}
