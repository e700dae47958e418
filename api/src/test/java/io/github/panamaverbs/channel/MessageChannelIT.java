package io.github.panamaverbs.channel;

import static io.github.panamaverbs.cm.CmIT.ip;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.cm.Listener;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.lang.invoke.MethodHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link MessageChannel} on Soft-RoCE and SoftiWARP, client and server in this JVM over the
 * device's own address: every byte checked, messages of 0 and 1 byte, a full slot, a slot + 1 and
 * several MiB (by rendezvous), a receiver
 * that stops consuming (the sender waits for credit; no RNR, no broken connection: on iWARP one
 * send too many would break it), many virtual threads sending on one channel, and the end (a close
 * from another thread, and the peer's close) failing every waiter with the peer named.
 */
class MessageChannelIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final AtomicInteger PORT = new AtomicInteger(50_000 + new Random().nextInt(10_000));

    /** A connected pair: the server's side first. */
    private record Pair(Listener listener, MessageChannel server, MessageChannel client) implements AutoCloseable {
        @Override
        public void close() {
            try {
                client.close();
            } finally {
                try {
                    server.close();
                } finally {
                    listener.close();
                }
            }
        }
    }

    private static Pair pair(String provider, Function<Boolean, MessageChannel.Config> config) throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip(provider), PORT.incrementAndGet());
        Listener listener = Listener.bind(address, 4);
        try {
            CompletableFuture<MessageChannel> server = CompletableFuture.supplyAsync(
                    () -> MessageChannel.accept(listener, config.apply(true), TIMEOUT));
            MessageChannel client = MessageChannel.connect(address, config.apply(false), TIMEOUT);
            return new Pair(listener, server.get(30, TimeUnit.SECONDS), client);
        } catch (Exception | Error e) {
            listener.close();
            throw e;
        }
    }

    /** Message {@code k} of a run: its size and bytes follow from k alone. */
    private static MemorySegment message(int k, int size, Arena arena) {
        MemorySegment m = arena.allocate(Math.max(1, size)).asSlice(0, size);
        for (int i = 0; i < size; i++) {
            m.set(ValueLayout.JAVA_BYTE, i, (byte) (k * 31 + i * 7));
        }
        return m;
    }

    private static void expect(MessageChannel.Received r, int k, int size) {
        assertNotNull(r, "message " + k + " did not arrive");
        assertEquals(size, r.length(), "message " + k);
        try (Arena arena = Arena.ofConfined()) {
            assertEquals(-1, message(k, size, arena).mismatch(r.segment()), "message " + k + "'s bytes");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void messagesOfEverySizeArriveIntactBothWays(String provider) throws Exception {
        try (Pair p = pair(provider, server -> new MessageChannel.Config().messageSize(server ? 8192 : 4096).slots(8));
             Arena arena = Arena.ofShared()) {
            assertEquals(4096, p.client().slotSize()); // the smaller side's
            assertEquals(4096, p.server().slotSize());
            assertEquals(64 << 20, p.client().maxMessageSize()); // the peer's largest message (by rendezvous)
            int[] sizes = {0, 1, 2, 63, 4095, 4096};
            int rounds = 60; // more than the 8 credits, many times over: credits flow back
            CompletableFuture<Void> echo = CompletableFuture.runAsync(() -> {
                for (int k = 0; k < rounds * sizes.length; k++) {
                    try (MessageChannel.Received r = p.server().receive(TIMEOUT)) {
                        expect(r, k, sizes[k % sizes.length]);
                        assertTrue(p.server().send(r.segment(), TIMEOUT), "echo " + k); // straight from the receive ring
                    }
                }
            });
            for (int k = 0; k < rounds * sizes.length; k++) {
                assertTrue(p.client().send(message(k, sizes[k % sizes.length], arena), TIMEOUT));
                if (k % 4 == 3) { // keep up to four in flight
                    for (int j = k - 3; j <= k; j++) {
                        try (MessageChannel.Received r = p.client().receive(TIMEOUT)) {
                            expect(r, j, sizes[j % sizes.length]);
                        }
                    }
                }
            }
            echo.get(60, TimeUnit.SECONDS);
            // zero copy: a claimed slot, filled and committed; a claim closed unused gives its credit back
            try (MessageChannel.Outgoing unused = p.client().claim(TIMEOUT)) {
                assertEquals(4096, unused.segment().byteSize());
                assertThrows(IllegalArgumentException.class, () -> unused.commit(4097)); // a slot is the most
            }
            MessageChannel.Outgoing out = p.client().claim(TIMEOUT);
            out.segment().copyFrom(message(7, 100, arena));
            out.commit(100);
            assertThrows(IllegalStateException.class, () -> out.commit(100));
            try (MessageChannel.Received r = p.server().receive(TIMEOUT)) {
                expect(r, 7, 100);
                assertThrows(IllegalArgumentException.class, () -> r.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) 1)); // read-only
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void messagesLargerThanASlotGoByRendezvousInOrderBothWays(String provider) throws Exception {
        int largest = 8 << 20;
        try (Pair p = pair(provider, server -> new MessageChannel.Config().messageSize(4096).slots(4)
                .largestMessage(server ? largest : 64 << 20)); Arena arena = Arena.ofShared()) {
            assertEquals(largest, p.client().maxMessageSize());
            // slot + 1, several MiB, the largest, mixed with messages in a slot; more than the 4
            // slots' worth, so the staged copies and the receiver's memory are reused
            int[] sizes = {4097, 1, 5 << 20, 4096, 65_537, 0, 3 * 4097, largest, 4097, 2 << 20, 70_000, 4097};
            CompletableFuture<Void> echo = CompletableFuture.runAsync(() -> {
                for (int k = 0; k < sizes.length; k++) {
                    try (MessageChannel.Received r = p.server().receive(TIMEOUT)) {
                        expect(r, k, sizes[k]);
                        assertTrue(p.server().send(r.segment(), TIMEOUT), "echo " + k); // a large one back by rendezvous
                    }
                }
            });
            for (int k = 0; k < sizes.length; k++) {
                assertTrue(p.client().send(message(k, sizes[k], arena), TIMEOUT), "message " + k);
                if (k % 2 == 1) { // two in flight each way
                    for (int j = k - 1; j <= k; j++) {
                        try (MessageChannel.Received r = p.client().receive(TIMEOUT)) {
                            expect(r, j, sizes[j]);
                        }
                    }
                }
            }
            echo.get(120, TimeUnit.SECONDS);
            IllegalArgumentException tooLarge = assertThrows(IllegalArgumentException.class,
                    () -> p.client().send(MemorySegment.ofArray(new byte[largest + 1]), TIMEOUT));
            assertTrue(tooLarge.getMessage().contains(largest + " (the peer's Config.largestMessage)"), tooLarge.getMessage());
            // a large message not released when the channel closes: its memory is gone, reading it throws
            assertTrue(p.client().send(message(99, 10_000, arena), TIMEOUT));
            MessageChannel.Received held = p.server().receive(TIMEOUT);
            expect(held, 99, 10_000);
            p.server().close();
            assertThrows(IllegalStateException.class, () -> held.segment().get(ValueLayout.JAVA_BYTE, 0));
            held.close(); // after the channel's close: nothing to do, no error
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void aReceiverThatStopsConsumingParksTheSenderUntilItResumes(String provider) throws Exception {
        int slots = 4;
        try (Pair p = pair(provider, server -> new MessageChannel.Config().messageSize(256).slots(slots));
             Arena arena = Arena.ofShared()) {
            // nobody receives: exactly the server's slots go, then the sender waits and times out
            int sent = 0;
            while (p.client().send(message(sent, 200, arena), Duration.ofMillis(300))) {
                sent++;
                assertTrue(sent <= slots, "sent " + sent + " messages into " + slots + " receives");
            }
            assertEquals(slots, sent);
            // a sender parked for credit resumes when the receiver releases one
            CompletableFuture<Boolean> parked = CompletableFuture.supplyAsync(() -> p.client().send(message(slots, 200, arena), TIMEOUT));
            Thread.sleep(300);
            assertFalse(parked.isDone(), "the sender waits for credit");
            try (MessageChannel.Received r = p.server().receive(TIMEOUT)) {
                expect(r, 0, 200);
            }
            assertTrue(parked.get(30, TimeUnit.SECONDS));
            // then a slow receiver and a fast sender, 1,000 messages: credits come back, nothing breaks
            int total = 1000;
            CompletableFuture<Void> sender = CompletableFuture.runAsync(() -> {
                for (int k = slots + 1; k < total; k++) {
                    assertTrue(p.client().send(message(k, k % 257, arena), TIMEOUT), "send " + k);
                }
            });
            for (int k = 1; k < total; k++) {
                try (MessageChannel.Received r = p.server().receive(TIMEOUT)) {
                    expect(r, k, k <= slots ? 200 : k % 257);
                }
                if (k % 100 == 0) {
                    Thread.sleep(20);
                }
            }
            sender.get(60, TimeUnit.SECONDS);
            assertNull(p.server().receive(Duration.ofMillis(100)));
        }
    }

    private static final MethodHandle POLL = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("poll").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));

    /** poll(2) of {@code fd} for reading, at most {@code millis}: whether it became readable (an event loop's wait). */
    private static boolean readable(int fd, int millis) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment pollfd = a.allocate(8, 4);
            pollfd.set(ValueLayout.JAVA_INT, 0, fd);
            pollfd.set(ValueLayout.JAVA_SHORT, 4, (short) 1); // POLLIN
            return (int) POLL.invokeExact(pollfd, 1L, millis) > 0;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** The server's side driven as a caller's own event loop would: never blocking in the channel. */
    private static int echoLoop(MessageChannel loop, int total) {
        int fd = loop.eventFd();
        int waits = 0;
        for (int done = 0; done < total; done++) {
            MessageChannel.Received next;
            while ((next = loop.tryReceive()) == null) {
                if (loop.arm() == 0) { // nothing came in between: wait for the descriptor
                    assertTrue(readable(fd, 10_000), "an event within 10 s, message " + done);
                    waits++;
                }
            }
            try (MessageChannel.Received r = next) {
                MessageChannel.Outgoing out;
                while ((out = loop.tryClaim()) == null) { // back-pressure: the client's credit comes as it reads
                    if (loop.arm() == 0) {
                        assertTrue(readable(fd, 10_000), "credit within 10 s, message " + done);
                    }
                }
                MemorySegment.copy(r.segment(), 0, out.segment(), 0, r.length());
                out.commit(r.length());
            }
        }
        return waits;
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void aLoopOfItsOwnDrivesAChannelWithoutBlocking(String provider) throws Exception {
        int slots = 4;
        try (Pair p = pair(provider, server -> new MessageChannel.Config().messageSize(256).slots(slots).busyPoll(!server));
             Arena arena = Arena.ofShared()) {
            MessageChannel client = p.client(); // busy-polling: no descriptor
            MessageChannel loop = p.server();   // on events: its descriptor, for a loop of its own
            assertEquals(-1, client.eventFd());
            assertThrows(IllegalStateException.class, client::arm);
            assertTrue(loop.eventFd() >= 0);
            // back-pressure seen without waiting: the server's 4 receives are all the client may send
            assertEquals(slots, client.sendable());
            for (int k = 0; k < slots; k++) {
                MessageChannel.Outgoing out = client.tryClaim();
                assertNotNull(out, "claim " + k);
                out.segment().copyFrom(message(k, k % 200, arena));
                out.commit(k % 200);
            }
            assertNull(client.tryClaim(), "no credit left: null at once");
            assertEquals(0, client.sendable());
            assertNull(client.tryReceive());
            int total = 300;
            CompletableFuture<Integer> server = CompletableFuture.supplyAsync(() -> echoLoop(loop, total));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            for (int sent = slots, got = 0; got < total; ) {
                if (sent < total) {
                    MessageChannel.Outgoing out = client.tryClaim();
                    if (out != null) {
                        out.segment().copyFrom(message(sent, sent % 200, arena));
                        out.commit(sent % 200);
                        sent++;
                    }
                }
                MessageChannel.Received r = client.tryReceive();
                if (r != null) {
                    try (r) {
                        expect(r, got, got % 200);
                    }
                    got++;
                }
                assertTrue(System.nanoTime() < deadline, "echo " + got + " of " + total + " within 60 s");
            }
            server.get(60, TimeUnit.SECONDS);
            // armed with nothing there: the descriptor stays quiet until a message comes, then it is readable
            assertNull(loop.tryReceive());
            assertEquals(0, loop.arm());
            assertFalse(readable(loop.eventFd(), 300), "no event without a completion");
            assertTrue(client.send(message(total, 10, arena), TIMEOUT));
            assertTrue(readable(loop.eventFd(), 10_000), "the message's event");
            try (MessageChannel.Received r = loop.tryReceive()) {
                expect(r, total, 10);
            }
            p.client().close();
            assertThrows(ChannelException.class, client::tryClaim);
            assertThrows(ChannelException.class, client::poll);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void aClaimLargerThanASlotIsWrittenWhereItLeavesFrom(String provider) throws Exception {
        try (Pair p = pair(provider, server -> new MessageChannel.Config().messageSize(512).slots(4).largestMessage(1 << 20))) {
            // written into registered memory, read by the peer from there; one that turns out to fit a slot goes in one
            for (int[] claimWrite : new int[][] {{1 << 20, 1 << 20}, {100_000, 513}, {100_000, 512}, {5000, 3}, {600_000, 600_000}}) {
                MessageChannel.Outgoing out = p.client().claim(claimWrite[0], TIMEOUT);
                assertEquals(claimWrite[0], out.segment().byteSize());
                int n = claimWrite[1];
                for (int i = 0; i < n; i++) {
                    out.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 3 + n));
                }
                out.commit(n);
                try (MessageChannel.Received r = p.server().receive(TIMEOUT)) {
                    assertEquals(n, r.length());
                    for (int i = 0; i < n; i++) {
                        assertEquals((byte) (i * 3 + n), r.segment().get(ValueLayout.JAVA_BYTE, i), "byte " + i + " of " + n);
                    }
                }
            }
            // closed unused: its slot and credit come back (nothing polls meanwhile: nothing else changes them)
            MessageChannel.Outgoing unused = p.client().claim(70_000, TIMEOUT);
            assertThrows(IllegalArgumentException.class, () -> unused.commit(70_001));
            int sendable = p.client().sendable();
            unused.close();
            assertEquals(sendable + 1, p.client().sendable());
            assertThrows(IllegalStateException.class, () -> unused.commit(1));
            assertThrows(IllegalArgumentException.class, () -> p.client().claim((1 << 20) + 1, TIMEOUT));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void manyVirtualThreadsSendOnOneChannel(String provider) throws Exception {
        int threads = 200;
        int each = 20;
        try (Pair p = pair(provider, server -> new MessageChannel.Config().messageSize(64).slots(16));
             ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> senders = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                senders.add(pool.submit(() -> {
                    try (Arena arena = Arena.ofConfined()) {
                        MemorySegment m = arena.allocate(8);
                        for (int i = 0; i < each; i++) {
                            m.set(ValueLayout.JAVA_INT_UNALIGNED, 0, thread);
                            m.set(ValueLayout.JAVA_INT_UNALIGNED, 4, i);
                            assertTrue(p.client().send(m, TIMEOUT));
                        }
                    }
                    return null;
                }));
            }
            int[] next = new int[threads];
            for (int k = 0; k < threads * each; k++) {
                try (MessageChannel.Received r = p.server().receive(TIMEOUT)) {
                    assertNotNull(r, "message " + k + " of " + threads * each);
                    assertEquals(8, r.length());
                    int thread = r.segment().get(ValueLayout.JAVA_INT_UNALIGNED, 0);
                    int i = r.segment().get(ValueLayout.JAVA_INT_UNALIGNED, 4);
                    assertEquals(next[thread]++, i, "thread " + thread + "'s messages in order");
                }
            }
            for (Future<?> f : senders) {
                f.get(30, TimeUnit.SECONDS);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void theEndFailsEveryWaiterAndNamesThePeer(String provider) throws Exception {
        Pair p = pair(provider, server -> new MessageChannel.Config().busyPoll(!server));
        try {
            // a close from another thread ends a wait on this side
            CompletableFuture<Throwable> waiting = CompletableFuture.supplyAsync(() -> failure(() -> p.client().receive(TIMEOUT)));
            Thread.sleep(200);
            CompletableFuture<Throwable> serverWait = CompletableFuture.supplyAsync(() -> failure(() -> p.server().receive(TIMEOUT)));
            Thread.sleep(200);
            long closedAt = System.nanoTime();
            p.client().close();
            Throwable mine = waiting.get(10, TimeUnit.SECONDS);
            assertTrue(mine instanceof ChannelException && mine.getMessage().endsWith(" is closed"), String.valueOf(mine));
            // and the peer's waiter learns of it, within the queue pair's timeout, naming this side
            Throwable peers = serverWait.get(30, TimeUnit.SECONDS);
            assertTrue(peers instanceof ChannelException, String.valueOf(peers));
            String client = ip(provider).getHostAddress() + ":";
            assertTrue(peers.getMessage().contains("the connection to " + client) // the peer, named
                    && peers.getMessage().contains("is closed (the peer closed it, or is gone)"), peers.getMessage());
            assertTrue(System.nanoTime() - closedAt < TimeUnit.SECONDS.toNanos(20));
            assertThrows(ChannelException.class, () -> p.server().send(MemorySegment.ofArray(new byte[1]), TIMEOUT));
            assertThrows(ChannelException.class, () -> p.client().receive(TIMEOUT));
            p.client().close(); // twice: nothing more
        } finally {
            p.server().close();
            p.listener().close();
        }
    }

    private static Throwable failure(Runnable r) {
        try {
            r.run();
            return new AssertionError("no failure");
        } catch (Throwable e) {
            return e;
        }
    }
}
