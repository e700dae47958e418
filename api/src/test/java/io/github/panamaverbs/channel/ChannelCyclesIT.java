package io.github.panamaverbs.channel;

import static io.github.panamaverbs.cm.CmIT.ip;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.cm.Listener;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Connect, exchange a message each way (bytes checked) and close, over and over on one listener:
 * afterwards this process holds as many file descriptors, as much pinned memory ({@code VmPin})
 * and as many RDMA resources of each kind ({@code rdma resource show}: PDs, CQs, QPs, CM IDs, MRs,
 * contexts) as before. {@code -Dpanamaverbs.cycles=N} (default 100, what CI runs; the long form
 * is 2,000: docs/testing.md).
 */
class ChannelCyclesIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final int CYCLES = Integer.getInteger("panamaverbs.cycles", 100);

    /** What this process holds: fds, pinned kB, and the device's resource counts. */
    private record Held(long fds, long pinnedKb, String resources) {
    }

    private static Held held(String device) throws IOException, InterruptedException {
        long fds;
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            fds = s.count();
        }
        Matcher pin = Pattern.compile("(?m)^VmPin:\\s+(\\d+) kB").matcher(Files.readString(Path.of("/proc/self/status")));
        long pinned = pin.find() ? Long.parseLong(pin.group(1)) : -1;
        Process p = new ProcessBuilder("rdma", "resource", "show").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "rdma resource show: " + out);
        String line = out.lines().filter(l -> l.contains(" " + device + ": ")).findFirst().orElse("(no line for " + device + ")");
        return new Held(fds, pinned, line.substring(line.indexOf(device)));
    }

    private static void cycle(Listener listener, InetSocketAddress address, int k) throws Exception {
        MessageChannel.Config config = new MessageChannel.Config().messageSize(256).slots(4);
        CompletableFuture<MessageChannel> accepted = CompletableFuture.supplyAsync(() -> MessageChannel.accept(listener, config, TIMEOUT));
        try (MessageChannel client = MessageChannel.connect(address, config, TIMEOUT);
             MessageChannel server = accepted.get(60, TimeUnit.SECONDS)) {
            byte[] ping = ("ping " + k).getBytes(StandardCharsets.UTF_8);
            assertTrue(client.send(MemorySegment.ofArray(ping), TIMEOUT));
            try (MessageChannel.Received r = server.receive(TIMEOUT)) {
                assertEquals("ping " + k, new String(r.segment().toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8));
                assertTrue(server.send(r.segment(), TIMEOUT));
            }
            try (MessageChannel.Received r = client.receive(TIMEOUT)) {
                assertEquals("ping " + k, new String(r.segment().toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8));
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void connectAndCloseCyclesLeakNothing(String provider) throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip(provider), 20_000 + new Random().nextInt(10_000));
        try (Listener listener = Listener.bind(address, 8)) {
            String device = listener.id().context().device().name();
            for (int k = 0; k < 3; k++) {
                cycle(listener, address, k); // first uses: the library's lazily made state (event loop, handles)
            }
            Held before = held(device);
            long start = System.nanoTime();
            for (int k = 0; k < CYCLES; k++) {
                cycle(listener, address, k);
            }
            double perCycle = (System.nanoTime() - start) / 1e6 / CYCLES;
            Held after = held(device);
            for (int i = 0; i < 100 && !after.equals(before); i++) { // the kernel's teardown of the last ones may lag
                Thread.sleep(100);
                after = held(device);
            }
            assertEquals(before, after, CYCLES + " connect/close cycles on " + device + " (" + String.format("%.0f", perCycle) + " ms each)");
            System.out.printf("%d cycles on %s: %.0f ms each; held before and after: %s%n", CYCLES, device, perCycle, after);
        }
    }
}
