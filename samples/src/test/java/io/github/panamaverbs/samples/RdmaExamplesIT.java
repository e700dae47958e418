package io.github.panamaverbs.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * rdma-server and rdma-client (the Java ones, {@code samples/run rdma-server}) against
 * rdmacm-utils' {@code rdma_server} and {@code rdma_client} both ways, and Java to Java, on each
 * provider of {@code scripts/with-rdma --provider both} (rxe: RoCE v2, siw: iWARP), over loopback
 * to the device's own IPv4 address (RDMA_RXE_IP, RDMA_SIW_IP). Every side is a process of its own,
 * started with a time limit and killed in the end.
 */
class RdmaExamplesIT {
    /** Seconds a process may run (a JVM starts slowly under the VM's emulated CPU). */
    private static final int LIMIT = 240;
    /** The Java tools' --timeout: long enough for the peer's JVM to start. */
    private static final int TOOL_TIMEOUT = 120;
    private static int nextPort = 7560;

    /** The device's IPv4 address of {@code provider}; without it abort, or fail in CI (-Drdma.required=true or CI=true). */
    private static String ip(String provider) {
        String name = "RDMA_" + provider.toUpperCase(Locale.ROOT) + "_IP";
        String ip = System.getenv(name);
        if (ip == null || ip.isBlank()) {
            if (Boolean.getBoolean("rdma.required") || "true".equals(System.getenv("CI"))) {
                fail(name + " is not set (CI: a missing device is a failure); run through scripts/with-rdma --provider both");
            }
            Assumptions.abort(name + " is not set; run through scripts/with-rdma --provider both");
        }
        return ip;
    }

    private static synchronized String port() {
        return Integer.toString(nextPort++);
    }

    /** A process whose stdout and stderr are collected apart. */
    static final class Proc implements AutoCloseable {
        final Process process;
        final String name;
        private final CompletableFuture<String> out;
        private final CompletableFuture<String> err;

        Proc(String name, List<String> command) throws IOException {
            this.name = name + " (" + String.join(" ", command) + ")";
            process = new ProcessBuilder(command).start();
            process.getOutputStream().close();
            out = CompletableFuture.supplyAsync(() -> slurp(process.getInputStream()));
            err = CompletableFuture.supplyAsync(() -> slurp(process.getErrorStream()));
        }

        private static String slurp(InputStream in) {
            try {
                return new String(in.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                return e.toString();
            }
        }

        /** The C tool ({@code rdma_server}, {@code rdma_client}), line-buffered so that what it printed is there even if it is killed. */
        static Proc c(String tool, String... args) throws IOException {
            List<String> cmd = new ArrayList<>(List.of("stdbuf", "-oL", tool));
            cmd.addAll(List.of(args));
            return new Proc("C " + tool, cmd);
        }

        /** The Java tool: samples/run (from the repository's root), on {@code cpu} where the VM has it. */
        static Proc java(List<String> cpu, String tool, String... args) throws IOException {
            List<String> cmd = new ArrayList<>(cpu);
            if (Files.isExecutable(Path.of("samples/run"))) {
                cmd.add("samples/run");
            } else {
                cmd.addAll(List.of(ProcessHandle.current().info().command().orElse("java"), "--enable-native-access=ALL-UNNAMED",
                        "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
                        Main.class.getName()));
            }
            cmd.add(tool);
            cmd.addAll(List.of(args));
            return new Proc("Java " + tool, cmd);
        }

        boolean ended() {
            return !process.isAlive();
        }

        /** Waits for the end (at most {@code seconds}, else kills it and fails); then its status and output. */
        SamplesIT.Run await(int seconds, String context) throws Exception {
            if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                fail(name + " did not end within " + seconds + " s:\n" + output() + "\n" + context);
            }
            return new SamplesIT.Run(process.exitValue(), out.get(10, TimeUnit.SECONDS), err.get(10, TimeUnit.SECONDS));
        }

        /** What it printed so far, when it has ended (else what is known: nothing). */
        String output() {
            return "[" + name + " stdout]\n" + out.getNow("") + "[" + name + " stderr]\n" + err.getNow("");
        }

        @Override
        public void close() throws Exception {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /**
     * Waits until an rdma_cm ID listens on {@code port} ({@code rdma resource show cm_id}), or the
     * server ended, for at most {@code LIMIT} seconds.
     */
    private static void awaitListening(String port, Proc server) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(LIMIT);
        String last = "";
        while (System.nanoTime() - end < 0) {
            if (server.ended()) {
                SamplesIT.Run r = server.await(10, "");
                fail(server.name + " ended (status " + r.status() + ") before it listened:\n" + r.out() + r.err());
            }
            Process p = new ProcessBuilder("rdma", "resource", "show", "cm_id").redirectErrorStream(true).start();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            } else {
                last = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                if (last.lines().anyMatch(l -> l.contains("state LISTEN") && l.matches(".*:" + port + "(\\s.*|$)"))) {
                    return;
                }
            }
            Thread.sleep(200);
        }
        fail("no rdma_cm ID listens on port " + port + " after " + LIMIT + " s:\n" + last);
    }

