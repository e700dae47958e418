package io.github.panamaverbs.samples.apps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.samples.common.Options;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** What the channel layer's samples promise without a device. */
class AppsTest {
    /** Issue 29's measure: the key-value service, server and client with their argument parsing, a third of the ~400 hand-written lines. */
    @Test
    void theKeyValueSampleIsAtMost130Lines() throws Exception {
        long lines = Files.readAllLines(Path.of("src/main/java/io/github/panamaverbs/samples/apps/KeyValue.java")).size();
        assertTrue(lines <= 130, "KeyValue.java has " + lines + " lines (at most 130: a third of the hand-written ~400)");
    }

    /** rpc-ping -T, the TCP reference line: a server on the loopback and a client whose every reply is checked. */
    @Test
    void rpcPingOverTcpChecksEveryReply() throws Exception {
        int port;
        try (ServerSocket free = new ServerSocket(0)) {
            port = free.getLocalPort();
        }
        InetSocketAddress address = new InetSocketAddress("127.0.0.1", port);
        ByteArrayOutputStream served = new ByteArrayOutputStream();
        Thread server = Thread.ofPlatform().daemon().start(() -> TcpPing.serve(address, 100, new PrintStream(served, true)));
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        int status = -1;
        for (int i = 0; i < 50 && status != 0; i++) { // until the server listens
            try {
                status = RpcPing.main(new String[] {"-T", "-p", String.valueOf(port), "-s", "100", "-n", "300", "--client", "127.0.0.1"},
                        new PrintStream(text, true, StandardCharsets.UTF_8));
            } catch (RuntimeException e) {
                Thread.sleep(100);
            }
        }
        assertEquals(0, status, text.toString(StandardCharsets.UTF_8));
        assertTrue(text.toString(StandardCharsets.UTF_8).matches("(?s)rpc-ping: 300 calls over TCP of 100 bytes: median [0-9.]+ us, "
                + "average [0-9.]+ us, 99% [0-9.]+ us\\R"), text.toString(StandardCharsets.UTF_8));
        assertTrue(server.isAlive(), "the server serves on after its client");
        Options.UsageException e = assertThrows(Options.UsageException.class,
                () -> RpcPing.main(new String[] {"-T", "-P", "4", "--client", "127.0.0.1"}, new PrintStream(new ByteArrayOutputStream())));
        assertTrue(e.getMessage().contains("-T makes single calls"), e.getMessage());
    }
}
