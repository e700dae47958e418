package io.github.panamaverbs.verbs;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Keeps the usage example in README.md compiling and true: the README's example is the code
 * between the markers in {@link #example()}, verbatim (less its indentation).
 */
public class ReadmeExampleTest {

    // (built so that no line of this file but the markers themselves holds a snippet tag)
    private static final String BEGIN = "/".repeat(2) + " @start region=\"readme\"";
    private static final String END = "/".repeat(2) + " @end region=\"readme\"";

    /** The README's example: lists the devices, then RDMA-writes between two queue pairs of one device. */
    static String example(String deviceName, int gidIndex) {
        // @start region="readme"
        for (Device device : Device.list()) {
            System.out.println(device.name() + ": " + device.transport() + ", node GUID " + device.guidString());
        }
        try (Context ctx = Device.open(deviceName);
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             CompletionQueue cq = ctx.createCompletionQueue(16);
             QueuePair a = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq));
             QueuePair b = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq));
             MemoryRegion src = pd.allocateAndRegister(4096);
             MemoryRegion dst = pd.allocateAndRegister(4096, AccessFlag.REMOTE_WRITE)) {
            // Connect the queue pairs to each other. Across hosts, exchange the endpoints out of
            // band: RemoteEndpoint.toBytes() / fromBytes() over TCP.
            ConnectOptions how = ConnectOptions.port(1).gidIndex(gidIndex);
            a.connect(b.localEndpoint(how), how);
            b.connect(a.localEndpoint(how), how);

            src.segment().setString(0, "hello, RDMA");
            SendRequest write = new SendRequest(1)             // built once, reusable, off-heap
                    .opcode(SendOpcode.RDMA_WRITE).signaled(true)
                    .sge(src, 0, 64)
                    .rdma(dst.address(), dst.rkey());
            WorkCompletions wc = new WorkCompletions(8);       // polled without allocation
            try (QueuePair.Confined sender = a.confined();      // this thread's views: the fast form
                 CompletionQueue.Confined poller = cq.confined()) {
                sender.postSend(write);
                while (poller.poll(wc) == 0) {
                    Thread.onSpinWait();
                }
            }
            System.out.println(wc.status(0) + ": " + dst.segment().getString(0));
            return dst.segment().getString(0);
        }
        // @end region="readme"
    }

    @Test
    void exampleFailsClearlyWithoutThatDevice() {
        VerbsException e = assertThrows(VerbsException.class, () -> example("no-such-device0", 0));
        assertTrue(e.getMessage().contains("no RDMA device named no-such-device0"), e.getMessage());
    }

    @Test
    void readmeContainsTheExampleVerbatim() throws IOException {
        assertInReadme(ReadmeExampleTest.class, BEGIN, END);
    }

    /** The lines between the markers, with their common indentation removed, each ending in a newline. */
    static String exampleCode(List<String> lines) {
        return exampleCode(lines, BEGIN, END);
    }

    /** The lines between {@code begin} and {@code end}, with their common indentation removed. */
    public static String exampleCode(List<String> lines, String begin, String end) {
        List<String> body = new ArrayList<>();
        boolean inside = false;
        for (String line : lines) {
            String trimmed = line.strip();
            if (trimmed.equals(begin)) {
                inside = true;
            } else if (trimmed.equals(end)) {
                break;
            } else if (inside) {
                body.add(line.stripTrailing());
            }
        }
        int indent = body.stream().filter(l -> !l.isBlank())
                .mapToInt(l -> l.length() - l.stripLeading().length()).min().orElse(0);
        StringBuilder sb = new StringBuilder();
        for (String line : body) {
            sb.append(line.isBlank() ? "" : line.substring(indent)).append('\n');
        }
        return sb.toString();
    }

    /** Asserts that README.md holds, as a java code block, the example between {@code begin} and {@code end} in {@code test}'s source. */
    public static void assertInReadme(Class<?> test, String begin, String end) throws IOException {
        assertInDocument("README.md", test, begin, end);
    }

    /**
     * Asserts that {@code document} (a path from the repository root, e.g. {@code docs/jfr.md}) holds,
     * as a java code block, the example between {@code begin} and {@code end} in {@code test}'s source.
     */
    public static void assertInDocument(String document, Class<?> test, String begin, String end) throws IOException {
        String example = example(test, begin, end);
        String text = Files.readString(projectRoot().resolve(document)).replace("\r\n", "\n");
        assertTrue(text.contains("```java\n" + example + "```\n"),
                document + " must contain this code block verbatim (it is " + test.getSimpleName() + "'s example):\n```java\n"
                        + example + "```");
    }

    /** The example between {@code begin} and {@code end} in {@code test}'s source, as a code block holds it. */
    static String example(Class<?> test, String begin, String end) throws IOException {
        Path source = projectRoot().resolve("api/src/test/java/" + test.getName().replace('.', '/') + ".java");
        String example = exampleCode(Files.readAllLines(source), begin, end);
        assertFalse(example.isBlank(), "no example between " + begin + " and " + end + " in " + source);
        return example;
    }

    /** The repository root: the nearest directory up from the working directory that holds README.md and mvnw. */
    public static Path projectRoot() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve("README.md")) && Files.isRegularFile(dir.resolve("mvnw"))) {
                return dir;
            }
        }
        throw new AssertionError("no README.md and mvnw above " + Path.of("").toAbsolutePath());
    }
}
