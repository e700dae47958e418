package io.github.panamaverbs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.verbs.Device;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * rdma-core really missing: a child JVM ({@link MissingLibraryMain}) runs with {@code libibverbs.so.1}
 * (or {@code librdmacm.so.1}) hidden, by bind-mounting {@code /dev/null} over the file the loader
 * finds, in a mount namespace of its own ({@code unshare -m}; {@code unshare -r -m} where this is not
 * root). Everything up to the first call that needs the library must work, and that call must throw
 * {@code VerbsException} naming the library and its packages, never an {@code ExceptionInInitializerError},
 * a {@code NoClassDefFoundError} or an {@code UnsatisfiedLinkError}.
 *
 * <p>Needs {@code unshare} and the right to mount in a new namespace: without them the test is
 * skipped, except under {@code CI=true}, where it fails.
 */
class MissingLibraryTest {
    private static final long CHILD_TIMEOUT_SECONDS = 120;

    /** The steps that need no library: each must print "ok". */
    private static final List<String> WITHOUT_LIBRARY = List.of("enum constants", "enum lookups",
            "new SendRequest(1)", "new ReceiveRequest(1)", "new WorkCompletions(4)", "new QpAttributes()",
            "ConnectOptions.port(1)", "AddressVector.global", "RemoteEndpoint", "new ConnectionParameters()",
            "new Connection.Config()", "Doctor.check()");

    @Test
    void withoutLibibverbsEverythingLoadsAndTheFirstVerbNamesTheLibrary() throws Exception {
        String out = runWithout(NativeLibraries.LIBIBVERBS, "libibverbs");
        assertTrue(out.contains("LOADS libibverbs.so.1: false"), "libibverbs.so.1 was not hidden:\n" + out);
        assertCommon(out);
        for (String step : List.of("WcStatus.description()", "Device.open(\"rxe0\")", "Device.list()", "Device.list() again")) {
            assertMissing(out, step, "libibverbs.so.1", "'sudo apt-get install libibverbs1 ibverbs-providers rdma-core'",
                    "'sudo dnf install libibverbs rdma-core'");
        }
        assertTrue(stepLine(out, "Doctor.check()").contains("libibverbs.so.1"), out);
    }

    @Test
    void withoutLibrdmacmEverythingLoadsAndTheFirstCallNamesTheLibrary() throws Exception {
        String out = runWithout(NativeLibraries.LIBRDMACM, "librdmacm");
        assertTrue(out.contains("LOADS libibverbs.so.1: true"), out);
        assertTrue(out.contains("LOADS librdmacm.so.1: false"), "librdmacm.so.1 was not hidden:\n" + out);
        assertCommon(out);
        for (String step : List.of("EventChannel.create()", "Device.list()", "Device.list() again")) {
            assertMissing(out, step, "librdmacm.so.1", "'sudo apt-get install librdmacm1 rdma-core'",
                    "'sudo dnf install librdmacm rdma-core'");
        }
    }

    private static void assertCommon(String out) {
        for (String bad : List.of("ExceptionInInitializerError", "NoClassDefFoundError", "UnsatisfiedLinkError")) {
            assertFalse(out.contains(bad), bad + " in the child's output:\n" + out);
        }
        for (String step : WITHOUT_LIBRARY) {
            assertTrue(stepLine(out, step).startsWith("ok "), step + " failed without the library:\n" + out);
        }
    }

    private static void assertMissing(String out, String step, String library, String apt, String dnf) {
        String line = stepLine(out, step);
        String expected = "threw io.github.panamaverbs.verbs.VerbsException: ";
        assertTrue(line.startsWith(expected), step + " should throw VerbsException:\n" + out);
        for (String part : List.of(library + " was not found", apt, dnf)) {
            assertTrue(line.contains(part), step + ": no \"" + part + "\" in: " + line);
        }
    }

    /** What the child printed for {@code step}, after "STEP step: ". */
    private static String stepLine(String out, String step) {
        String prefix = "STEP " + step + ": ";
        return out.lines().filter(l -> l.startsWith(prefix)).findFirst()
                .map(l -> l.substring(prefix.length()))
                .orElseGet(() -> fail("the child printed no line for " + step + ":\n" + out));
    }

