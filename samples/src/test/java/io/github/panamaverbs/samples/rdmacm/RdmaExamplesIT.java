package io.github.panamaverbs.samples.rdmacm;

import static io.github.panamaverbs.samples.CmTools.awaitListening;
import static io.github.panamaverbs.samples.CmTools.ip;
import static io.github.panamaverbs.samples.SampleRuns.otherCpu;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.samples.CmTools.Proc;
import io.github.panamaverbs.samples.SampleRuns.Run;
import io.github.panamaverbs.verbs.testing.RequiresRdma;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
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
@RequiresRdma
class RdmaExamplesIT {
    /** Seconds a process may run (a JVM starts slowly under the VM's emulated CPU). */
    private static final int LIMIT = 240;
    /** The Java tools' --timeout: long enough for the peer's JVM to start. */
    private static final int TOOL_TIMEOUT = 120;
    private static int nextPort = 7560;

    private static synchronized String port() {
        return Integer.toString(nextPort++);
    }


    /**
     * A side that succeeded: status 0, its first line "{@code name}: start" and its last
     * "{@code name}: end 0" (between them at most the C tools' inline notice), nothing on stderr.
     */
    private static void checkSuccess(String name, Run r, String context) {
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
            awaitListening(port, server, LIMIT);
            try (Proc client = Proc.c("rdma_client", "-s", ip, "-p", port)) {
                Run c = client.await(LIMIT, server.output());
                Run s = server.await(LIMIT, "[C client]\n" + c.out() + c.err());
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
            awaitListening(port, server, LIMIT);
            try (Proc client = Proc.java(otherCpu(), "rdma-client", "-s", ip, "-p", port, "--timeout", "" + TOOL_TIMEOUT)) {
                Run c = client.await(LIMIT, server.output());
                Run s = server.await(60, "[Java client]\n" + c.out() + c.err());
                checkSuccess("rdma_client", c, "\n[C server]\n" + s.out() + s.err());
                checkSuccess("rdma_server", s, "\n[Java client]\n" + c.out() + c.err());
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"siw"}) // (Java with C runs on both providers; one Java pair keeps CI short)
    void javaServerJavaClient(String provider) throws Exception {
        String ip = ip(provider);
        String port = port();
        try (Proc server = Proc.java(otherCpu(), "rdma-server", "-s", ip, "-p", port, "--timeout", "" + TOOL_TIMEOUT)) {
            awaitListening(port, server, LIMIT);
            try (Proc client = Proc.java(List.of(), "rdma-client", "-s", ip, "-p", port, "--timeout", "" + TOOL_TIMEOUT)) {
                Run c = client.await(LIMIT, server.output());
                Run s = server.await(LIMIT, "[Java client]\n" + c.out() + c.err());
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
            Run c = client.await(LIMIT, "");
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
    @ValueSource(strings = {"rxe"})
    void javaServerWithoutClientTimesOut(String provider) throws Exception {
        String ip = ip(provider);
        String port = port();
        try (Proc server = Proc.java(List.of(), "rdma-server", "-s", ip, "-p", port, "--timeout", "5")) {
            Run s = server.await(LIMIT, "");
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
