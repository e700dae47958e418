package io.github.panamaverbs.cm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.panamaverbs.verbs.AccessFlag;
import io.github.panamaverbs.verbs.CompletionQueue;
import io.github.panamaverbs.verbs.MemoryRegion;
import io.github.panamaverbs.verbs.QpState;
import io.github.panamaverbs.verbs.ReceiveRequest;
import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.TransportType;
import io.github.panamaverbs.verbs.VerbsException;
import io.github.panamaverbs.verbs.WcOpcode;
import io.github.panamaverbs.verbs.WcStatus;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The connection manager on both soft providers: Soft-RoCE (rxe: the IB CM over RoCE v2) and
 * SoftiWARP (siw: iWARP, which connects only this way). Each test runs client and server in this
 * JVM over the device's own IPv4 address (both providers loop back). The harness's
 * {@code --provider both} sets RDMA_RXE_IP and RDMA_SIW_IP; in CI a missing one fails.
 */
public class CmIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final AtomicInteger PORT = new AtomicInteger(20_000 + new Random().nextInt(20_000));

    /** The device address of {@code provider} (rxe or siw) that the harness set; fails in CI when unset, else skips. */
    public static InetAddress ip(String provider) throws Exception {
        String ip = System.getenv("RDMA_" + provider.toUpperCase() + "_IP");
        if (ip == null || ip.isEmpty()) {
            if (Boolean.getBoolean("rdma.required") || "true".equals(System.getenv("CI"))) {
                fail("no " + provider + " device: RDMA_" + provider.toUpperCase() + "_IP is unset (run under scripts/with-rdma --provider both)");
            }
            Assumptions.abort("no " + provider + " device (RDMA_" + provider.toUpperCase() + "_IP unset)");
        }
        return InetAddress.getByName(ip);
    }

    private static int port() {
        return PORT.incrementAndGet();
    }

    /** Polls {@code cq} until one completion arrives; returns its status. */
    private static WorkCompletions one(CompletionQueue cq) {
        WorkCompletions wc = new WorkCompletions(1);
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (cq.poll(wc) == 0) {
            if (System.nanoTime() > deadline) {
                fail("no completion within " + TIMEOUT);
            }
            Thread.onSpinWait();
        }
        return wc;
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void connectSendWriteAndDisconnect(String provider) throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip(provider), port());
        byte[] hello = "hello from the client".getBytes(StandardCharsets.US_ASCII);
        byte[] payload = new byte[4096];
        new Random(7).nextBytes(payload);
        try (Listener listener = Listener.bind(address, 4)) {
            assertEquals(address.getPort(), listener.localAddress().getPort());
            CompletableFuture<byte[]> server = CompletableFuture.supplyAsync(() -> {
                MemoryRegion[] mr = new MemoryRegion[1];
                Connection.Config config = new Connection.Config().beforeConnect(c -> {
                    mr[0] = c.protectionDomain().allocateAndRegister(16384, AccessFlag.REMOTE_WRITE);
                    c.queuePair().postReceive(new ReceiveRequest(1).id(1).sge(mr[0], 0, 4096));
                });
                try (Connection c = listener.accept(config, TIMEOUT)) {
                    try {
                        assertEquals(QpState.RTS, c.queuePair().state());
                        byte[] got = c.peerPrivateData();
                        assertTrue(got.length >= hello.length, "private data length " + got.length);
                        assertArrayEquals(hello, Arrays.copyOf(got, hello.length));
                        WorkCompletions r = one(c.completionQueue());
                        assertEquals(WcStatus.SUCCESS, r.status(0));
                        assertEquals(WcOpcode.RECV, r.opcode(0));
                        assertEquals(4096, r.byteLength(0));
                        byte[] received = mr[0].segment().asSlice(0, 4096).toArray(ValueLayout.JAVA_BYTE);
                        // Tell the client where to write: address and rkey of the second half.
                        MemorySegment advert = mr[0].segment().asSlice(4096, 16);
                        advert.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, mr[0].address() + 4096 + 16);
                        advert.set(ValueLayout.JAVA_INT_UNALIGNED, 8, mr[0].rkey());
                        c.queuePair().postReceive(new ReceiveRequest(1).id(2).sge(mr[0], 0, 16));
                        c.queuePair().postSend(new SendRequest(1).id(3).opcode(SendOpcode.SEND).signaled(true)
                                .sge(mr[0], 4096, 16));
                        assertEquals(WcStatus.SUCCESS, one(c.completionQueue()).status(0));
                        // The client's RDMA write with immediate data lands, then its receive completes.
                        WorkCompletions w = one(c.completionQueue());
                        assertEquals(WcStatus.SUCCESS, w.status(0));
                        assertEquals(2, w.wrId(0));
                        assertArrayEquals(payload, mr[0].segment().asSlice(4096 + 16, 4096).toArray(ValueLayout.JAVA_BYTE));
                        assertTrue(c.awaitDisconnect(TIMEOUT), "the client's disconnect must arrive");
                        return received;
                    } finally {
                        mr[0].close();
                    }
                }
            });
            MemoryRegion[] mine = new MemoryRegion[1];
            Connection.Config config = new Connection.Config()
                    .parameters(new ConnectionParameters().privateData(hello).responderResources(1).initiatorDepth(1))
                    .beforeConnect(c -> {
                        mine[0] = c.protectionDomain().allocateAndRegister(8192);
                        c.queuePair().postReceive(new ReceiveRequest(1).id(10).sge(mine[0], 4096, 16));
                    });
            try (Connection c = Connection.connect(address, config, TIMEOUT)) {
                try {
                    assertEquals(QpState.RTS, c.queuePair().state());
                    assertEquals(provider.equals("siw") ? TransportType.IWARP : TransportType.IB,
                            c.id().context().device().transport());
                    assertEquals(address.getAddress(), c.id().remoteAddress().getAddress());
                    mine[0].segment().asSlice(0, 4096).copyFrom(MemorySegment.ofArray(payload));
                    c.queuePair().postSend(new SendRequest(1).id(11).opcode(SendOpcode.SEND).signaled(true).sge(mine[0], 0, 4096));
                    assertEquals(WcStatus.SUCCESS, one(c.completionQueue()).status(0));
                    WorkCompletions advert = one(c.completionQueue());
                    assertEquals(WcStatus.SUCCESS, advert.status(0));
                    assertEquals(10, advert.wrId(0));
                    long remote = mine[0].segment().get(ValueLayout.JAVA_LONG_UNALIGNED, 4096);
                    int rkey = mine[0].segment().get(ValueLayout.JAVA_INT_UNALIGNED, 4096 + 8);
                    c.queuePair().postSend(new SendRequest(1).id(12).opcode(SendOpcode.RDMA_WRITE).signaled(true)
                            .sge(mine[0], 0, 4096).rdma(remote, rkey));
                    assertEquals(WcStatus.SUCCESS, one(c.completionQueue()).status(0));
                    c.queuePair().postSend(new SendRequest(1).id(13).opcode(SendOpcode.SEND).signaled(true).sge(mine[0], 0, 16));
                    assertEquals(WcStatus.SUCCESS, one(c.completionQueue()).status(0));
                    c.id().disconnect();
                } finally {
                    mine[0].close();
                }
            }
            assertArrayEquals(payload, server.get(60, TimeUnit.SECONDS));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void aPortNobodyListensOnIsRefused(String provider) throws Exception {
        InetSocketAddress nobody = new InetSocketAddress(ip(provider), port());
        long t0 = System.nanoTime();
        ConnectionException e = assertThrows(ConnectionException.class,
                () -> Connection.connect(nobody, new Connection.Config(), TIMEOUT));
        System.out.println(provider + ": " + e.getMessage());
        assertTrue(e.isRejected(), e.getMessage());
        if (provider.equals("rxe")) {
            assertEquals(CmEventType.REJECTED, e.event().type());
            assertEquals(8, e.event().status(), "IB CM reject reason 8: invalid service ID (no listener)");
        }
        assertTrue(System.nanoTime() - t0 < TIMEOUT.toNanos(), "refused within the timeout");
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void privateDataOverTheLimitIsRefusedInJava(String provider) throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip(provider), port());
        int limit = provider.equals("siw") ? 251 : 56;
        try (EventChannel ch = EventChannel.create(); CmId id = ch.createId(PortSpace.TCP)) {
            id.resolve(address, TIMEOUT);
            try (var pd = id.context().allocateProtectionDomain(); var cq = id.context().createCompletionQueue(4)) {
                var qp = id.createQueuePair(pd, new io.github.panamaverbs.verbs.QpInitAttributes(
                        io.github.panamaverbs.verbs.QpType.RC, cq, cq));
                try {
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                            () -> id.connect(new ConnectionParameters().privateData(new byte[limit + 1])));
                    assertTrue(e.getMessage().contains("the limit is " + limit), e.getMessage());
                    assertThrows(IllegalStateException.class, id::close, "an ID closes after its queue pair");
                } finally {
                    qp.close();
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void idsThatNeverConnectedCloseCleanly(String provider) throws Exception {
        InetAddress ip = ip(provider);
        try (EventChannel ch = EventChannel.create()) {
            ch.createId(PortSpace.TCP).close();
            CmId resolved = ch.createId(PortSpace.TCP);
            resolved.resolveAddress(null, new InetSocketAddress(ip, port()), TIMEOUT);
            assertNotEquals(null, resolved.context());
            assertThrows(io.github.panamaverbs.verbs.VerbsException.class, resolved::disconnect, "never connected");
            resolved.close();
            assertThrows(IllegalStateException.class, resolved::close, "double close");
            assertThrows(IllegalStateException.class, () -> resolved.resolveRoute(TIMEOUT), "use after close");
            CmId open = ch.createId(PortSpace.TCP);
            assertThrows(IllegalStateException.class, ch::close, "a channel closes after its IDs");
            open.close();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void theServerGoingAwayIsSeenByTheClient(String provider) throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip(provider), port());
        try (Listener listener = Listener.bind(address, 4)) {
            CompletableFuture<Void> server = CompletableFuture.runAsync(() -> {
                try (Connection c = listener.accept(new Connection.Config(), TIMEOUT)) {
                    assertEquals(QpState.RTS, c.queuePair().state());
                } // closing disconnects mid-stream
            });
            MemoryRegion[] mr = new MemoryRegion[1];
            Connection.Config config = new Connection.Config().beforeConnect(c -> {
                mr[0] = c.protectionDomain().allocateAndRegister(4096);
                c.queuePair().postReceive(new ReceiveRequest(1).id(99).sge(mr[0], 0, 64));
            });
            try (Connection c = Connection.connect(address, config, TIMEOUT)) {
                try {
                    server.get(60, TimeUnit.SECONDS);
                    // Polled with a zero timeout, as a busy loop does between completions.
                    long deadline = System.nanoTime() + TIMEOUT.toNanos();
                    CmEvent event = null;
                    while (event == null && System.nanoTime() < deadline) {
                        event = c.id().nextEvent(Duration.ZERO).orElse(null);
                    }
                    assertTrue(event != null, "DISCONNECTED must arrive when the server closes");
                    assertEquals(CmEventType.DISCONNECTED, event.type());
                    WorkCompletions flushed = one(c.completionQueue());
                    assertEquals(99, flushed.wrId(0));
                    assertEquals(WcStatus.WR_FLUSH_ERR, flushed.status(0), "the posted receive is flushed");
                } finally {
                    mr[0].close();
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void theReadmeExampleRuns(String provider) throws Exception {
        assertEquals("SUCCESS: hello over rdma_cm", CmReadmeExampleTest.exchange(new InetSocketAddress(ip(provider), port())));
    }

    private static final int GRH = 40;

    /** Datagrams need no connection: the client resolves the server's QP number and Q_Key (SIDR). RoCE only: iWARP has no UD. */
    @org.junit.jupiter.api.Test
    void datagramsOverTheConnectionManager() throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip("rxe"), port());
        byte[] payload = new byte[256];
        new Random(3).nextBytes(payload);
        try (EventChannel serverChannel = EventChannel.create(); CmId listener = serverChannel.createId(PortSpace.UDP)) {
            listener.bind(address);
            listener.listen(4);
            CompletableFuture<byte[]> server = CompletableFuture.supplyAsync(() -> {
                CmEvent request = listener.awaitEvent(CmEventType.CONNECT_REQUEST, TIMEOUT);
                try (CmId id = request.id();
                     var pd = id.context().allocateProtectionDomain();
                     var cq = id.context().createCompletionQueue(8);
                     MemoryRegion mr = pd.allocateAndRegister(4096)) {
                    var qp = id.createQueuePair(pd, new io.github.panamaverbs.verbs.QpInitAttributes(
                            io.github.panamaverbs.verbs.QpType.UD, cq, cq));
                    try {
                        assertEquals(QpState.RTS, qp.state(), "librdmacm brings a UD queue pair to RTS");
                        qp.postReceive(new ReceiveRequest(1).id(5).sge(mr, 0, GRH + payload.length));
                        id.accept(new ConnectionParameters());
                        WorkCompletions r = one(cq);
                        assertEquals(WcStatus.SUCCESS, r.status(0));
                        assertEquals(GRH + payload.length, r.byteLength(0));
                        return mr.segment().asSlice(GRH, payload.length).toArray(ValueLayout.JAVA_BYTE);
                    } finally {
                        qp.close();
                    }
                }
            });
            try (EventChannel ch = EventChannel.create(); CmId id = ch.createId(PortSpace.UDP)) {
                id.resolve(address, TIMEOUT);
                try (var pd = id.context().allocateProtectionDomain();
                     var cq = id.context().createCompletionQueue(8);
                     MemoryRegion mr = pd.allocateAndRegister(4096)) {
                    var qp = id.createQueuePair(pd, new io.github.panamaverbs.verbs.QpInitAttributes(
                            io.github.panamaverbs.verbs.QpType.UD, cq, cq));
                    try {
                        id.connect(new ConnectionParameters());
                        CmEvent resolved = id.awaitEvent(CmEventType.ESTABLISHED, TIMEOUT);
                        assertEquals(CmId.UDP_QKEY, resolved.qkey());
                        assertTrue(resolved.addressVector() != null && resolved.addressVector().grh() != null, "a RoCE path has a GRH");
                        try (var ah = pd.createAddressHandle(resolved.addressVector())) {
                            mr.segment().asSlice(0, payload.length).copyFrom(MemorySegment.ofArray(payload));
                            qp.postSend(new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(mr, 0, payload.length)
                                    .datagram(ah, resolved.remoteQpNumber(), resolved.qkey()));
                            assertEquals(WcStatus.SUCCESS, one(cq).status(0));
                            assertArrayEquals(payload, server.get(60, TimeUnit.SECONDS));
                        }
                    } finally {
                        qp.close();
                    }
                }
            }
        }
    }

    /** A datagram sent to a multicast group reaches every member, and none after it left. RoCE only. */
    @org.junit.jupiter.api.Test
    void multicastReachesEveryMemberUntilItLeaves() throws Exception {
        InetAddress local = ip("rxe");
        InetAddress group = InetAddress.getByName("239.1.2." + (1 + new Random().nextInt(200)));
        int members = 2;
        List<AutoCloseable> open = new java.util.ArrayList<>();
        try {
            EventChannel ch = keep(open, EventChannel.create());
            CmId[] ids = new CmId[members];
            io.github.panamaverbs.verbs.QueuePair[] qps = new io.github.panamaverbs.verbs.QueuePair[members];
            CompletionQueue[] cqs = new CompletionQueue[members];
            MemoryRegion[] mrs = new MemoryRegion[members];
            CmEvent joined = null;
            for (int i = 0; i < members; i++) {
                ids[i] = keep(open, ch.createId(PortSpace.UDP));
                ids[i].resolveAddress(new InetSocketAddress(local, 0), new InetSocketAddress(group, 0), TIMEOUT);
                var pd = keep(open, ids[i].context().allocateProtectionDomain());
                cqs[i] = keep(open, ids[i].context().createCompletionQueue(16));
                mrs[i] = keep(open, pd.allocateAndRegister(4096));
                qps[i] = keep(open, ids[i].createQueuePair(pd, new io.github.panamaverbs.verbs.QpInitAttributes(
                        io.github.panamaverbs.verbs.QpType.UD, cqs[i], cqs[i])));
                for (int k = 0; k < 4; k++) {
                    qps[i].postReceive(new ReceiveRequest(1).id(k).sge(mrs[i], 1024L * k, 1024));
                }
                joined = ids[i].joinMulticast(group, TIMEOUT);
                assertEquals(0xFFFFFF, joined.remoteQpNumber());
                assertTrue(joined.addressVector() != null);
            }
            var ah = keep(open, qps[0].protectionDomain().createAddressHandle(joined.addressVector()));
            byte[] payload = "to the whole group".getBytes(StandardCharsets.US_ASCII);
            mrs[0].segment().asSlice(3000, payload.length).copyFrom(MemorySegment.ofArray(payload));
            SendRequest send = new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(mrs[0], 3000, payload.length)
                    .datagram(ah, joined.remoteQpNumber(), joined.qkey());
            qps[0].postSend(send);
            // Member 1 gets it (member 0 may or may not see its own datagram: loopback).
            WorkCompletions got = null;
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            WorkCompletions wc = new WorkCompletions(4);
            while (got == null && System.nanoTime() < deadline) {
                if (cqs[1].poll(wc) > 0) {
                    got = wc;
                }
            }
            assertTrue(got != null, "member 1 received nothing");
            assertEquals(WcStatus.SUCCESS, got.status(0));
            long at = 1024L * got.wrId(0) + GRH;
            assertArrayEquals(payload, mrs[1].segment().asSlice(at, payload.length).toArray(ValueLayout.JAVA_BYTE));

            ids[1].leaveMulticast(group);
            Thread.sleep(300);
            qps[0].postSend(send);
            Thread.sleep(1000);
            assertEquals(0, cqs[1].poll(wc), "a member that left must not receive");
        } finally {
            for (int i = open.size() - 1; i >= 0; i--) {
                open.get(i).close();
            }
        }
    }

    private static <T extends AutoCloseable> T keep(List<AutoCloseable> open, T r) {
        open.add(r);
        return r;
    }

    /**
     * A listener closed while a connection it accepted is open stops listening (a new client is
     * refused) and leaves that connection working; their shared channel closes with the connection.
     */
    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void aListenerClosedBeforeItsConnectionLeavesItWorking(String provider) throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip(provider), port());
        Listener listener = Listener.bind(address, 4);
        MemoryRegion[] theirs = new MemoryRegion[1];
        CompletableFuture<Connection> client = CompletableFuture.supplyAsync(() -> Connection.connect(address,
                new Connection.Config().beforeConnect(c -> {
                    theirs[0] = c.own(c.protectionDomain().allocateAndRegister(4096));
                    c.queuePair().postReceive(new ReceiveRequest(1).id(7).sge(theirs[0], 0, 64));
                }), TIMEOUT));
        MemoryRegion[] mine = new MemoryRegion[1];
        EventChannel[] shared = new EventChannel[1];
        try (Connection server = listener.accept(new Connection.Config().beforeConnect(
                c -> mine[0] = c.own(c.protectionDomain().allocateAndRegister(4096))), TIMEOUT);
             Connection c = client.get(60, TimeUnit.SECONDS)) {
            shared[0] = server.id().channel();
            listener.close();
            assertTrue(!shared[0].isClosed(), "the accepted connection still uses the channel");
            assertThrows(IllegalStateException.class, listener::close, "double close");
            ConnectionException refused = assertThrows(ConnectionException.class,
                    () -> Connection.connect(address, new Connection.Config(), TIMEOUT), "nobody listens any more");
            assertTrue(refused.isRejected(), refused.getMessage());

            byte[] text = "still connected".getBytes(StandardCharsets.US_ASCII);
            mine[0].segment().asSlice(0, text.length).copyFrom(MemorySegment.ofArray(text));
            server.queuePair().postSend(new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(mine[0], 0, text.length));
            assertEquals(WcStatus.SUCCESS, one(server.completionQueue()).status(0));
            WorkCompletions r = one(c.completionQueue());
            assertEquals(WcStatus.SUCCESS, r.status(0));
            assertArrayEquals(text, theirs[0].segment().asSlice(0, text.length).toArray(ValueLayout.JAVA_BYTE));
        }
        assertTrue(shared[0].isClosed(), "the channel closes with the last connection of a closed listener");
    }

    /**
     * A peer process killed (SIGKILL) while this side RDMA-writes to it: the writes complete in error
     * within the retry timeout, DISCONNECTED arrives (the kernel tears the dead process's connection
     * down), nothing hangs and this JVM lives.
     */
    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void aPeerKilledMidTransferIsReported(String provider) throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip(provider), port());
        String javaCommand = ProcessHandle.current().info().command().orElse("java");
        Process peer = null;
        try (Listener listener = Listener.bind(address, 4)) {
            peer = new ProcessBuilder(javaCommand, "--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                    "-cp", System.getProperty("java.class.path"), KilledPeer.class.getName(),
                    address.getAddress().getHostAddress(), Integer.toString(address.getPort()))
                    .redirectErrorStream(true).start();
            var out = new java.io.BufferedReader(new java.io.InputStreamReader(peer.getInputStream(), StandardCharsets.UTF_8));
            MemoryRegion[] mr = new MemoryRegion[1];
            try (Connection c = listener.accept(new Connection.Config().maxSendWr(64).beforeConnect(
                    x -> mr[0] = x.own(x.protectionDomain().allocateAndRegister(65536))), Duration.ofSeconds(90))) {
                String line = out.readLine();
                assertTrue(line != null && line.startsWith("CONNECTED"), "the peer says: " + line);
                java.nio.ByteBuffer advert = java.nio.ByteBuffer.wrap(c.peerPrivateData());
                long remote = advert.getLong();
                int rkey = advert.getInt();
                WorkCompletions wc = new WorkCompletions(16);
                int outstanding = 0;
                long ok = 0;
                long killedAt = 0;
                long toError = -1;
                long toDisconnect = -1;
                boolean iwarp = provider.equals("siw");
                boolean postRefused = false;
                WcStatus failure = null;
                long deadline = System.nanoTime() + 60_000_000_000L;
                // As an application does: poll the completion queue, and look at the connection's events.
                while (failure == null || toDisconnect < 0 || outstanding > 0) {
                    assertTrue(System.nanoTime() < deadline, "after " + ok + " writes, killed " + (killedAt != 0)
                            + ": first error " + failure + ", disconnected " + (toDisconnect >= 0) + ", outstanding " + outstanding);
                    while (failure == null && !postRefused && outstanding < 32) {
                        try {
                            c.queuePair().postSend(new SendRequest(1).opcode(SendOpcode.RDMA_WRITE).signaled(true)
                                    .sge(mr[0], 0, 1 + (int) (ok % 4096)).rdma(remote, rkey));
                        } catch (VerbsException | IllegalStateException e) {
                            // siw refuses a post (EPERM) once the dead peer's connection put its queue
                            // pair in ERR, which can come before the writes it holds would fill the queue;
                            // the API refuses it in Java once the DISCONNECTED moved it there (the request
                            // would never complete)
                            if (!iwarp || killedAt == 0) {
                                throw e;
                            }
                            postRefused = true;
                            break;
                        }
                        outstanding++;
                    }
                    int n = c.completionQueue().poll(wc);
                    for (int i = 0; i < n; i++) {
                        outstanding--;
                        if (wc.status(i) == WcStatus.SUCCESS) {
                            assertEquals(null, failure, "nothing succeeds after the first error");
                            ok++;
                        } else if (failure == null) {
                            failure = wc.status(i);
                            toError = System.nanoTime() - killedAt;
                        }
                    }
                    if (toDisconnect < 0 && (ok >= 200 || killedAt != 0)) {
                        var event = c.id().nextEvent(Duration.ZERO);
                        if (event.isPresent()) {
                            assertEquals(CmEventType.DISCONNECTED, event.get().type());
                            toDisconnect = System.nanoTime() - killedAt;
                        }
                    }
                    if (iwarp && toDisconnect >= 0 && System.nanoTime() - killedAt - toDisconnect > 3_000_000_000L) {
                        break; // (see below)
                    }
                    if (killedAt == 0 && ok >= 200) {
                        peer.destroyForcibly();
                        killedAt = System.nanoTime();
                    }
                }
                assertTrue(killedAt != 0, "failed before the kill: " + failure);
                System.out.printf("peer killed after %d writes on %s: first error %s after %.0f ms, DISCONNECTED after %.0f ms,"
                        + " %d requests outstanding%n", ok, provider, failure, toError / 1e6, toDisconnect / 1e6, outstanding);
                if (iwarp) {
                    // siw (Linux 6.1) completes an RDMA write once TCP took it; the requests it held when
                    // the peer's connection dropped are neither completed nor flushed: DISCONNECTED is
                    // the signal, and the queue pair is in ERR (closing it releases them).
                    assertTrue(toDisconnect >= 0, "DISCONNECTED");
                } else {
                    assertTrue(toError >= 0 && outstanding == 0, "every outstanding write completes in error");
                }
                assertEquals(QpState.ERR, c.queuePair().state());
            }
        } finally {
            if (peer != null) {
                peer.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    /** A listener closed while a connection request waits in its channel rejects it: the client is told at once. */
    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void aListenerClosedWithAPendingRequestRejectsIt(String provider) throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip(provider), port());
        Listener listener = Listener.bind(address, 4);
        CompletableFuture<Throwable> client = CompletableFuture.supplyAsync(() -> {
            try (Connection c = Connection.connect(address, new Connection.Config(), TIMEOUT)) {
                return null;
            } catch (Throwable t) {
                return t;
            }
        });
        // Another ID of the listener's channel reads the request into the channel's queue, where it
        // waits for the listener, which never takes it.
        try (CmId other = listener.id().channel().createId(PortSpace.TCP)) {
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            while (!listener.id().channel().hasPendingRequest(listener.id()) && System.nanoTime() < deadline) {
                assertTrue(other.nextEvent(Duration.ofMillis(100)).isEmpty(), "no event is for the other ID");
            }
            assertTrue(listener.id().channel().hasPendingRequest(listener.id()), "the request never arrived");
        }
        listener.close();
        Throwable outcome = client.get(60, TimeUnit.SECONDS);
        assertTrue(outcome instanceof ConnectionException, "the client must be refused, not " + outcome);
        assertTrue(((ConnectionException) outcome).isRejected(), outcome.getMessage());
    }

    /**
     * An address no device reaches (the test VM has no default route): rdma_resolve_addr fails at
     * once with ENETUNREACH, naming the address.
     */
    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void anAddressThatDoesNotResolveFailsInTime(String provider) throws Exception {
        ip(provider);
        InetSocketAddress nowhere = new InetSocketAddress(InetAddress.getByName("192.0.2.1"), port()); // TEST-NET-1
        long t0 = System.nanoTime();
        io.github.panamaverbs.verbs.VerbsException e = assertThrows(io.github.panamaverbs.verbs.VerbsException.class,
                () -> Connection.connect(nowhere, new Connection.Config(), Duration.ofSeconds(5)));
        assertTrue(System.nanoTime() - t0 < TIMEOUT.toNanos(), "within the timeout");
        assertEquals("rdma_resolve_addr", e.verb());
        assertEquals("ENETUNREACH", e.errnoName());
        assertTrue(e.getMessage().contains("192.0.2.1"), e.getMessage());
    }
}
