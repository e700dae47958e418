package io.github.panamaverbs.samples.rdmacm;

import static io.github.panamaverbs.samples.CmTools.awaitListening;
import static io.github.panamaverbs.samples.CmTools.ip;
import static io.github.panamaverbs.samples.SampleRuns.otherCpu;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.samples.CmTools.Proc;
import io.github.panamaverbs.samples.SampleRuns.Run;
import io.github.panamaverbs.verbs.testing.RequiresRdma;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * rping (the Java one, {@code samples/run rping}) against rdmacm-utils' C rping both ways, and Java
 * to Java, on each provider of {@code scripts/with-rdma --provider both} (rxe: RoCE v2, siw:
 * iWARP), over loopback to the device's own IPv4 address (RDMA_RXE_IP, RDMA_SIW_IP). Every side
 * is a process of its own, started with a time limit and killed in the end.
 */
@RequiresRdma
class RpingIT {
    private static final int COUNT = 5;
    /** Seconds a process may run (a JVM starts slowly under the VM's emulated CPU). */
    private static final int LIMIT = 240;
    private static int nextPort = 7300;

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


    private static void checkClient(Run client, String context) {
        assertEquals(0, client.status(), "client:\n" + client.out() + client.err() + context);
        assertEquals(expectedPings("ping data: "), lines(client.out(), "ping data: "), client.out() + client.err());
        assertTrue(!client.err().contains("data mismatch"), client.err());
    }

    private static void checkServer(Run server, String context) {
        assertEquals(0, server.status(), "server:\n" + server.out() + server.err() + context);
        assertEquals(expectedPings("server ping data: "), lines(server.out(), "server ping data: "), server.out() + server.err());
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void javaServerCClient(String provider) throws Exception {
        String ip = ip(provider);
        String port = port();
        try (Proc server = Proc.java(otherCpu(), "rping", "-s", "-a", ip, "-p", port, "-C", "" + COUNT, "-v", "--timeout", "" + LIMIT)) {
            awaitListening(port, server, LIMIT);
            try (Proc client = Proc.c("rping", "-c", "-a", ip, "-p", port, "-C", "" + COUNT, "-v", "-V")) {
                Run c = client.await(LIMIT, server.output());
                Run s = server.await(LIMIT, "[C client]\n" + c.out() + c.err());
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
        try (Proc server = Proc.c("rping", "-s", "-a", ip, "-p", port, "-C", "" + COUNT, "-v")) {
            awaitListening(port, server, LIMIT);
            try (Proc client = Proc.java(otherCpu(), "rping", "-c", "-a", ip, "-p", port, "-C", "" + COUNT, "-v", "-V")) {
                Run c = client.await(LIMIT, "");
                Run s = server.await(60, "[Java client]\n" + c.out() + c.err());
                checkClient(c, "\n" + s.out() + s.err());
                checkServer(s, "\n" + c.out() + c.err());
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"siw"}) // (Java with C runs on both providers; one Java pair keeps CI short)
    void javaServerJavaClient(String provider) throws Exception {
        String ip = ip(provider);
        String port = port();
        try (Proc server = Proc.java(otherCpu(), "rping", "-s", "-a", ip, "-p", port, "-v", "--timeout", "" + LIMIT)) {
            awaitListening(port, server, LIMIT);
            try (Proc client = Proc.java(List.of(), "rping", "-c", "-a", ip, "-p", port, "-C", "" + COUNT, "-v", "-V")) {
                Run c = client.await(LIMIT, server.output());
                Run s = server.await(LIMIT, "[Java client]\n" + c.out() + c.err());
                checkClient(c, "\n" + s.out() + s.err());
                checkServer(s, "\n" + c.out() + c.err());
            }
        }
    }

    /** -P: the Java server serves one C client after another, and runs on. */
    @ParameterizedTest
    @ValueSource(strings = {"rxe"})
    void persistentJavaServerServesTwoClients(String provider) throws Exception {
        String ip = ip(provider);
        String port = port();
        try (Proc server = Proc.java(otherCpu(), "rping", "-s", "-P", "-a", ip, "-p", port, "-v", "--timeout", "" + LIMIT)) {
            awaitListening(port, server, LIMIT);
            for (int i = 0; i < 2; i++) {
                try (Proc client = Proc.c("rping", "-c", "-a", ip, "-p", port, "-C", "" + COUNT, "-v", "-V")) {
                    checkClient(client.await(LIMIT, server.output()), "\nclient " + (i + 1));
                }
            }
            assertTrue(!server.ended(), "the -P server ended after two clients");
            Run s = server.kill();
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
        try (Proc client = Proc.java(List.of(), "rping", "-c", "-a", ip, "-p", port, "-C", "1", "-v", "--timeout", "20")) {
            Run c = client.await(LIMIT, "");
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
