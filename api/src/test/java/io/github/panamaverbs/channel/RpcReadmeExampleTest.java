package io.github.panamaverbs.channel;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.nio.charset.StandardCharsets.UTF_8;

import io.github.panamaverbs.verbs.ReadmeExampleTest;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Keeps the README's RPC example compiling and verbatim; RpcIT runs it on rxe and siw. */
public class RpcReadmeExampleTest {
    // (built so that no line of this file but the markers themselves holds a snippet tag)
    private static final String BEGIN = "/".repeat(2) + " @start region=\"rpc\"";
    private static final String END = "/".repeat(2) + " @end region=\"rpc\"";

    /** The README's RPC example: a server that upper-cases, and a client that calls it. */
    public static String call(InetSocketAddress address) {
        // @start region="rpc"
        Duration timeout = Duration.ofSeconds(10);
        MessageChannel.Config config = new MessageChannel.Config();       // 16 slots of 4 KiB each way
        RpcServer.Handler upperCase = (request, response) -> {            // request in, reply written in place
            for (long i = 0; i < request.byteSize(); i++) {
                response.set(JAVA_BYTE, i, (byte) Character.toUpperCase(request.get(JAVA_BYTE, i)));
            }
            return (int) request.byteSize();
        };
        try (RpcServer server = RpcServer.start(address, config, upperCase);
             RpcClient client = RpcClient.connect(address, config, timeout);
             RpcClient.Response reply = client.call(MemorySegment.ofArray("hello, rpc".getBytes(UTF_8)), timeout)) {
            return new String(reply.segment().toArray(JAVA_BYTE), UTF_8);          // "HELLO, RPC"
        }
        // @end region="rpc"
    }

    @Test
    void readmeContainsTheExampleVerbatim() throws Exception {
        ReadmeExampleTest.assertInReadme(RpcReadmeExampleTest.class, BEGIN, END);
    }
}
