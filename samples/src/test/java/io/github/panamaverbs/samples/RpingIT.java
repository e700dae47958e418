package io.github.panamaverbs.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * rping (the Java one, {@code samples/run rping}) against rdmacm-utils' C rping both ways, and Java
 * to Java, on each provider of {@code scripts/with-rdma --provider both} (rxe: RoCE v2, siw:
 * iWARP), over loopback to the device's own IPv4 address (RDMA_RXE_IP, RDMA_SIW_IP). Every side
 * is a process of its own, started with a time limit and killed in the end.
 */
class RpingIT {
    private static final int COUNT = 5;
    /** Seconds a process may run (a JVM starts slowly under the VM's emulated CPU). */
    private static final int LIMIT = 240;
    private static int nextPort = 7300;

    /** The device's IPv4 address of {@code provider}: RDMA_RXE_IP or RDMA_SIW_IP; without it abort, or fail with -Drdma.required=true. */
    private static String ip(String provider) {
        String name = "RDMA_" + provider.toUpperCase(java.util.Locale.ROOT) + "_IP";
        String ip = System.getenv(name);
        if (ip == null || ip.isBlank()) {
            if (Boolean.getBoolean("rdma.required")) {
                fail(name + " is not set (CI=true: a missing device is a failure); run through scripts/with-rdma --provider both");
            }
            Assumptions.abort(name + " is not set; run through scripts/with-rdma --provider both");
        }
        return ip;
    }

    private static synchronized String port() {
        return Integer.toString(nextPort++);
    }

    /** The lines the client prints with -v for {@code COUNT} pings of the default size 64: rping's pattern. */
    static List<String> expectedPings(String prefix) {
        List<String> lines = new ArrayList<>();
        int start = 'A';
        for (int ping = 0; ping < COUNT; ping++) {
            StringBuilder b = new StringBuilder("rdma-ping-" + ping + ": ");
            for (int c = start; b.length() < 63; ) {
                b.append((char) c);
                c = c == 'z' ? 'A' : c + 1;
            }
            start = start == 'z' ? 'A' : start + 1;
            lines.add(prefix + b);
        }
        return lines;
    }

    private static List<String> lines(String out, String prefix) {
        return out.lines().filter(l -> l.startsWith(prefix)).toList();
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
            out = reader(process.getInputStream());
            err = reader(process.getErrorStream());
        }

        /** Reads {@code in} to its end on a thread of its own (not the common pool: a server that runs on would hold it). */
        private static CompletableFuture<String> reader(InputStream in) {
            CompletableFuture<String> f = new CompletableFuture<>();
            Thread.ofPlatform().daemon().start(() -> f.complete(slurp(in)));
            return f;
        }

