package io.github.panamaverbs.samples.ibverbs;

import static io.github.panamaverbs.samples.SampleRuns.awaitListening;
import static io.github.panamaverbs.samples.SampleRuns.c;
import static io.github.panamaverbs.samples.SampleRuns.cmd;
import static io.github.panamaverbs.samples.SampleRuns.java;
import static io.github.panamaverbs.samples.SampleRuns.slurp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.samples.SampleRuns.Run;
import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The ping-pongs on a real device (scripts/with-rdma -- scripts/run-it, IT_MODULES=samples): each
 * against its C tool (rdma-core's ibv_*_pingpong) both ways, on one device (the C tool is a
 * process, the Java side runs in this JVM), Java to Java, and their error messages. Every
 * transfer with -c.
 */
@RequiresRdma
class PingPongIT {
    private static String device;
    private static String ibPort;
    private static String gid;
    private static int nextPort = 18600;

    /** The device, port and GID index by the api's rule (RDMA_DEVICE or the first ACTIVE port; see DeviceDetection). */
    @BeforeAll
    static void device(TestDevice d) {
        device = d.name();
        ibPort = Integer.toString(d.port());
        gid = Integer.toString(d.gidIndex());
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
        assertEquals(0, client.status(), "C client: " + client.out() + client.err());
        assertEquals(0, s.status(), "Java server: " + s.out() + s.err());
        checkPingPong(kind, s.out());
        assertTrue(s.out().contains("data check: all 100 received messages are correct"), s.out());
        assertTrue(!client.out().contains("invalid data"), client.out());
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
            assertEquals(0, client.status(), "Java client: " + client.out() + client.err());
            assertTrue(server.waitFor(120, TimeUnit.SECONDS), "C server did not end");
            String so = serverOut.get();
            assertEquals(0, server.exitValue(), "C server: " + so);
            assertTrue(!so.contains("invalid data"), "C server found invalid data: " + so);
            checkPingPong(kind, client.out());
            assertTrue(client.out().contains("data check: all 100 received messages are correct"), client.out());
        } finally {
            server.destroyForcibly();
        }
    }

    /** The flags both sides use: -c, events (one vCPU in the VM), and for UD a size within the port MTU. */
    private static List<String> pingPongFlags(String kind, int port) {
        List<String> f = new ArrayList<>(List.of("-d", device, "-i", ibPort, "-g", gid, "-p", "" + port, "-c", "-e", "-n", "100"));
        if (kind.equals("ud")) {
            f.addAll(List.of("-s", "1024"));
        }
        return f;
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
        CompletableFuture<Run> server = CompletableFuture.supplyAsync(() -> java("rc-pingpong", "-d", device, "-i", ibPort, "-g", gid,
                "-p", "" + port, "-c", "-e", "--virtual", "-n", "50", "--timeout", "120"));
        awaitListening(port);
        Run client = java("rc-pingpong", "-d", device, "-i", ibPort, "-g", gid, "-p", "" + port, "-c", "-e", "-n", "50", "127.0.0.1");
        Run s = server.get(300, TimeUnit.SECONDS);
        assertEquals(0, client.status(), client.out() + client.err());
        assertEquals(0, s.status(), s.out() + s.err());
    }

    @Test
    void clearErrors() {
        Run refused = java("rc-pingpong", "-d", device, "-i", ibPort, "-g", gid, "-p", "1", "127.0.0.1");
        assertEquals(1, refused.status());
        assertTrue(refused.err().contains("Couldn't connect to 127.0.0.1:1"), refused.err());
        Run missing = java("rc-pingpong", "-d", "nosuchdev0");
        assertTrue(missing.err().contains("IB device nosuchdev0 not found"), missing.err());
        Run devinfo = java("devinfo", "-d", "nosuchdev0");
        assertTrue(devinfo.err().contains("wasn't found"), devinfo.err());
    }
}
