package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;

/**
 * Waits that do not hold an OS thread, on the device: thousands of virtual threads, on two carrier
 * threads, each waiting in {@link CompletionChannel#awaitEvent} for its own queue pair's
 * completion; timeouts; and a close that wakes a waiting virtual thread. With a wait that blocked
 * its carrier in {@code poll(2)} the first test could not finish: two waiters would hold both
 * carriers and the others would never run.
 */
@RequiresRdma
class VirtualThreadIT {
    static {
        // Two carriers for every virtual thread of this JVM (read when the first one starts).
        System.setProperty("jdk.virtualThreadScheduler.parallelism", "2");
        System.setProperty("jdk.virtualThreadScheduler.maxPoolSize", "2");
    }

    private static final int QKEY = 0x33333333;
    private static final int GRH = Context.GRH_BYTES;
    private static final int WAITERS = Integer.getInteger("virtualthreads.waiters", 2000);

    @Test
    void twoThousandVirtualThreadsWaitOnTwoCarriers(TestDevice dev) throws Exception {
        try (Recording pinned = new Recording();
             Context ctx = dev.open();
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             CompletionQueue sendCq = ctx.createCompletionQueue(WAITERS + 16);
             QueuePair sender = pd.createQueuePair(new QpInitAttributes(QpType.UD, sendCq, sendCq).maxSendWr(WAITERS));
             MemoryRegion out = pd.allocateAndRegister(4L * WAITERS);
             MemoryRegion in = pd.allocateAndRegister((long) (GRH + 64) * WAITERS)) {
            pinned.enable("jdk.VirtualThreadPinned").withThreshold(Duration.ZERO).withStackTrace();
            pinned.start();
            ConnectOptions how = ConnectOptions.port(dev.port()).gidIndex(dev.gidIndex());
            sender.activateDatagram(how, QKEY);
            List<CompletionChannel> channels = new ArrayList<>();
            List<CompletionQueue> cqs = new ArrayList<>();
            List<QueuePair> qps = new ArrayList<>();
            try {
                for (int i = 0; i < WAITERS; i++) {
                    CompletionChannel ch = ctx.createCompletionChannel();
                    channels.add(ch);
                    CompletionQueue cq = ctx.createCompletionQueue(4, ch, 0);
                    cqs.add(cq);
                    QueuePair qp = pd.createQueuePair(new QpInitAttributes(QpType.UD, cq, cq).maxSendWr(1).maxRecvWr(1));
                    qps.add(qp);
                    qp.activateDatagram(how, QKEY);
                    qp.postReceive(new ReceiveRequest(1).id(i).sge(in, (long) (GRH + 64) * i, GRH + 64));
                    cq.requestNotification(false);
                }
                new WorkCompletions(1); // initialized here, not by 2,000 virtual threads at once (see below)
                Set<String> carriers = ConcurrentHashMap.newKeySet();
                CountDownLatch waiting = new CountDownLatch(WAITERS);
                CountDownLatch done = new CountDownLatch(WAITERS);
                AtomicReference<Throwable> failure = new AtomicReference<>();
                List<Thread> threads = new ArrayList<>();
                for (int i = 0; i < WAITERS; i++) {
                    int k = i;
                    threads.add(Thread.ofVirtual().name("waiter-" + k).start(() -> {
                        try {
                            carriers.add(carrierOf(Thread.currentThread()));
                            WorkCompletions wc = new WorkCompletions(1);
                            CompletionQueue cq = cqs.get(k);
                            waiting.countDown();
                            int got = cq.poll(wc); // armed before the thread started: poll, then wait
                            while (got == 0) {
                                Optional<CompletionQueue> ev = channels.get(k).awaitEvent(Duration.ofSeconds(120));
                                assertEquals(Optional.of(cq), ev, "waiter " + k + ": its own queue's event");
                                cq.requestNotification(false);
                                got = cq.poll(wc);
                            }
                            assertEquals(WcStatus.SUCCESS, wc.status(0));
                            assertEquals(k, wc.wrId(0));
                            assertEquals(k, in.segment().get(JAVA_INT, (long) (GRH + 64) * k + GRH), "waiter " + k + "'s bytes");
                        } catch (Throwable t) {
                            failure.compareAndSet(null, t);
                        } finally {
                            done.countDown();
                        }
                    }));
                }
                assertTrue(waiting.await(120, TimeUnit.SECONDS), "every virtual thread started");
                AddressHandle ah = pd.createAddressHandle(AddressVector.global(dev.port(),
                        ctx.queryGid(dev.port(), dev.gidIndex()), dev.gidIndex(), 64));
                try {
                    WorkCompletions sent = new WorkCompletions(64);
                    int completed = 0;
                    for (int i = 0; i < WAITERS; i++) {
                        out.segment().set(JAVA_INT, 4L * i, i);
                        sender.postSend(new SendRequest(1).id(i).opcode(SendOpcode.SEND).signaled(true).sge(out, 4L * i, 4)
                                .datagram(ah, qps.get(i).qpNumber(), QKEY));
                        completed += sendCq.poll(sent);
                    }
                    while (completed < WAITERS) {
                        completed += sendCq.poll(sent);
                    }
                    assertTrue(done.await(300, TimeUnit.SECONDS), (WAITERS - done.getCount()) + " of " + WAITERS
                            + " virtual threads got their message");
                } finally {
                    ah.close();
                }
                for (Thread t : threads) {
                    t.join();
                }
                if (failure.get() != null) {
                    throw new AssertionError(failure.get());
                }
                assertTrue(carriers.size() <= 2, "at most two carrier threads: " + carriers);
            } finally {
                for (QueuePair qp : qps) {
                    qp.close();
                }
                for (CompletionQueue cq : cqs) {
                    cq.close();
                }
                for (CompletionChannel ch : channels) {
                    ch.close();
                }
            }
            pinned.stop();
            Path file = Files.createTempFile("pinned", ".jfr");
            pinned.dump(file);
            // Pins in the library's frames; this test's own first uses of classes (initialized by one
            // virtual thread while others wait) are the JVM's, not the library's.
            List<RecordedEvent> ours = RecordingFile.readAllEvents(file).stream()
                    .filter(e -> e.getStackTrace() != null && e.getStackTrace().getFrames().stream()
                            .map(f -> f.getMethod().getType().getName())
                            .takeWhile(type -> !type.startsWith(VirtualThreadIT.class.getName()))
                            .anyMatch(type -> type.startsWith("io.github.panamaverbs.")))
                    .toList();
            Files.delete(file);
            assertEquals(List.of(), ours, "jdk.VirtualThreadPinned events in panama-verbs code");
        }
    }