        private static String slurp(InputStream in) {
            try {
                return new String(in.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                return e.toString();
            }
        }

        /** The C tool, line-buffered so that what it printed is there even if it is killed. */
        static Proc c(String... args) throws IOException {
            List<String> cmd = new ArrayList<>(List.of("stdbuf", "-oL", "rping"));
            cmd.addAll(List.of(args));
            return new Proc("C rping", cmd);
        }

        /** The Java tool: samples/run (from the repository's root), on {@code cpu} where the VM has it. */
        static Proc java(List<String> cpu, String... args) throws IOException {
            List<String> cmd = new ArrayList<>(cpu);
            if (Files.isExecutable(Path.of("samples/run"))) {
                cmd.add("samples/run");
            } else {
                cmd.addAll(List.of(ProcessHandle.current().info().command().orElse("java"), "--enable-native-access=ALL-UNNAMED",
                        "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
                        Main.class.getName()));
            }
            cmd.add("rping");
            cmd.addAll(List.of(args));
            return new Proc("Java rping", cmd);
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

        /** Ends it (a server that would run on) and returns what it printed; its status is the signal's. */
        SamplesIT.Run kill() throws Exception {
            process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            return new SamplesIT.Run(process.isAlive() ? -1 : process.exitValue(), out.get(10, TimeUnit.SECONDS),
                    err.get(10, TimeUnit.SECONDS));
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

    /** The JUnit JVM is pinned to CPU 0 (and C tools it starts with it); a server goes to CPU 1 where there is one. */
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

    private static void checkClient(SamplesIT.Run client, String context) {
        assertEquals(0, client.status(), "client:\n" + client.out() + client.err() + context);
        assertEquals(expectedPings("ping data: "), lines(client.out(), "ping data: "), client.out() + client.err());
        assertTrue(!client.err().contains("data mismatch"), client.err());
    }

    private static void checkServer(SamplesIT.Run server, String context) {
        assertEquals(0, server.status(), "server:\n" + server.out() + server.err() + context);
        assertEquals(expectedPings("server ping data: "), lines(server.out(), "server ping data: "), server.out() + server.err());
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void javaServerCClient(String provider) throws Exception {
        String ip = ip(provider);
        String port = port();
        try (Proc server = Proc.java(otherCpu(), "-s", "-a", ip, "-p", port, "-C", "" + COUNT, "-v", "--timeout", "" + LIMIT)) {
            awaitListening(port, server);
            try (Proc client = Proc.c("-c", "-a", ip, "-p", port, "-C", "" + COUNT, "-v", "-V")) {
                SamplesIT.Run c = client.await(LIMIT, server.output());
                SamplesIT.Run s = server.await(LIMIT, "[C client]\n" + c.out() + c.err());
                checkClient(c, "\n" + s.out() + s.err());
                checkServer(s, "\n" + c.out() + c.err());
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void cServerJavaClient(String provider) throws Exception {
        String ip = ip(provider);
        String port = port();
        try (Proc server = Proc.c("-s", "-a", ip, "-p", port, "-C", "" + COUNT, "-v")) {
            awaitListening(port, server);
            try (Proc client = Proc.java(otherCpu(), "-c", "-a", ip, "-p", port, "-C", "" + COUNT, "-v", "-V")) {
                SamplesIT.Run c = client.await(LIMIT, "");
                SamplesIT.Run s = server.await(60, "[Java client]\n" + c.out() + c.err());
                checkClient(c, "\n" + s.out() + s.err());
                checkServer(s, "\n" + c.out() + c.err());
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void javaServerJavaClient(String provider) throws Exception {
        String ip = ip(provider);
        String port = port();
        try (Proc server = Proc.java(otherCpu(), "-s", "-a", ip, "-p", port, "-v", "--timeout", "" + LIMIT)) {
            awaitListening(port, server);
            try (Proc client = Proc.java(List.of(), "-c", "-a", ip, "-p", port, "-C", "" + COUNT, "-v", "-V")) {
                SamplesIT.Run c = client.await(LIMIT, server.output());
                SamplesIT.Run s = server.await(LIMIT, "[Java client]\n" + c.out() + c.err());
                checkClient(c, "\n" + s.out() + s.err());
                checkServer(s, "\n" + c.out() + c.err());
            }
        }
    }

    /** -P: the Java server serves one C client after another, and runs on. */
    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void persistentJavaServerServesTwoClients(String provider) throws Exception {
        String ip = ip(provider);
        String port = port();
        try (Proc server = Proc.java(otherCpu(), "-s", "-P", "-a", ip, "-p", port, "-v", "--timeout", "" + LIMIT)) {
            awaitListening(port, server);
            for (int i = 0; i < 2; i++) {
                try (Proc client = Proc.c("-c", "-a", ip, "-p", port, "-C", "" + COUNT, "-v", "-V")) {
                    checkClient(client.await(LIMIT, server.output()), "\nclient " + (i + 1));
                }
            }
            assertTrue(!server.ended(), "the -P server ended after two clients");
            SamplesIT.Run s = server.kill();
            List<String> twice = new ArrayList<>(expectedPings("server ping data: "));
            twice.addAll(expectedPings("server ping data: "));
            assertEquals(twice, lines(s.out(), "server ping data: "), s.out() + s.err());
        }
    }

    /** Nobody listens: rxe says REJECTED with reason 8 as C rping does; siw refuses the TCP connect. Exit 255 either way. */
    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void javaClientWithoutServerIsRefused(String provider) throws Exception {
        String ip = ip(provider);
        String port = port();
        long start = System.nanoTime();
        try (Proc client = Proc.java(List.of(), "-c", "-a", ip, "-p", port, "-C", "1", "-v", "--timeout", "20")) {
            SamplesIT.Run c = client.await(LIMIT, "");
            long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
            assertEquals(255, c.status(), c.out() + c.err());
            if (provider.equals("rxe")) {
                assertTrue(c.err().lines().anyMatch(l -> l.equals("cma event RDMA_CM_EVENT_REJECTED, error 8")), c.err());
            } else {
                assertTrue(c.err().lines().anyMatch(l -> l.equals("rdma_connect: Connection refused")
                        || l.equals("cma event RDMA_CM_EVENT_REJECTED, error -111")), c.err());
            }
            assertTrue(lines(c.out(), "ping data: ").isEmpty(), c.out());
            assertTrue(seconds < LIMIT, "took " + seconds + " s");
        }
    }
}
