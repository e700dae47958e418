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
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
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