    /** The carrier's name, from the virtual thread's {@code toString()} ({@code VirtualThread[#22,name]/runnable@ForkJoinPool-1-worker-1}). */
    private static String carrierOf(Thread t) {
        String s = t.toString();
        int at = s.lastIndexOf('@');
        return at < 0 ? "unmounted" : s.substring(at + 1);
    }

    /** The README's example: a virtual thread woken by the completion event of a send's receive. */
    @Test
    void theReadmeExampleReceivesInAVirtualThread(TestDevice dev) throws Exception {
        assertEquals("woken by a completion event", VirtualThreadExampleTest.example(dev.name(), dev.gidIndex()));
    }

    @Test
    void aVirtualThreadsWaitTimesOutInTime(TestDevice dev) throws Exception {
        try (Context ctx = dev.open(); CompletionChannel ch = ctx.createCompletionChannel()) {
            AtomicReference<Object> result = new AtomicReference<>();
            long[] took = new long[1];
            Thread t = Thread.ofVirtual().start(() -> {
                long t0 = System.nanoTime();
                result.set(ch.awaitEvent(Duration.ofMillis(300)));
                Optional<AsyncEvent> none = ctx.nextAsyncEvent(Duration.ofMillis(1));
                took[0] = System.nanoTime() - t0;
                if (none.isPresent()) {
                    result.set("unexpected " + none);
                }
            });
            t.join();
            assertEquals(Optional.empty(), result.get());
            assertTrue(took[0] >= TimeUnit.MILLISECONDS.toNanos(300) && took[0] < TimeUnit.SECONDS.toNanos(3),
                    "returned after " + took[0] / 1_000_000 + " ms");
        }
    }

