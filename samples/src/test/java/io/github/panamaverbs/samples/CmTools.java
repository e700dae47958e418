package io.github.panamaverbs.samples;

import static org.junit.jupiter.api.Assertions.fail;

import io.github.panamaverbs.samples.SampleRuns.Run;
import io.github.panamaverbs.verbs.testing.DeviceDetection;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * What the connection-manager sample tests share: the device address of each provider of
 * {@code scripts/with-rdma --provider both}, tool processes with their output collected, and
 * waiting until a server's rdma_cm ID listens.
 */
public final class CmTools {
    private CmTools() {
    }

    /** The device's IPv4 address of {@code provider} (rxe, siw): RDMA_RXE_IP or RDMA_SIW_IP. */
    public static String ip(String provider) {
        return env(provider, "IP");
    }

    /**
     * {@code RDMA_<PROVIDER>_<what>} as {@code scripts/with-rdma --provider both} sets it (DEVICE, IP,
     * ...): these tests need the device of one provider, which only with-rdma knows. Without it the
     * test is aborted, or fails where the api's rule requires a device ({@link DeviceDetection#required()}:
     * CI=true or -Drdma.required=true).
     */
    public static String env(String provider, String what) {
        String name = "RDMA_" + provider.toUpperCase(java.util.Locale.ROOT) + "_" + what;
        String value = System.getenv(name);
        if (value == null || value.isBlank()) {
            if (DeviceDetection.required()) {
                fail(name + " is not set (CI=true: a missing device is a failure); run through scripts/with-rdma --provider both");
            }
            Assumptions.abort(name + " is not set; run through scripts/with-rdma --provider both");
        }
        return value;
    }

    /** Whether an rdma_cm ID listens on {@code port} ({@code rdma resource show cm_id}); {@code seen[0]} gets the listing. */
    public static boolean cmIdListens(String port, String[] seen) throws Exception {
        Process p = new ProcessBuilder("rdma", "resource", "show", "cm_id").redirectErrorStream(true).start();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return false;
        }
        seen[0] = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        return seen[0].lines().anyMatch(l -> l.contains("state LISTEN") && l.matches(".*:" + port + "(\\s.*|$)"));
    }

    /** A process whose stdout and stderr are collected apart. */
    public static final class Proc implements AutoCloseable {
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

        /** A C tool, line-buffered so that what it printed is there even if it is killed. */
        public static Proc c(String tool, String... args) throws IOException {
            List<String> cmd = new ArrayList<>(List.of("stdbuf", "-oL", tool));
            cmd.addAll(List.of(args));
            return new Proc("C " + tool, cmd);
        }

        /** The Java tool: samples/run (from the repository's root), on {@code cpu} where the VM has it. */
        public static Proc java(List<String> cpu, String tool, String... args) throws IOException {
            List<String> cmd = new ArrayList<>(cpu);
            cmd.addAll(SampleRuns.javaCommand());
            cmd.add(tool);
            cmd.addAll(List.of(args));
            return new Proc("Java " + tool, cmd);
        }

        public boolean ended() {
            return !process.isAlive();
        }

        /** Waits for the end (at most {@code seconds}, else kills it and fails); then its status and output. */
        public Run await(int seconds, String context) throws Exception {
            if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                fail(name + " did not end within " + seconds + " s:\n" + output() + "\n" + context);
            }
            return new Run(process.exitValue(), out.get(10, TimeUnit.SECONDS), err.get(10, TimeUnit.SECONDS));
        }

        /** Ends it (a server that would run on) and returns what it printed; its status is the signal's. */
        public Run kill() throws Exception {
            process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            return new Run(process.isAlive() ? -1 : process.exitValue(), out.get(10, TimeUnit.SECONDS),
                    err.get(10, TimeUnit.SECONDS));
        }

        /** What it printed so far, when it has ended (else what is known: nothing). */
        public String output() {
            return "[" + name + " stdout]\n" + out.getNow("") + "[" + name + " stderr]\n" + err.getNow("");
        }

        @Override
        public void close() {
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Waits until an rdma_cm ID listens on {@code port} ({@code rdma resource show cm_id}), or the
     * server ended, for at most {@code limitSeconds}.
     */
    public static void awaitListening(String port, Proc server, int limitSeconds) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(limitSeconds);
        String[] last = {""};
        while (System.nanoTime() - end < 0) {
            if (server.ended()) {
                Run r = server.await(10, "");
                fail(server.name + " ended (status " + r.status() + ") before it listened:\n" + r.out() + r.err());
            }
            if (cmIdListens(port, last)) {
                return;
            }
            Thread.sleep(200);
        }
        fail("no rdma_cm ID listens on port " + port + " after " + limitSeconds + " s:\n" + last[0]);
    }
}