    /** Runs {@link MissingLibraryMain} {@code mode} with {@code library} hidden; its output (stdout and stderr). */
    private static String runWithout(String library, String mode) throws Exception {
        assumeTrue(NativeLibraries.loads(library), library + " is not installed on this host: nothing to hide");
        Set<Path> files = libraryFiles(library);
        assertFalse(files.isEmpty(), "cannot find the file of " + library + " (ldconfig -p, /proc/self/maps)");

        List<String> unshare = unshareCommand(files.iterator().next());
        StringBuilder script = new StringBuilder();
        for (int i = 0; i < files.size(); i++) {
            script.append("mount --bind /dev/null \"$").append(i + 1).append("\" && ");
        }
        script.append("shift ").append(files.size()).append(" && exec \"$@\"");
        List<String> command = new ArrayList<>(unshare);
        command.addAll(List.of("sh", "-c", script.toString(), "sh"));
        files.forEach(f -> command.add(f.toString()));
        command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", classPath(), MissingLibraryMain.class.getName(), mode));

        Path log = Files.createTempFile("missing-library-", ".log");
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            p.getOutputStream().close();
            boolean finished = p.waitFor(CHILD_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            if (!finished) {
                p.destroyForcibly().waitFor();
            }
            String out = Files.readString(log, StandardCharsets.UTF_8);
            assertTrue(finished, "the child JVM did not finish in " + CHILD_TIMEOUT_SECONDS + " s: " + command + "\n" + out);
            assertEquals(0, p.exitValue(), "the child JVM failed: " + command + "\n" + out);
            return out;
        } finally {
            Files.deleteIfExists(log);
        }
    }

    /**
     * The files {@code library} is loaded from: those of the loader cache ({@code ldconfig -p}) and
     * the one this JVM mapped, each resolved through its symbolic links.
     */
    private static Set<Path> libraryFiles(String library) throws IOException, InterruptedException {
        Set<Path> files = new LinkedHashSet<>();
        Process ldconfig = new ProcessBuilder("ldconfig", "-p").redirectErrorStream(true).start();
        String cache = new String(ldconfig.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        ldconfig.waitFor();
        for (String line : cache.lines().toList()) {
            String l = line.trim();
            int arrow = l.indexOf(" => ");
            if (l.startsWith(library + " ") && arrow > 0) {
                addReal(files, Path.of(l.substring(arrow + 4).trim()));
            }
        }
        try (Arena arena = Arena.ofConfined()) {
            SymbolLookup.libraryLookup(library, arena);
            for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                int slash = line.indexOf('/');
                if (slash >= 0 && Path.of(line.substring(slash)).getFileName().toString().startsWith(library)) {
                    addReal(files, Path.of(line.substring(slash)));
                }
            }
        }
        return files;
    }

    private static void addReal(Set<Path> files, Path file) throws IOException {
        if (Files.exists(file)) {
            files.add(file.toRealPath());
        }
    }

    /**
     * {@code unshare -m} (root), else {@code unshare -r -m} (an unprivileged user namespace), whichever
     * can bind-mount over {@code target} (in a namespace that ends with the probe); skips the test (fails it under {@code CI=true}) when neither can.
     */
    private static List<String> unshareCommand(Path target) throws IOException, InterruptedException {
        List<String> tried = new ArrayList<>();
        for (List<String> candidate : List.of(List.of("unshare", "-m"), List.of("unshare", "-r", "-m"))) {
            List<String> probe = new ArrayList<>(candidate);
            probe.addAll(List.of("sh", "-c", "mount --bind /dev/null \"$1\"", "sh", target.toString()));
            String why;
            try {
                Process p = new ProcessBuilder(probe).redirectErrorStream(true).start();
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
                if (p.waitFor() == 0) {
                    return candidate;
                }
                why = "exit " + p.exitValue() + (out.isEmpty() ? "" : ": " + out);
            } catch (IOException e) {
                why = e.getMessage();
            }
            tried.add(String.join(" ", candidate) + " (" + why + ")");
        }
        String message = "cannot hide a library from a child JVM: this test bind-mounts /dev/null over it in a "
                + "private mount namespace, which needs unshare(1) and root or unprivileged user namespaces; tried "
                + String.join("; ", tried);
        if ("true".equals(System.getenv("CI"))) {
            fail(message + " (CI=true: run the tests as root)");
        }
        assumeTrue(false, message);
        return List.of();
    }

    /** The child's class path: the test classes, the API's classes and the bindings, wherever they are. */
    private static String classPath() throws URISyntaxException {
        List<String> entries = new ArrayList<>();
        for (Class<?> c : List.of(MissingLibraryMain.class, Device.class, Verbs.class)) { // Verbs: not initialized here
            String entry = Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
            if (!entries.contains(entry)) {
                entries.add(entry);
            }
        }
        return String.join(java.io.File.pathSeparator, entries);
    }
}
