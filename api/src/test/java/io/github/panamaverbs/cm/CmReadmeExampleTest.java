package io.github.panamaverbs.cm;

import io.github.panamaverbs.verbs.MemoryRegion;
import io.github.panamaverbs.verbs.ReadmeExampleTest;
import io.github.panamaverbs.verbs.ReceiveRequest;
import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** Keeps the rdma_cm example of docs/features.md compiling and verbatim; CmIT runs it on rxe and siw. */
public class CmReadmeExampleTest {
    // (built so that no line of this file but the markers themselves holds a snippet tag)
    private static final String BEGIN = "/".repeat(2) + " @start region=\"cm\"";
    private static final String END = "/".repeat(2) + " @end region=\"cm\"";

    /** The README's rdma_cm example: a server and a client in one program, connected by IP and port. */
    public static String exchange(InetSocketAddress address) throws Exception {
        // @start region="cm"
        Duration timeout = Duration.ofSeconds(10);
        try (Listener listener = Listener.bind(address, 8)) {                  // the server
            CompletableFuture<String> served = CompletableFuture.supplyAsync(() -> {
                Connection.Config config = new Connection.Config().beforeConnect(c -> {
                    MemoryRegion buffer = c.own(c.protectionDomain().allocateAndRegister(4096));   // closed with c
                    c.queuePair().postReceive(new ReceiveRequest(1).sge(buffer, 0, 4096));   // before the peer sends
                    c.attach(buffer);                                                     // the connection's state
                });
                try (Connection c = listener.accept(config, timeout)) {
                    MemoryRegion mr = (MemoryRegion) c.attachment();
                    WorkCompletions wc = new WorkCompletions(1);
                    while (c.completionQueue().poll(wc) == 0) {
                        Thread.onSpinWait();
                    }
                    return wc.status(0) + ": " + mr.segment().getString(0);
                }
            });
            try (Connection c = Connection.connect(address, new Connection.Config(), timeout);   // the client
                 MemoryRegion mr = c.protectionDomain().allocateAndRegister(4096)) {
                mr.segment().setString(0, "hello over rdma_cm");
                c.queuePair().postSend(new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(mr, 0, 64));
                WorkCompletions wc = new WorkCompletions(1);
                while (c.completionQueue().poll(wc) == 0) {
                    Thread.onSpinWait();
                }
            }
            return served.get();
        }
        // @end region="cm"
    }

    @Test
    void theFeaturesPageContainsTheExampleVerbatim() throws Exception {
        ReadmeExampleTest.assertInDocument("docs/features.md", CmReadmeExampleTest.class, BEGIN, END);
    }
}
