package io.github.panamaverbs.verbs;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Keeps the virtual-thread example of docs/features.md compiling and verbatim; VirtualThreadIT runs it on the device. */
public class VirtualThreadExampleTest {
    private static final String BEGIN = "// README-VT-EXAMPLE-BEGIN";
    private static final String END = "// README-VT-EXAMPLE-END";

    /** The example: a virtual thread waits for a receive through the completion channel; returns what it got. */
    static String example(String deviceName, int gidIndex) throws InterruptedException {
        String[] received = new String[1];
        // README-VT-EXAMPLE-BEGIN
        try (Context ctx = Device.open(deviceName);
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             CompletionChannel channel = ctx.createCompletionChannel();
             CompletionQueue recvCq = ctx.createCompletionQueue(16, channel, 0);   // its events go to the channel
             CompletionQueue sendCq = ctx.createCompletionQueue(16);
             QueuePair receiver = pd.createQueuePair(new QpInitAttributes(QpType.RC, sendCq, recvCq));
             QueuePair sender = pd.createQueuePair(new QpInitAttributes(QpType.RC, sendCq, sendCq));
             MemoryRegion mr = pd.allocateAndRegister(4096, AccessFlag.LOCAL_WRITE)) {
            ConnectOptions how = ConnectOptions.port(1).gidIndex(gidIndex);
            receiver.connect(sender.localEndpoint(how), how);
            sender.connect(receiver.localEndpoint(how), how);
            receiver.postReceive(new ReceiveRequest(1).sge(mr, 2048, 64));

            Thread waiter = Thread.ofVirtual().start(() -> {
                WorkCompletions done = new WorkCompletions(4);
                // polls, arms the queue's notification, polls again, then parks until the event:
                // no OS thread is held while it waits, so thousands of such threads are cheap
                int n = recvCq.await(done, Duration.ofSeconds(10));
                if (n > 0 && done.status(0) == WcStatus.SUCCESS) {
                    received[0] = mr.segment().getString(2048);
                }
            });
            mr.segment().setString(0, "woken by a completion event");
            sender.postSend(new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(mr, 0, 64));
            waiter.join();
            System.out.println(received[0]);
        }
        // README-VT-EXAMPLE-END
        return received[0];
    }

    @Test
    void exampleFailsClearlyWithoutThatDevice() {
        VerbsException e = assertThrows(VerbsException.class, () -> example("no-such-device0", 0));
        assertTrue(e.getMessage().contains("no RDMA device named no-such-device0"), e.getMessage());
    }

    @Test
    void readmeContainsTheExampleVerbatim() throws Exception {
        ReadmeExampleTest.assertInDocument("docs/features.md", VirtualThreadExampleTest.class, BEGIN, END);
    }
}