    @Test
    void closingWhatAVirtualThreadWaitsOnWakesItWithAClearException(TestDevice dev) throws Exception {
        Context ctx = dev.open();
        CompletionChannel ch = ctx.createCompletionChannel();
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        CountDownLatch started = new CountDownLatch(2);
        Thread onChannel = Thread.ofVirtual().start(() -> {
            started.countDown();
            try {
                ch.awaitEvent(Duration.ofSeconds(60));
            } catch (Throwable e) {
                thrown.set(e);
            }
        });
        AtomicReference<Throwable> thrownCtx = new AtomicReference<>();
        Thread onContext = Thread.ofVirtual().start(() -> {
            started.countDown();
            try {
                ctx.nextAsyncEvent(Duration.ofSeconds(60));
            } catch (Throwable e) {
                thrownCtx.set(e);
            }
        });
        assertTrue(started.await(10, TimeUnit.SECONDS));
        Thread.sleep(300);
        long t0 = System.nanoTime();
        ch.close();
        onChannel.join(Duration.ofSeconds(5));
        ctx.close();
        onContext.join(Duration.ofSeconds(5));
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(5), "woken soon after the close");
        assertTrue(thrown.get() instanceof IllegalStateException && thrown.get().getMessage().contains("was closed while"),
                String.valueOf(thrown.get()));
        assertTrue(thrownCtx.get() instanceof IllegalStateException
                && thrownCtx.get().getMessage().contains("was closed while"), String.valueOf(thrownCtx.get()));
    }

    /**
     * Closing a completion queue while threads wait for its completions in
     * {@link CompletionQueue#await} wakes each of them (a virtual and a platform thread) with an
     * IllegalStateException naming the queue, soon after the close; the channel stays usable.
     */
    @Test
    void closingACompletionQueueWakesItsAwaitingThreads(TestDevice dev) throws Exception {
        try (Context ctx = dev.open(); CompletionChannel ch = ctx.createCompletionChannel()) {
            CompletionQueue cq = ctx.createCompletionQueue(16, ch, 0);
            CountDownLatch started = new CountDownLatch(2);
            List<AtomicReference<Throwable>> thrown = List.of(new AtomicReference<>(), new AtomicReference<>());
            List<Thread> waiters = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                AtomicReference<Throwable> slot = thrown.get(i);
                Runnable wait = () -> {
                    WorkCompletions batch = new WorkCompletions(4);
                    try {
                        started.countDown();
                        slot.set(new AssertionError("await returned " + cq.await(batch, Duration.ofSeconds(60))));
                    } catch (Throwable e) {
                        slot.set(e);
                    }
                };
                waiters.add(i == 0 ? Thread.ofVirtual().start(wait) : Thread.ofPlatform().start(wait));
            }
            assertTrue(started.await(10, TimeUnit.SECONDS));
            Thread.sleep(300);
            long t0 = System.nanoTime();
            cq.close();
            for (Thread t : waiters) {
                t.join(Duration.ofSeconds(5));
            }
            long tookMillis = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(tookMillis < 5_000, "woken " + tookMillis + " ms after the close");
            for (AtomicReference<Throwable> t : thrown) {
                assertTrue(t.get() instanceof IllegalStateException
                        && t.get().getMessage().contains(cq + " was closed while a thread waited for its completions"),
                        String.valueOf(t.get()));
            }
            assertTrue(ch.awaitEvent(Duration.ZERO).isEmpty(), "the channel is still open and usable");
        }
    }

    /**
     * {@link CompletionQueue#await} against the race between arming and arrival: 3,000 sends, each
     * after a random pause of 0 to about 50 µs, while a virtual thread waits for each receive's
     * completion. A completion that arrived between the poll and the arming, and was not polled
     * again after arming, would leave the waiter asleep until its timeout: every await must return
     * a completion, in order, bytes checked.
     */
    @Test
    void awaitLosesNoCompletionRacingItsArming(TestDevice dev) throws Exception {
        int messages = Integer.getInteger("virtualthreads.race.messages", 3000);
        int slots = 32;
        try (Context ctx = dev.open();
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             CompletionChannel channel = ctx.createCompletionChannel();
             CompletionQueue sendCq = ctx.createCompletionQueue(64);
             CompletionQueue recvCq = ctx.createCompletionQueue(64, channel, 0);
             QueuePair a = pd.createQueuePair(new QpInitAttributes(QpType.RC, sendCq, sendCq).maxSendWr(4));
             QueuePair b = pd.createQueuePair(new QpInitAttributes(QpType.RC, recvCq, recvCq).maxRecvWr(slots));
             MemoryRegion out = pd.allocateAndRegister(4096);
             MemoryRegion in = pd.allocateAndRegister(64L * slots)) {
            ConnectOptions how = ConnectOptions.port(dev.port()).gidIndex(dev.gidIndex());
            a.connect(b.localEndpoint(how), how);
            b.connect(a.localEndpoint(how), how);
            for (int s = 0; s < slots; s++) {
                b.postReceive(new ReceiveRequest(1).id(s).sge(in, 64L * s, 64));
            }
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread receiver = Thread.ofVirtual().start(() -> {
                try {
                    WorkCompletions wc = new WorkCompletions(1);
                    ReceiveRequest again = new ReceiveRequest(1);
                    for (int i = 0; i < messages; i++) {
                        int n = recvCq.await(wc, Duration.ofSeconds(10));
                        assertEquals(1, n, "completion " + i + " of " + messages + ": await returned none (a lost wake-up)");
                        assertEquals(WcStatus.SUCCESS, wc.status(0));
                        int slot = (int) wc.wrId(0);
                        assertEquals(i % slots, slot);
                        assertEquals(i, in.segment().get(JAVA_INT, 64L * slot), "message " + i + "'s bytes");
                        b.postReceive(again.id(slot).sge(in, 64L * slot, 64));
                    }
                } catch (Throwable t) {
                    failure.set(t);
                }
            });
            java.util.Random random = new java.util.Random(0x5eed);
            WorkCompletions sent = new WorkCompletions(1);
            SendRequest send = new SendRequest(1).opcode(SendOpcode.SEND).signaled(true);
            for (int i = 0; i < messages && failure.get() == null; i++) {
                out.segment().set(JAVA_INT, 0, i);
                long until = System.nanoTime() + random.nextInt(50_000);
                while (System.nanoTime() < until) {
                    Thread.onSpinWait();
                }
                a.postSend(send.id(i).sge(out, 0, 4));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (sendCq.poll(sent) == 0) {
                    assertTrue(System.nanoTime() < deadline, "send " + i + " completed");
                }
                assertEquals(WcStatus.SUCCESS, sent.status(0), "send " + i);
            }
            receiver.join(Duration.ofSeconds(60));
            if (failure.get() != null) {
                throw new AssertionError(failure.get());
            }
            assertTrue(!receiver.isAlive(), "the receiver finished");

            // What await refuses: a queue without a channel, and one that shares its channel.
            WorkCompletions wc = new WorkCompletions(1);
            IllegalStateException none = assertThrows(IllegalStateException.class, () -> sendCq.await(wc, Duration.ZERO));
            assertTrue(none.getMessage().contains("no completion channel"), none.getMessage());
            try (CompletionQueue second = ctx.createCompletionQueue(4, channel, 0)) {
                IllegalStateException shared = assertThrows(IllegalStateException.class,
                        () -> recvCq.await(wc, Duration.ZERO));
                assertTrue(shared.getMessage().contains("shares"), shared.getMessage());
            }
            assertEquals(0, recvCq.await(wc, Duration.ofMillis(100)), "nothing more arrives");
        }
    }
}