    /** The JUnit JVM is pinned to CPU 0 (and C tools it starts with it); a Java side goes to CPU 1 where there is one. */
    private static List<String> otherCpu() {
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
     * A side that succeeded: status 0, its first line "{@code name}: start" and its last
     * "{@code name}: end 0" (between them at most the C tools' inline notice), nothing on stderr.
     */
    private static void checkSuccess(String name, SamplesIT.Run r, String context) {
        String all = name + ":\n" + r.out() + r.err() + context;
        assertEquals(0, r.status(), all);
        List<String> lines = r.out().lines().toList();
        assertTrue(!lines.isEmpty() && lines.getFirst().equals(name + ": start"), all);
        assertEquals(name + ": end 0", lines.getLast(), all);
        assertTrue(lines.stream().allMatch(l -> l.equals(name + ": start") || l.equals(name + ": end 0")
                || l.equals(name + ": device doesn't support IBV_SEND_INLINE, using sge sends")), all);
        assertTrue(r.err().isBlank(), all);
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void javaServerCClient(String provider) throws Exception {
        String ip = ip(provider);
        String port = port();
        try (Proc server = Proc.java(otherCpu(), "rdma-server", "-s", ip, "-p", port, "--timeout", "" + TOOL_TIMEOUT)) {
            awaitListening(port, server);
            try (Proc client = Proc.c("rdma_client", "-s", ip, "-p", port)) {
                SamplesIT.Run c = client.await(LIMIT, server.output());
                SamplesIT.Run s = server.await(LIMIT, "[C client]\n" + c.out() + c.err());
                checkSuccess("rdma_client", c, "\n[Java server]\n" + s.out() + s.err());
                checkSuccess("rdma_server", s, "\n[C client]\n" + c.out() + c.err());
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void cServerJavaClient(String provider) throws Exception {
        String ip = ip(provider);
        String port = port();
        try (Proc server = Proc.c("rdma_server", "-s", ip, "-p", port)) {
            awaitListening(port, server);
            try (Proc client = Proc.java(otherCpu(), "rdma-client", "-s", ip, "-p", port, "--timeout", "" + TOOL_TIMEOUT)) {
                SamplesIT.Run c = client.await(LIMIT, server.output());
                SamplesIT.Run s = server.await(60, "[Java client]\n" + c.out() + c.err());
                checkSuccess("rdma_client", c, "\n[C server]\n" + s.out() + s.err());
                checkSuccess("rdma_server", s, "\n[Java client]\n" + c.out() + c.err());
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void javaServerJavaClient(String provider) throws Exception {
        String ip = ip(provider);
        String port = port();
        try (Proc server = Proc.java(otherCpu(), "rdma-server", "-s", ip, "-p", port, "--timeout", "" + TOOL_TIMEOUT)) {
            awaitListening(port, server);
            try (Proc client = Proc.java(List.of(), "rdma-client", "-s", ip, "-p", port, "--timeout", "" + TOOL_TIMEOUT)) {
                SamplesIT.Run c = client.await(LIMIT, server.output());
                SamplesIT.Run s = server.await(LIMIT, "[Java client]\n" + c.out() + c.err());
                checkSuccess("rdma_client", c, "\n[Java server]\n" + s.out() + s.err());
                checkSuccess("rdma_server", s, "\n[Java client]\n" + c.out() + c.err());
            }
        }
    }

    /**
     * Nobody listens: rxe answers with REJECTED (reason 8), siw refuses the TCP connect; either way
     * the C tool's "rdma_connect: Connection refused", end -1 and status 255, long before the timeout.
     */
    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void javaClientWithoutServerIsRefused(String provider) throws Exception {
        String ip = ip(provider);
        String port = port();
        int timeout = 120;
        long start = System.nanoTime();
        try (Proc client = Proc.java(List.of(), "rdma-client", "-s", ip, "-p", port, "--timeout", "" + timeout)) {
            SamplesIT.Run c = client.await(LIMIT, "");
            long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
            String all = c.out() + c.err();
            assertEquals(255, c.status(), all);
            assertEquals(List.of("rdma_client: start", "rdma_client: end -1"), c.out().lines().toList(), all);
            assertTrue(c.err().lines().anyMatch(l -> l.equals("rdma_connect: Connection refused")), all);
            // The refusal comes at once; the rest is the JVM starting under the VM's emulated CPU.
            assertTrue(seconds < timeout, "took " + seconds + " s, not less than the --timeout of " + timeout + " s: " + all);
        }
    }

    /** No client comes: the Java server gives up after its --timeout (the C one would wait for ever). */
    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void javaServerWithoutClientTimesOut(String provider) throws Exception {
        String ip = ip(provider);
        String port = port();
        try (Proc server = Proc.java(List.of(), "rdma-server", "-s", ip, "-p", port, "--timeout", "5")) {
            SamplesIT.Run s = server.await(LIMIT, "");
            String all = s.out() + s.err();
            assertEquals(255, s.status(), all);
            assertEquals(List.of("rdma_server: start", "rdma_server: end -1"), s.out().lines().toList(), all);
            assertTrue(s.err().lines().anyMatch(l -> l.equals("rdma_get_request: no connection request within 5 s")), all);
        }
    }

    /** A flag the C tools do not know: their usage on stdout, status 1 (no device needed). */
    @Test
    void unknownFlagPrintsUsage() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = RdmaExamples.run(false, new String[] {"-x"}, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(1, rc);
        assertEquals(List.of("usage: rdma-client", "\t[-s server_address]", "\t[-p port_number]", "\t[--timeout seconds]"),
                out.toString(StandardCharsets.UTF_8).lines().toList());
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("unknown option -x"), err.toString(StandardCharsets.UTF_8));
    }
}
