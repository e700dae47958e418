package io.github.panamaverbs.samples;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * What the samples' integration tests share, whichever package they test: a tool run in this JVM
 * through the launcher ({@link #java}), a C tool run as a process ({@link #c}), a JVM of its own
 * ({@link Child#java}), waiting for a TCP listener, and the second CPU. The device they run on is
 * the api's rule's ({@code @RequiresRdma} and a {@code TestDevice} parameter, from the api's test jar).
 */
public final class SampleRuns {
    private SampleRuns() {
    }

    /** A finished run: its exit status and what it printed. */
    public record Run(int status, String out, String err) {
    }

    /** Runs a tool in this JVM as {@code samples/run} does ({@link Main#run}), its output collected. */
    public static Run java(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(rc, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** Runs {@code command} (a C tool) as a process, for at most 300 s. */
    public static Run c(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(false).start();
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> slurp(p.getInputStream()));
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> slurp(p.getErrorStream()));
        if (!p.waitFor(300, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail(String.join(" ", command) + " did not end within 300 s");
        }
        return new Run(p.exitValue(), out.get(), err.get());
    }

    /** Everything {@code in} gives until its end (an I/O error as text). */
    public static String slurp(java.io.InputStream in) {
        try {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return e.toString();
        }
    }

    /** Waits until something listens on TCP {@code port} (from /proc, without connecting to it). */
    public static void awaitListening(int port) throws Exception {
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

    /** {@code first}, then {@code flags}, then {@code more}: a command line. */
    public static String[] cmd(String first, List<String> flags, String... more) {
        List<String> l = new ArrayList<>();
        l.add(first);
        l.addAll(flags);
        l.addAll(List.of(more));
        return l.toArray(String[]::new);
    }

    /**
     * Where a second CPU is online (the VM has two; this JVM is pinned to the first), a process
     * started with this prefix runs on the second: two busy-polling sides on one CPU take turns
     * only at the scheduler's tick.
     */
    public static List<String> otherCpu() {
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
    public static List<String> javaCommand() {
        if (Files.isExecutable(Path.of("samples/run"))) {
            return List.of("samples/run");
        }
        return List.of(ProcessHandle.current().info().command().orElse("java"), "--enable-native-access=ALL-UNNAMED",
                "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
                Main.class.getName());
    }

    /** A command run as a process (a C tool, or this JVM's java with the samples' class path) whose output is collected as it comes. */
    public static final class Child implements AutoCloseable {
        /** The process. */
        public final Process process;
        private final StringBuffer output = new StringBuffer();
        private final Thread reader;

        /** Starts {@code command}, stdout and stderr together. */
        public Child(List<String> command) throws IOException {
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
        public static Child java(String... args) throws IOException {
            List<String> cmd = new ArrayList<>(otherCpu());
            cmd.addAll(javaCommand());
            cmd.addAll(List.of(args));
            return new Child(cmd);
        }

        /** What it printed so far. */
        public String output() {
            return output.toString();
        }

        /** Waits for the end; returns the exit status with all the output. */
        public Run await(int seconds) throws Exception {
            return await(seconds, "");
        }

        /** As {@link #await(int)}; a failure also shows {@code context} (e.g. the peer's output). */
        public Run await(int seconds, String context) throws Exception {
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
}
