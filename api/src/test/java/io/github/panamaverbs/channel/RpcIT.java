package io.github.panamaverbs.channel;

import static io.github.panamaverbs.cm.CmIT.ip;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link RpcServer} and {@link RpcClient} on Soft-RoCE and SoftiWARP: replies checked byte for byte
 * (0 and 1 byte, a full payload; requests of a slot + 1 and 2 MiB by rendezvous; replies of a slot + 1
 * to 2 MiB by rendezvous), the handler's failure carried to the caller, a call that times out
 * while later ones succeed, 10,000 virtual threads calling on one client at once, and a server that
 * goes failing every pending call with the peer named; a peer process killed (SIGKILL) mid-call and
 * mid-send ({@link RpcPeer}) fails every pending call and the parked sender, naming it.
 */
class RpcIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final AtomicInteger PORT = new AtomicInteger(30_000 + new Random().nextInt(10_000));

    /**
     * The test's handler: replies the request reversed; "fail..." throws; "slow" answers after 1.5 s;
     * a request larger than the response: its length and {@link #digest}.
     */
    private static int reverse(MemorySegment request, MemorySegment response) throws Exception {
        int n = (int) request.byteSize();
        if (n > response.byteSize()) {
            response.set(ValueLayout.JAVA_INT_UNALIGNED, 0, n);
            response.set(ValueLayout.JAVA_LONG_UNALIGNED, 4, digest(request));
            return 12;
        }
        String text = n <= 16 ? new String(request.toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8) : "";
        if (text.startsWith("fail")) {
            throw new IllegalArgumentException("no such key: " + text);
        }
        if (text.equals("slow")) {
            Thread.sleep(1500);
        }
        for (int i = 0; i < n; i++) {
            response.set(ValueLayout.JAVA_BYTE, i, request.get(ValueLayout.JAVA_BYTE, n - 1 - i));
        }
        return n;
    }

    /** Every byte of {@code s}, each weighed by its place. */
    private static long digest(MemorySegment s) {
        long d = 0;
        for (long i = 0; i < s.byteSize(); i++) {
            d = d * 31 + s.get(ValueLayout.JAVA_BYTE, i);
        }
        return d;
    }

    private static MemorySegment bytes(String s) {
        return MemorySegment.ofArray(s.getBytes(StandardCharsets.UTF_8));
    }

    private static String text(RpcClient.Response r) {
        try (r) {
            return new String(r.segment().toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void callsAreAnsweredAndFailuresCarried(String provider) throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip(provider), PORT.incrementAndGet());
        MessageChannel.Config config = new MessageChannel.Config().messageSize(1024).slots(8).largestMessage(2 << 20);
        try (RpcServer server = RpcServer.start(address, config, RpcIT::reverse);
             RpcClient client = RpcClient.connect(address, config, TIMEOUT);
             Arena arena = Arena.ofConfined()) {
            assertEquals(1024 - RpcClient.HEADER, client.maxPayloadSize());
            assertEquals("olleh", text(client.call(bytes("hello"), TIMEOUT)));
            assertEquals("", text(client.call(MemorySegment.ofArray(new byte[0]), TIMEOUT)));
            assertEquals("x", text(client.call(bytes("x"), TIMEOUT)));
            MemorySegment full = arena.allocate(client.maxPayloadSize());
            for (int i = 0; i < full.byteSize(); i++) {
                full.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 13));
            }
            try (RpcClient.Response r = client.call(full, TIMEOUT)) {
                assertEquals(full.byteSize(), r.length());
                for (int i = 0; i < full.byteSize(); i++) {
                    assertEquals((byte) ((full.byteSize() - 1 - i) * 13), r.segment().get(ValueLayout.JAVA_BYTE, i), "byte " + i);
                }
            }
            // requests larger than a slot: by rendezvous, the handler sees every byte
            assertEquals((2 << 20) - RpcClient.HEADER, client.maxRequestSize());
            for (long size : new long[] {client.maxPayloadSize() + 1, client.maxRequestSize()}) {
                MemorySegment large = arena.allocate(size);
                for (int i = 0; i < size; i++) {
                    large.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + size));
                }
                try (RpcClient.Response r = client.call(large, TIMEOUT)) {
                    assertEquals(12, r.length());
                    assertEquals(size, r.segment().get(ValueLayout.JAVA_INT_UNALIGNED, 0));
                    assertEquals(digest(large), r.segment().get(ValueLayout.JAVA_LONG_UNALIGNED, 4), "the digest of " + size + " bytes");
                }
            }
            IllegalArgumentException tooLarge = assertThrows(IllegalArgumentException.class,
                    () -> client.call(arena.allocate(client.maxRequestSize() + 1), TIMEOUT));
            assertTrue(tooLarge.getMessage().contains("larger than the " + client.maxRequestSize()), tooLarge.getMessage());
            RpcException failed = assertThrows(RpcException.class, () -> client.call(bytes("fail k1"), TIMEOUT));
            assertEquals(RpcException.Kind.REMOTE, failed.kind());
            assertTrue(failed.getMessage().contains("IllegalArgumentException: no such key: fail k1"), failed.getMessage());
            // a call that times out; its late reply is dropped, and the calls after it are answered
            RpcException late = assertThrows(RpcException.class, () -> client.call(bytes("slow"), Duration.ofMillis(300)));
            assertEquals(RpcException.Kind.TIMEOUT, late.kind());
            assertEquals("wols", text(client.call(bytes("slow"), TIMEOUT)));
            // the async form
            CompletableFuture<String> async = client.callAsync(bytes("async"), TIMEOUT).thenApply(RpcIT::text);
            assertEquals("cnysa", async.get(30, TimeUnit.SECONDS));
            CompletionException e = assertThrows(CompletionException.class, () -> client.callAsync(bytes("fail"), TIMEOUT).join());
            assertTrue(e.getCause() instanceof RpcException r && r.kind() == RpcException.Kind.REMOTE, String.valueOf(e.getCause()));
        }
    }

    /**
     * The handler of a server with large replies: a request of 4 bytes asks for that many bytes of
     * {@link #pattern}; a larger request is echoed (as much as the room takes).
     */
    private static int sized(MemorySegment request, MemorySegment response) {
        if (request.byteSize() == 4) {
            int n = request.get(ValueLayout.JAVA_INT_UNALIGNED, 0);
            if (n > response.byteSize()) {
                throw new IllegalArgumentException(n + " bytes asked, " + response.byteSize() + " of room");
            }
            pattern(response, n);
            return n;
        }
        int n = (int) Math.min(request.byteSize(), response.byteSize());
        MemorySegment.copy(request, 0, response, 0, n);
        return n;
    }

    private static void pattern(MemorySegment s, int n) {
        for (int i = 0; i < n; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 11 + n));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void repliesLargerThanASlotComeByRendezvous(String provider) throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip(provider), PORT.incrementAndGet());
        int largest = 2 << 20; // the client's largest message: the handler's room is that less the header
        try (RpcServer server = RpcServer.start(address, new MessageChannel.Config().messageSize(1024).slots(4), 3 << 20, RpcIT::sized);
             RpcClient client = RpcClient.connect(address, new MessageChannel.Config().messageSize(1024).slots(4).largestMessage(largest), TIMEOUT);
             Arena arena = Arena.ofConfined()) {
            assertEquals(3 << 20, server.maxPayloadSize());
            int room = largest - RpcClient.HEADER;
            MemorySegment ask = arena.allocate(4);
            // in a slot (copied there from the handler's room), one more than a slot, and the most;
            // more calls than the 4 slots, so the server's registered rooms are reused
            int[] sizes = {0, 1, client.maxPayloadSize(), client.maxPayloadSize() + 1, 100_000, room, 5000, 300_000, 12, 300_000, 70_000, 300_001};
            for (int n : sizes) {
                ask.set(ValueLayout.JAVA_INT_UNALIGNED, 0, n);
                try (RpcClient.Response r = client.call(ask, TIMEOUT)) {
                    assertEquals(n, r.length(), "reply of " + n);
                    MemorySegment expected = arena.allocate(Math.max(1, n)).asSlice(0, n);
                    pattern(expected, n);
                    assertEquals(-1, expected.mismatch(r.segment()), "the bytes of a reply of " + n);
                }
            }
            // more than the client takes: the handler's room is what the client takes, and its failure says so
            ask.set(ValueLayout.JAVA_INT_UNALIGNED, 0, room + 1);
            RpcException refused = assertThrows(RpcException.class, () -> client.call(ask, TIMEOUT));
            assertEquals(RpcException.Kind.REMOTE, refused.kind());
            assertTrue(refused.getMessage().contains((room + 1) + " bytes asked, " + room + " of room"), refused.getMessage());
            // a large request and its large echo, both by rendezvous, every byte checked
            MemorySegment large = arena.allocate(1 << 20);
            pattern(large, (int) large.byteSize());
            try (RpcClient.Response r = client.call(large, TIMEOUT)) {
                assertEquals(large.byteSize(), r.length());
                assertEquals(-1, large.mismatch(r.segment()));
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void theReadmeExampleRuns(String provider) throws Exception {
        assertEquals("HELLO, RPC", RpcReadmeExampleTest.call(new InetSocketAddress(ip(provider), PORT.incrementAndGet())));
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void tenThousandVirtualThreadsCallOnOneClient(String provider) throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip(provider), PORT.incrementAndGet());
        MessageChannel.Config config = new MessageChannel.Config().messageSize(64).slots(64);
        int callers = 10_000;
        try (RpcServer server = RpcServer.start(address, config, RpcIT::reverse);
             RpcClient client = RpcClient.connect(address, config, TIMEOUT);
             ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> calls = new ArrayList<>();
            for (int t = 0; t < callers; t++) {
                String request = "call " + t;
                calls.add(pool.submit(() -> {
                    assertEquals(new StringBuilder(request).reverse().toString(), text(client.call(bytes(request), Duration.ofMinutes(5))));
                    return null;
                }));
            }
            for (Future<?> f : calls) {
                f.get(5, TimeUnit.MINUTES);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void aServerThatGoesFailsEveryPendingCall(String provider) throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip(provider), PORT.incrementAndGet());
        MessageChannel.Config config = new MessageChannel.Config().messageSize(64).slots(8);
        RpcServer server = RpcServer.start(address, config, RpcIT::reverse);
        try (RpcClient client = RpcClient.connect(address, config, TIMEOUT)) {
            List<CompletableFuture<RpcClient.Response>> pending = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                pending.add(client.callAsync(bytes("slow"), TIMEOUT)); // the server answers them one by one, 1.5 s each
            }
            Thread.sleep(500);
            long closedAt = System.nanoTime();
            server.close();
            int failed = 0;
            for (CompletableFuture<RpcClient.Response> f : pending) {
                try {
                    text(f.get(30, TimeUnit.SECONDS));
                } catch (java.util.concurrent.ExecutionException e) {
                    RpcException r = (RpcException) e.getCause();
                    assertEquals(RpcException.Kind.CLOSED, r.kind(), r.getMessage());
                    assertTrue(r.getMessage().contains("the connection to " + address.getAddress().getHostAddress() + ":" + address.getPort()),
                            r.getMessage());
                    failed++;
                }
            }
            assertTrue(failed >= 2, failed + " of 4 pending calls failed"); // the first may be answered before the close
            assertTrue(System.nanoTime() - closedAt < TimeUnit.SECONDS.toNanos(20));
            RpcException after = assertThrows(RpcException.class, () -> client.call(bytes("x"), TIMEOUT));
            assertEquals(RpcException.Kind.CLOSED, after.kind());
        }
    }

    /** The channels of the tests with a peer process ({@link RpcPeer}, which uses them too). */
    static final MessageChannel.Config DEATH_CONFIG = new MessageChannel.Config().messageSize(256).slots(4);

    /** {@link RpcPeer}: an RPC server at {@code server} and a channel sink at {@code sink}, once it serves. */
    private static Process peer(InetSocketAddress server, InetSocketAddress sink) throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        Process p = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-cp", System.getProperty("java.class.path"), RpcPeer.class.getName(), server.getAddress().getHostAddress(),
                Integer.toString(server.getPort()), Integer.toString(sink.getPort()))
                .redirectErrorStream(true).start();
        var out = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        assertTrue(line != null && line.startsWith("SERVING"), "the peer process says: " + line);
        return p;
    }

    private static String named(InetSocketAddress a) {
        return a.getAddress().getHostAddress() + ":" + a.getPort();
    }

    /** A recording of the channel layer's events (ChannelEvents), started. */
    private static jdk.jfr.Recording recording() {
        jdk.jfr.Recording r = new jdk.jfr.Recording();
        for (String e : new String[] {"ChannelOpen", "ChannelEnd", "CreditStall", "RpcError"}) {
            r.enable("io.github.panamaverbs." + e).withoutThreshold();
        }
        r.start();
        return r;
    }

    /** The events named {@code name} of recording {@code r} (stopped and read) whose channel is to or from {@code peer}. */
    private static List<jdk.jfr.consumer.RecordedEvent> events(jdk.jfr.Recording r, String name, InetSocketAddress peer) throws Exception {
        if (r.getState() == jdk.jfr.RecordingState.RUNNING) {
            r.stop();
        }
        java.nio.file.Path file = java.nio.file.Files.createTempFile("rpcit", ".jfr");
        try {
            r.dump(file);
            return jdk.jfr.consumer.RecordingFile.readAllEvents(file).stream()
                    .filter(e -> e.getEventType().getName().equals("io.github.panamaverbs." + name))
                    .filter(e -> e.getString("channel").contains(named(peer)))
                    .sorted(java.util.Comparator.comparing(jdk.jfr.consumer.RecordedEvent::getStartTime)).toList();
        } finally {
            java.nio.file.Files.delete(file);
        }
    }

    /**
     * One peer process that serves calls and sinks a channel, killed (SIGKILL) while 20 calls wait
     * for replies and a send waits for credit: every pending call and the parked send fail, naming
     * the peer, within a minute (one process for both, as each costs the emulated CPU seconds to start).
     */
    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void aPeerProcessKilledFailsEveryPendingCallAndTheParkedSender(String provider) throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip(provider), PORT.incrementAndGet());
        InetSocketAddress sinkAddress = new InetSocketAddress(ip(provider), PORT.incrementAndGet());
        Process peer = peer(address, sinkAddress);
        jdk.jfr.Recording recording = recording();
        try (recording; RpcClient client = RpcClient.connect(address, DEATH_CONFIG, TIMEOUT);
             MessageChannel channel = MessageChannel.connect(sinkAddress, DEATH_CONFIG, TIMEOUT)) {
            // mid-call: 20 calls the server never answers
            assertEquals("ok", text(client.call(bytes("ok"), TIMEOUT)));
            List<CompletableFuture<RpcClient.Response>> pending = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                pending.add(client.callAsync(bytes("hang"), Duration.ofSeconds(120)));
            }
            // mid-send: the sink never receives, so its ring fills and a fifth send waits for credit
            MemorySegment message = bytes("credit");
            int sent = 0;
            while (channel.send(message, Duration.ofSeconds(2))) {
                sent++;
                assertTrue(sent <= 4, "the sink's 4 slots took " + sent + " messages");
            }
            assertEquals(4, sent);
            CompletableFuture<Boolean> parked = new CompletableFuture<>();
            Thread.ofVirtual().start(() -> {
                try {
                    parked.complete(channel.send(message, Duration.ofSeconds(120)));
                } catch (RuntimeException e) {
                    parked.completeExceptionally(e);
                }
            });
            Thread.sleep(1000);
            assertTrue(!parked.isDone(), "the fifth send waits for credit");
            long killedAt = System.nanoTime();
            peer.destroyForcibly().waitFor();
            for (CompletableFuture<RpcClient.Response> f : pending) {
                java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                        () -> f.get(90, TimeUnit.SECONDS));
                RpcException r = (RpcException) e.getCause();
                assertEquals(RpcException.Kind.CLOSED, r.kind(), r.getMessage());
                assertTrue(r.getMessage().contains(named(address)), r.getMessage());
            }
            java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> parked.get(90, TimeUnit.SECONDS));
            ChannelException c = (ChannelException) e.getCause();
            assertTrue(c.getMessage().contains(named(sinkAddress)), c.getMessage());
            long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - killedAt);
            assertTrue(seconds < 60, "the pending calls and the parked send failed " + seconds + " s after the kill");
            assertEquals(RpcException.Kind.CLOSED, assertThrows(RpcException.class, () -> client.call(bytes("x"), TIMEOUT)).kind());
            // Flight Recorder: the channel's making and end, and one event per failed call (21), none per message
            List<jdk.jfr.consumer.RecordedEvent> open = events(recording, "ChannelOpen", address);
            assertEquals(1, open.size(), open.toString());
            assertEquals("client", open.get(0).getString("side"));
            List<jdk.jfr.consumer.RecordedEvent> end = events(recording, "ChannelEnd", address);
            assertEquals(1, end.size(), end.toString());
            assertTrue(end.get(0).getString("reason").contains(named(address)), end.toString());
            List<jdk.jfr.consumer.RecordedEvent> errors = events(recording, "RpcError", address);
            assertEquals(21, errors.size(), errors.toString());
            assertTrue(errors.stream().allMatch(ev -> ev.getString("kind").equals("CLOSED") && ev.getString("message").contains(named(address))),
                    errors.toString());
            // and the two sends that waited (one timed out, one ended by the kill), not the four that did not
            List<String> stalls = events(recording, "CreditStall", sinkAddress).stream().map(ev -> ev.getString("outcome")).toList();
            assertEquals(List.of("timed out", "the channel ended"), stalls);
        } finally {
            peer.destroyForcibly();
        }
    }
}
