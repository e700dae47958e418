package io.github.panamaverbs.samples.apps;

import static io.github.panamaverbs.samples.CmTools.awaitListening;
import static io.github.panamaverbs.samples.CmTools.ip;
import static io.github.panamaverbs.samples.SampleRuns.otherCpu;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.samples.CmTools.Proc;
import io.github.panamaverbs.samples.SampleRuns.Run;
import io.github.panamaverbs.verbs.testing.RequiresRdma;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The channel layer's applications as users run them, each side a process of its own
 * ({@code samples/run}), on Soft-RoCE and SoftiWARP: {@code kv-server} and {@code kv-client} (PUTs by
 * RPC, GETs by RDMA READ, read back by a second client process, a refused PUT named), and
 * {@code rpc-ping} (Soft-RoCE: calls, and RDMA READs through the token of the server's region with {@code -r}).
 */
@RequiresRdma
class AppsIT {
    private static final int LIMIT = 240;
    private static int nextPort = 7620;

    private static synchronized String port() {
        return Integer.toString(nextPort++);
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void keyValuePutsByRpcAndGetsByRdmaRead(String provider) throws Exception {
        String ip = ip(provider);
        String port = port();
        try (Proc server = Proc.java(otherCpu(), "kv-server", "-p", port, "-n", "100", ip)) {
            awaitListening(port, server, LIMIT);
            try (Proc writer = Proc.java(List.of(), "kv-client", "-p", port, ip, "put", "7", "seven", "put", "42",
                    "the answer", "get", "7", "get", "42", "get", "3")) {
                Run w = writer.await(LIMIT, server.output());
                assertEquals(0, w.status(), w.out() + w.err());
                assertEquals(List.of("put 7 = seven", "put 42 = the answer", "get 7 = seven", "get 42 = the answer", "get 3 = "),
                        w.out().lines().toList(), w.err());
            }
            // a second process reads what the first wrote, then makes a PUT the server refuses
            try (Proc reader = Proc.java(List.of(), "kv-client", "-p", port, ip, "get", "42", "put", "42", "new", "get", "42",
                    "put", "100", "out of range")) {
                Run r = reader.await(LIMIT, server.output());
                assertEquals(1, r.status(), r.out() + r.err());
                assertEquals(List.of("get 42 = the answer", "put 42 = new", "get 42 = new"), r.out().lines().toList(), r.err());
                assertTrue(r.err().contains("failed on the server: java.lang.IllegalArgumentException: key 100 (of 100)"), r.err());
            }
            Run s = server.kill();
            assertTrue(s.out().startsWith("kv-server: 100 keys on "), s.out() + s.err());
        }
    }

    /**
     * On Soft-RoCE only (the RPC layer's tests, RpcIT, run on both): each process costs the emulated
     * CPU half a minute. A server with -r answers calls and exports a region: a client calls, another reads, a third
     * keeps 4 calls in flight.
     */
    @org.junit.jupiter.api.Test
    void rpcPingChecksEveryReply() throws Exception {
        String ip = ip("rxe");
        String port = port();
        try (Proc server = Proc.java(otherCpu(), "rpc-ping", "-p", port, "-s", "100", "-r", ip)) {
            awaitListening(port, server, LIMIT);
            for (String mode : new String[] {"calls", "reads", "pipelined"}) {
                List<String> args = new java.util.ArrayList<>(List.of("-p", port, "-s", "100", "-n", "300", "--client", ip));
                if (mode.equals("reads")) {
                    args.add("-r");
                }
                if (mode.equals("pipelined")) { // 4 virtual threads calling at once, busy-polling on one carrier
                    args.addAll(List.of("-P", "4", "-b"));
                }
                try (Proc client = Proc.java(List.of(), "rpc-ping", args.toArray(String[]::new))) {
                    Run c = client.await(LIMIT, server.output());
                    assertEquals(0, c.status(), c.out() + c.err());
                    assertTrue(c.out().matches(mode.equals("pipelined")
                            ? "(?s)rpc-ping: 300 calls of 100 bytes, 4 in flight: [0-9.]+ calls/s, [0-9.]+ us per call\\R"
                            : "(?s)rpc-ping: 300 " + mode + " of 100 bytes: median [0-9.]+ us, average [0-9.]+ us, 99% [0-9.]+ us\\R"), c.out());
                }
            }
        }
    }
}
