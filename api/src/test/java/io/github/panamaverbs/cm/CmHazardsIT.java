package io.github.panamaverbs.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.verbs.MemoryRegion;
import io.github.panamaverbs.verbs.QpState;
import io.github.panamaverbs.verbs.ReceiveRequest;
import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.VerbsException;
import io.github.panamaverbs.verbs.WcStatus;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The connection manager's part of the reliability suite's hazards (issue 26), on Soft-RoCE and
 * SoftiWARP: a step out of order that killed the JVM, waits that ignored a closed ID, a bind that
 * took seconds to fail, private data the transport then refused, and a peer's close that a thread
 * which only polls never saw. Each test prints one line starting with {@code RELIABILITY hazard}.
 */
class CmHazardsIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final AtomicInteger PORT = new AtomicInteger(40_000 + new Random().nextInt(15_000));

    private static InetAddress ip(String provider) throws Exception {
        return CmIT.ip(provider);
    }

    private static void report(String line) {
        System.out.println("RELIABILITY hazard " + line);
        System.out.flush();
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void aRouteBeforeItsAddressIsRefusedAndAClosedIdHasNoEvents(String provider) throws Exception {
        ip(provider);
        try (EventChannel ch = EventChannel.create()) {
            CmId id = ch.createId(PortSpace.TCP);
            // librdmacm's rdma_resolve_route follows the resolved address's device: SIGSEGV without one
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> id.resolveRoute(TIMEOUT));
            assertTrue(e.getMessage().contains("resolveAddress"), e.getMessage());
            id.close();
            long t0 = System.nanoTime();
            IllegalStateException closed = assertThrows(IllegalStateException.class, () -> id.nextEvent(Duration.ofSeconds(10)));
            double ms = (System.nanoTime() - t0) / 1e6;
            assertTrue(ms < 1000, "nextEvent on a closed ID took " + ms + " ms");
            assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
            // and one closed while a thread waits on it ends the wait
            CmId waited = ch.createId(PortSpace.TCP);
            CompletableFuture<Throwable> waiter = CompletableFuture.supplyAsync(() -> {
                try {
                    waited.nextEvent(Duration.ofSeconds(30));
                    return null;
                } catch (Throwable t) {
                    return t;
                }
            });
            Thread.sleep(200);
            long t1 = System.nanoTime();
            waited.close();
            Throwable outcome = waiter.get(5, TimeUnit.SECONDS);
            double wokeMs = (System.nanoTime() - t1) / 1e6;
            assertTrue(outcome instanceof IllegalStateException, "ended on " + outcome);
            report(String.format("%s: resolveRoute before resolveAddress refused; nextEvent on a closed ID threw in %.1f ms, "
                    + "a wait ended %.1f ms after its ID closed", provider, ms, wokeMs));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void aBindToAnAddressThatIsNotLocalFailsAtOnce(String provider) throws Exception {
        ip(provider);
        InetSocketAddress elsewhere = new InetSocketAddress(InetAddress.getByName("192.0.2.1"), PORT.incrementAndGet()); // TEST-NET-1
        long t0 = System.nanoTime();
        VerbsException e = assertThrows(VerbsException.class, () -> Listener.bind(elsewhere, 4));
        double ms = (System.nanoTime() - t0) / 1e6;
        assertEquals("EADDRNOTAVAIL", e.errnoName());
        assertTrue(ms < 1000, "took " + ms + " ms");
        report(String.format("%s: bind to 192.0.2.1 failed in %.1f ms: %s", provider, ms, e.getMessage()));
    }

    /** A retry count of 7 ("for ever" on Soft-RoCE) is refused by the connection manager too, and nothing stays open. */
    @org.junit.jupiter.api.Test
    void aRetryCountOfSevenIsRefusedOnSoftRoce() throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip("rxe"), PORT.incrementAndGet());
        try (Listener listener = Listener.bind(address, 4)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Connection.connect(address,
                    new Connection.Config().parameters(new ConnectionParameters().retryCount(7)), TIMEOUT));
            assertTrue(e.getMessage().contains("for ever"), e.getMessage());
            report("rxe: connect with retry count 7 refused (" + e.getMessage() + ")");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void privateDataAtTheLimitConnectsAndOneByteMoreIsRefusedInJava(String provider) throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip(provider), PORT.incrementAndGet());
        int connectLimit = provider.equals("siw") ? 251 : 56;
        int acceptLimit = provider.equals("siw") ? 251 : 196;
        byte[] offered = new byte[connectLimit];
        byte[] answered = new byte[acceptLimit];
        new Random(5).nextBytes(offered);
        new Random(6).nextBytes(answered);
        try (Listener listener = Listener.bind(address, 4)) {
            CompletableFuture<byte[]> server = CompletableFuture.supplyAsync(() -> {
                try (Connection c = listener.accept(new Connection.Config().parameters(
                        new ConnectionParameters().privateData(answered)), TIMEOUT)) {
                    byte[] got = c.peerPrivateData();
                    c.awaitDisconnect(TIMEOUT);
                    return got;
                }
            });
            try (Connection c = Connection.connect(address, new Connection.Config().parameters(
                    new ConnectionParameters().privateData(offered)), TIMEOUT)) {
                byte[] got = c.peerPrivateData();
                assertTrue(got.length >= acceptLimit, "accept data " + got.length);
                assertEquals(-1, java.util.Arrays.mismatch(answered, java.util.Arrays.copyOf(got, acceptLimit)));
                IllegalArgumentException over = assertThrows(IllegalArgumentException.class,
                        () -> c.id().connect(new ConnectionParameters().privateData(new byte[connectLimit + 1])));
                assertTrue(over.getMessage().contains("the limit is " + connectLimit), over.getMessage());
            }
            byte[] got = server.get(60, TimeUnit.SECONDS);
            assertEquals(-1, java.util.Arrays.mismatch(offered, java.util.Arrays.copyOf(got, connectLimit)));
        }
        report(provider + ": " + connectLimit + " bytes of connect and " + acceptLimit + " of accept private data carried "
                + "(checked); one more is refused in Java");
    }

    /**
     * A survivor with receives posted and RDMA writes outstanding only polls while its peer closes
     * the connection: it sees an error completion within 5 s (the library reads the connection's
     * DISCONNECTED itself and moves the queue pair to ERR, which flushes what is outstanding), and a
     * send posted afterwards is refused (SoftiWARP, where it would never complete) or completes
     * flushed (Soft-RoCE).
     */
    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void aThreadThatOnlyPollsSeesItsPeersCloseInBoundedTime(String provider) throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip(provider), PORT.incrementAndGet());
        int size = 1 << 20;
        byte[] hello = new byte[4096];
        new Random(11).nextBytes(hello);
        AtomicLong closedAt = new AtomicLong();
        java.util.concurrent.CountDownLatch writesPosted = new java.util.concurrent.CountDownLatch(1);
        try (Listener listener = Listener.bind(address, 4)) {
            CompletableFuture<Void> peer = CompletableFuture.runAsync(() -> {
                MemoryRegion[] mr = new MemoryRegion[1];
                ConnectionParameters advert = new ConnectionParameters();
                Connection.Config config = new Connection.Config().parameters(advert).beforeConnect(c -> {
                    mr[0] = c.own(c.protectionDomain().allocateAndRegister(size, io.github.panamaverbs.verbs.AccessFlag.REMOTE_WRITE));
                    c.queuePair().postReceive(new ReceiveRequest(1).id(1).sge(mr[0], 0, 4096));
                    advert.privateData(ByteBuffer.allocate(12).putLong(mr[0].address()).putInt(mr[0].rkey()).array());
                });
                Connection c = listener.accept(config, TIMEOUT);
                try {
                    c.queuePair().postSend(new SendRequest(1).id(2).opcode(SendOpcode.SEND).signaled(true).sge(mr[0], 8192, 16));
                    WorkCompletions wc = new WorkCompletions(4);
                    int seen = 0;
                    long deadline = System.nanoTime() + TIMEOUT.toNanos();
                    while (seen < 2) {
                        int n = c.completionQueue().poll(wc);
                        for (int i = 0; i < n; i++) {
                            assertEquals(WcStatus.SUCCESS, wc.status(i));
                        }
                        seen += n;
                        assertTrue(System.nanoTime() < deadline, "the peer's first completions");
                    }
                    assertEquals(-1, MemorySegment.ofArray(hello).mismatch(mr[0].segment().asSlice(0, 4096)), "bytes received");
                    assertTrue(writesPosted.await(10, TimeUnit.SECONDS), "the survivor's writes"); // under way now
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                } finally {
                    closedAt.set(System.nanoTime());
                    c.close();
                }
            });
            MemoryRegion[] mine = new MemoryRegion[1];
            Connection.Config config = new Connection.Config().maxSendWr(32).maxRecvWr(8).beforeConnect(c -> {
                mine[0] = c.own(c.protectionDomain().allocateAndRegister(size));
                for (int i = 0; i < 4; i++) {
                    c.queuePair().postReceive(new ReceiveRequest(1).id(100 + i).sge(mine[0], size - 4096, 4096));
                }
            });
            try (Connection c = Connection.connect(address, config, TIMEOUT)) {
                ByteBuffer where = ByteBuffer.wrap(c.peerPrivateData());
                long remote = where.getLong();
                int rkey = where.getInt();
                mine[0].segment().asSlice(0, 4096).copyFrom(MemorySegment.ofArray(hello));
                c.queuePair().postSend(new SendRequest(1).id(10).opcode(SendOpcode.SEND).signaled(true).sge(mine[0], 0, 4096));
                WorkCompletions wc = new WorkCompletions(16);
                long deadline = System.nanoTime() + TIMEOUT.toNanos();
                int successes = 0;
                while (successes < 2) { // the send, and the receive of the peer's message
                    int n = c.completionQueue().poll(wc);
                    for (int i = 0; i < n; i++) {
                        assertEquals(WcStatus.SUCCESS, wc.status(i), "before the close");
                    }
                    successes += n;
                    assertTrue(System.nanoTime() < deadline, "the first exchange");
                }
                for (int i = 0; i < 8; i++) { // 64 KiB RDMA writes into the peer's region, under way when it closes
                    c.queuePair().postSend(new SendRequest(1).id(20 + i).opcode(SendOpcode.RDMA_WRITE).signaled(true)
                            .sge(mine[0], 0, 65536).rdma(remote + 65536L * (i + 1), rkey));
                }
                writesPosted.countDown();
                // only poll from here on
                WcStatus first = null;
                long firstAt = 0;
                int flushed = 0;
                long end = System.nanoTime() + TIMEOUT.toNanos();
                while (first == null && System.nanoTime() < end) {
                    int n = c.completionQueue().poll(wc);
                    for (int i = 0; i < n; i++) {
                        if (wc.status(i) != WcStatus.SUCCESS) {
                            flushed++;
                            if (first == null) {
                                first = wc.status(i);
                                firstAt = System.nanoTime();
                            }
                        }
                    }
                }
                peer.get(30, TimeUnit.SECONDS);
                assertTrue(first != null, "no error completion within " + TIMEOUT + " of the peer's close");
                double afterClose = (firstAt - closedAt.get()) / 1e6;
                assertTrue(afterClose < 5000, "the first error completion came " + afterClose + " ms after the peer's close");
                SendRequest late = new SendRequest(1).id(99).opcode(SendOpcode.SEND).signaled(true).sge(mine[0], 0, 64);
                String afterwards;
                if (provider.equals("siw")) {
                    IllegalStateException e = assertThrows(IllegalStateException.class, () -> c.queuePair().postSend(late));
                    assertTrue(e.getMessage().contains("never complete"), e.getMessage());
                    assertEquals(QpState.ERR, c.queuePair().state()); // asked of the kernel after the error completion
                    afterwards = "refused in Java";
                } else {
                    assertEquals(QpState.ERR, c.queuePair().state()); // the library read DISCONNECTED and moved it there
                    c.queuePair().postSend(late);
                    long t0 = System.nanoTime();
                    WcStatus status = null;
                    while (status == null && System.nanoTime() - t0 < 5_000_000_000L) {
                        int n = c.completionQueue().poll(wc);
                        for (int i = 0; i < n; i++) {
                            if (wc.wrId(i) == 99) {
                                status = wc.status(i);
                            }
                        }
                    }
                    assertEquals(WcStatus.WR_FLUSH_ERR, status, "the late send within 5 s");
                    afterwards = String.format("flushed after %.1f ms", (System.nanoTime() - t0) / 1e6);
                }
                report(String.format("%s: a thread that only polls saw %s %.1f ms after its peer's close (%d error "
                        + "completions); a send posted afterwards: %s", provider, first, afterClose, flushed, afterwards));
            }
        }
    }
}
