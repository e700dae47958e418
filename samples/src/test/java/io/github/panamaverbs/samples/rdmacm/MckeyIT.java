package io.github.panamaverbs.samples.rdmacm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.samples.CmTools;
import io.github.panamaverbs.samples.SampleRuns;
import io.github.panamaverbs.samples.SampleRuns.Run;
import io.github.panamaverbs.verbs.testing.RequiresRdma;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code mckey} (multicast over the connection manager) against rdmacm-utils' mckey on Soft-RoCE,
 * both ways and Java with Java: the receiver joins first, the sender joins, waits 3 s as the C tool
 * does and sends; the receiver must get every datagram. iWARP has no multicast, so rxe only.
 */
@RequiresRdma
class MckeyIT {
    private static final int COUNT = 10;

    private static String localIp() {
        return CmTools.ip("rxe");
    }

    private static String group() {
        return "239.7." + new Random().nextInt(250) + "." + (1 + new Random().nextInt(250));
    }

    /** Runs {@code command} (a C tool) in the background, its output collected. */
    private static CompletableFuture<Run> background(List<String> command) throws IOException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        return CompletableFuture.supplyAsync(() -> {
            try {
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                if (!p.waitFor(90, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    return new Run(-1, out, "timed out");
                }
                return new Run(p.exitValue(), out, "");
            } catch (IOException | InterruptedException e) {
                p.destroyForcibly();
                return new Run(-1, "", e.toString());
            }
        });
    }

    private static void assertReceiver(Run r) {
        assertEquals(0, r.status(), r.out() + r.err());
        assertTrue(r.out().contains("mckey: starting server"), r.out());
        assertTrue(r.out().contains("mckey: joined dgid: ::ffff:239.7."), r.out());
        assertTrue(r.out().contains("receiving data transfers\ndata transfers complete\n"), r.out());
        assertTrue(r.out().contains("return status 0"), r.out());
    }

    private static void assertSender(Run r) {
        assertEquals(0, r.status(), r.out() + r.err());
        assertTrue(r.out().contains("mckey: starting client"), r.out());
        assertTrue(r.out().contains("initiating data transfers\ndata transfers complete\n"), r.out());
    }

    @Test
    void javaReceiverGetsTheCSendersDatagrams() throws Exception {
        String ip = localIp();
        String group = group();
        CompletableFuture<Run> receiver = CompletableFuture.supplyAsync(() -> SampleRuns.java("mckey",
                "-b", ip, "-m", group, "-C", Integer.toString(COUNT), "--timeout", "60"));
        Thread.sleep(1500); // the receiver joins first (both then wait 3 s)
        Run sender = background(List.of("timeout", "60", "mckey", "-s", "-b", ip, "-m", group,
                "-C", Integer.toString(COUNT))).get(90, TimeUnit.SECONDS);
        assertSender(sender);
        assertReceiver(receiver.get(90, TimeUnit.SECONDS));
    }

    @Test
    void cReceiverGetsTheJavaSendersDatagrams() throws Exception {
        String ip = localIp();
        String group = group();
        CompletableFuture<Run> receiver = background(List.of("timeout", "60", "mckey", "-b", ip, "-m", group,
                "-C", Integer.toString(COUNT)));
        Thread.sleep(1500);
        Run sender = SampleRuns.java("mckey", "-s", "-b", ip, "-m", group, "-C", Integer.toString(COUNT));
        assertSender(sender);
        assertReceiver(receiver.get(90, TimeUnit.SECONDS));
    }

    @Test
    void javaToJava() throws Exception {
        String ip = localIp();
        String group = group();
        CompletableFuture<Run> receiver = CompletableFuture.supplyAsync(() -> SampleRuns.java("mckey",
                "-b", ip, "-m", group, "-C", Integer.toString(COUNT), "-S", "512", "--timeout", "60"));
        Thread.sleep(1500);
        assertSender(SampleRuns.java("mckey", "-s", "-b", ip, "-m", group, "-C", Integer.toString(COUNT), "-S", "512"));
        assertReceiver(receiver.get(90, TimeUnit.SECONDS));
    }

    @Test
    void aMessageLargerThanTheMtuIsRefusedAsTheCToolDoes() {
        Run r = SampleRuns.java("mckey", "-b", localIp(), "-m", group(), "-S", "4000");
        assertEquals(1, r.status(), r.out() + r.err());
        assertTrue(r.out().contains("mckey: message_size 4000 is larger than active mtu"), r.out());
    }
}
