package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.panamaverbs.internal.Quirks;
import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * The reliability suite's hazards (issue 26): sequences that took down the kernel, killed the JVM or
 * left a thread in a native call for ever, each refused in Java now, or ended within a bound. None
 * of them is made here: a test that panicked the CI VM would prove nothing. Each test prints one
 * line starting with {@code RELIABILITY hazard}.
 */
@RequiresRdma
class HazardsIT {
    private static final Set<AccessFlag> RW = EnumSet.of(AccessFlag.REMOTE_READ, AccessFlag.REMOTE_WRITE);
    private static final Set<SendOpcode> OPS = EnumSet.of(SendOpcode.RDMA_WRITE, SendOpcode.SEND, SendOpcode.LOCAL_INV,
            SendOpcode.BIND_MW);

    private static void report(String line) {
        System.out.println("RELIABILITY hazard " + line);
        System.out.flush();
    }

    private static boolean rxe(TestDevice dev) {
        return dev.name().startsWith("rxe");
    }

    /** Runs {@code body} with type 2 windows allowed on Soft-RoCE, as a user who opted in would. */
    private static void withType2Windows(Runnable body) {
        System.setProperty(Quirks.UNSAFE_RXE_TYPE2_WINDOWS, "true");
        try {
            body.run();
        } finally {
            System.clearProperty(Quirks.UNSAFE_RXE_TYPE2_WINDOWS);
        }
    }

    /** A writes 256 fresh bytes into B's {@code region} at {@code offset} with {@code rkey}; checks them. */
    private static void writeThrough(Pair p, MemoryRegion region, long offset, int rkey) {
        MemorySegment src = p.mrA.segment().asSlice(0, 256);
        long seed = System.nanoTime();
        for (int i = 0; i < 256; i++) {
            src.set(JAVA_BYTE, i, (byte) (seed + i * 7));
        }
        p.a.postSend(new SendRequest(1).id(90).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(p.mrA, 0, 256)
                .rdma(region.address() + offset, rkey));
        assertEquals(WcStatus.SUCCESS, p.await(p.cqA, 1).status(0));
        assertEquals(-1, src.mismatch(region.segment().asSlice(offset, 256)), "the bytes written through the window");
    }

    private static MemoryRegion exposed(Pair p) {
        return p.keep(p.pd.allocateAndRegister(1 << 16, AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_WRITE,
                AccessFlag.REMOTE_READ, AccessFlag.MW_BIND));
    }

    /** Binds {@code w} through B with a work request under its next key; returns the key. */
    private static int bind(Pair p, MemoryWindow w, MemoryRegion region) {
        int rkey = w.nextRkey();
        p.b.postSend(new SendRequest(1).id(3).signaled(true).bindMemoryWindow(w, rkey, region, 4096, 8192, RW));
        WorkCompletions c = p.expectOne(p.cqB, WcOpcode.BIND_MW);
        assertEquals(3, c.wrId(0));
        return rkey;
    }

    private static SendRequest localInvalidate(int rkey) {
        return new SendRequest(1).id(4).signaled(true).opcode(SendOpcode.LOCAL_INV).invalidateRkey(rkey);
    }

    private static void assertMessage(Throwable e, String... fragments) {
        for (String f : fragments) {
            assertTrue(e.getMessage().contains(f), () -> "\"" + e.getMessage() + "\" lacks \"" + f + "\"");
        }
    }

    @Test
    void type2WindowsAreRefusedOnSoftRoceUnlessAllowed(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            System.clearProperty(Quirks.UNSAFE_RXE_TYPE2_WINDOWS);
            if (!rxe(dev)) {
                report("type 2 windows on " + dev.name() + ": not Soft-RoCE, no refusal to check");
                return;
            }
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                    () -> p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_2));
            assertMessage(e, "Soft-RoCE", Quirks.UNSAFE_RXE_TYPE2_WINDOWS);
            p.keep(p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_1)); // type 1 stays allowed
            report("type 2 window refused on Soft-RoCE without the opt-in: " + e.getMessage());
        }
    }

    @Test
    void type2WindowInvalidationsThatWouldPanicAreRefused(TestDevice dev) throws Exception {
        withType2Windows(() -> {
            try (Pair p = new Pair(dev, QpType.RC, c -> c.sendOps(OPS))) {
                MemoryRegion region = exposed(p);
                MemoryWindow w = p.keep(p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_2));
                // never bound: its LOCAL_INV would dereference NULL in rxe_invalidate_mw
                IllegalStateException never = assertThrows(IllegalStateException.class,
                        () -> p.b.postSend(localInvalidate(w.nextRkey())));
                assertMessage(never, "not bound");
                int rkey = bind(p, w, region);
                writeThrough(p, region, 4096, rkey);
                assertMessage(assertThrows(IllegalStateException.class, () -> p.b.postSend(new SendRequest(1).id(5)
                        .bindMemoryWindow(w, MemoryWindow.incrementKey(rkey), region, 0, 4096, RW))), "invalidate it");
                assertMessage(assertThrows(IllegalStateException.class, () -> p.a.postSend(localInvalidate(rkey))),
                        "bound through");
                // a chain that invalidates twice: refused whole, the first request's change undone
                SendRequest twice = localInvalidate(rkey);
                twice.next(localInvalidate(rkey));
                assertThrows(IllegalStateException.class, () -> p.b.postSend(twice));
                writeThrough(p, region, 4096 + 512, rkey); // still bound: nothing was posted
                // the first invalidation passes, the second (request, then batch) is refused
                p.b.postSend(localInvalidate(rkey));
                assertEquals(WcStatus.SUCCESS, p.await(p.cqB, 1).status(0));
                IllegalStateException again = assertThrows(IllegalStateException.class, () -> p.b.postSend(localInvalidate(rkey)));
                assertMessage(again, "not bound", "0x" + Integer.toHexString(rkey));
                SendBatch batch = p.b.sendBatch().start();
                assertThrows(IllegalStateException.class, () -> batch.id(6).signaled(true).localInvalidate(rkey));
                batch.abort();
                // bound again under the next key, then invalidated by a batch: once, not twice
                int next = bind(p, w, region);
                writeThrough(p, region, 8192, next);
                batch.start().id(7).signaled(true).localInvalidate(next);
                assertThrows(IllegalStateException.class, () -> batch.id(8).localInvalidate(next));
                assertEquals(1, batch.complete());
                assertEquals(WcStatus.SUCCESS, p.await(p.cqB, 1).status(0));
                assertThrows(IllegalStateException.class, () -> p.b.postSend(localInvalidate(next)));
                // an aborted batch's invalidation is undone: the window is still bound afterwards
                int third = bind(p, w, region);
                batch.start().id(9).localInvalidate(third);
                batch.abort();
                writeThrough(p, region, 4096, third);
                p.b.postSend(localInvalidate(third));
                assertEquals(WcStatus.SUCCESS, p.await(p.cqB, 1).status(0));
                report("type 2 window: LOCAL_INV never bound, twice (request, chain, batch), through the other queue "
                        + "pair, and a bind of a bound window: all refused in Java; " + never.getMessage());
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
    }

    @Test
    void aQueuePairAType2WindowIsBoundThroughClosesOnlyAfterTheWindow(TestDevice dev) throws Exception {
        withType2Windows(() -> {
            try (Pair p = new Pair(dev, QpType.RC)) {
                MemoryRegion region = exposed(p);
                MemoryWindow w = p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_2);
                int rkey = bind(p, w, region);
                writeThrough(p, region, 4096, rkey);
                long t0 = System.nanoTime();
                IllegalStateException e = assertThrows(IllegalStateException.class, p.b::close);
                double refusedMs = (System.nanoTime() - t0) / 1e6;
                assertTrue(refusedMs < 5000, "refused after " + refusedMs + " ms");
                assertMessage(e, "still in use by", "MemoryWindow");
                assertTrue(!p.b.isClosed());
                w.close(); // ibv_dealloc_mw frees the window and its hold on the queue pair
                report("closing a queue pair with a type 2 window bound through it: refused in " + String.format("%.1f", refusedMs)
                        + " ms (" + e.getMessage() + "); closes once the window is closed");
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
    }

    @Test
    void postsOnTheThreadOfAnOpenSendBatchAreRefused(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC, c -> c.sendOps(OPS))) {
            MemoryRegion region = exposed(p);
            SendBatch batch = p.b.sendBatch().start();
            SendRequest write = new SendRequest(1).id(11).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(p.mrB, 0, 64)
                    .rdma(p.mrA.address(), p.mrA.rkey());
            assertMessage(assertThrows(IllegalStateException.class, () -> p.b.postSend(write)), "SendBatch", "this thread");
            MemoryWindow one = p.keep(p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_1));
            assertThrows(IllegalStateException.class, () -> p.b.bindMemoryWindow(one, region, 0, 4096, RW, 12, true));
            // another thread waits for the batch (the provider's lock), as in C, and posts once it ends
            CompletableFuture<Void> other = CompletableFuture.runAsync(() -> p.b.postSend(write));
            Thread.sleep(100);
            batch.abort();
            other.get(5, TimeUnit.SECONDS);
            assertEquals(WcStatus.SUCCESS, p.await(p.cqB, 1).status(0));
            p.mrB.segment().asSlice(0, 64).fill((byte) 0x3c);
            p.b.postSend(write);
            assertEquals(WcStatus.SUCCESS, p.await(p.cqB, 1).status(0));
            assertEquals(-1, p.mrA.segment().asSlice(0, 64).mismatch(p.mrB.segment().asSlice(0, 64)));
            report("postSend and bindMemoryWindow on the thread of an open SendBatch: refused; another thread's post waits for the batch");
        }
    }

    @Test
    void calls_that_take_the_queue_lock_are_refused_between_startPoll_and_endPoll(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            CompletionChannel channel = p.keep(p.ctx.createCompletionChannel());
            ExtendedCompletionQueue cq = p.keep(p.ctx.createCompletionQueue(16, EnumSet.of(WcField.BYTE_LEN), channel, 0));
            QueuePair c = p.keep(p.pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq).maxSendWr(8).maxRecvWr(8)));
            QueuePair d = p.keep(p.pd.createQueuePair(new QpInitAttributes(QpType.RC, p.cqB, p.cqB).maxSendWr(8).maxRecvWr(8)));
            RemoteEndpoint ec = c.localEndpoint(p.how);
            c.connect(d.localEndpoint(p.how), p.how);
            d.connect(ec, p.how);
            for (int i = 0; i < 2; i++) {
                p.mrA.segment().asSlice(0, 128).fill((byte) (i + 1));
                c.postSend(new SendRequest(1).id(20 + i).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(p.mrA, 0, 128)
                        .rdma(p.mrB.address(), p.mrB.rkey()));
                WorkCompletions wc = new WorkCompletions(4);
                long deadline = System.nanoTime() + 10_000_000_000L;
                while (!cq.startPoll()) {
                    if (System.nanoTime() > deadline) {
                        fail("no completion");
                    }
                }
                assertEquals(20 + i, cq.wrId());
                assertEquals(WcStatus.SUCCESS, cq.status());
                assertEquals(-1, p.mrA.segment().asSlice(0, 128).mismatch(p.mrB.segment().asSlice(0, 128)));
                for (Runnable call : new Runnable[] {() -> cq.poll(wc), () -> cq.await(wc, Duration.ofSeconds(1)),
                        () -> cq.resize(32), () -> cq.requestNotification(false)}) {
                    assertMessage(assertThrows(IllegalStateException.class, call::run), "between startPoll() and endPoll()");
                }
                cq.endPoll();
                assertEquals(0, cq.poll(wc)); // the lock is free again
            }
            report("poll, await, resize, requestNotification between startPoll and endPoll on one thread: refused");
        }
    }

    /** Starts {@code wait} on a platform thread, interrupts it once it waits, and returns how long it took to return. */
    private static double interruptedAfterMillis(Consumer<Void> wait) throws Exception {
        AtomicReference<Throwable> ended = new AtomicReference<>();
        Thread t = Thread.ofPlatform().start(() -> {
            try {
                wait.accept(null);
            } catch (Throwable e) {
                ended.set(e);
            }
        });
        Thread.sleep(300); // in its wait
        long t0 = System.nanoTime();
        t.interrupt();
        t.join(5000);
        double ms = (System.nanoTime() - t0) / 1e6;
        assertTrue(!t.isAlive(), "the waiter is still waiting 5 s after its interrupt");
        assertTrue(ended.get() instanceof IllegalStateException, "ended on " + ended.get());
        assertMessage(ended.get(), "interrupted");
        assertTrue(ms < 1000, "returned " + ms + " ms after its interrupt");
        return ms;
    }

    @Test
    void anInterruptEndsThePlatformThreadsWaits(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            CompletionChannel channel = p.keep(p.ctx.createCompletionChannel());
            CompletionQueue cq = p.keep(p.ctx.createCompletionQueue(16, channel, 0));
            double await = interruptedAfterMillis(x -> cq.await(new WorkCompletions(1), Duration.ofSeconds(30)));
            double event = interruptedAfterMillis(x -> channel.awaitEvent(Duration.ofSeconds(30)));
            report(String.format("interrupted platform thread: cq.await returned in %.1f ms, channel.awaitEvent in %.1f ms",
                    await, event));
        }
    }

    @Test
    void retryCountSevenIsRefusedOnSoftRoceAndNullsAreNamed(TestDevice dev) throws Exception {
        NullPointerException npe = assertThrows(NullPointerException.class, () -> new QpAttributes().state(null));
        assertEquals("state", npe.getMessage());
        assertEquals("mtu", assertThrows(NullPointerException.class, () -> new QpAttributes().pathMtu(null)).getMessage());
        try (Pair p = new Pair(dev, QpType.RC)) {
            QueuePair q = p.keep(p.pd.createQueuePair(new QpInitAttributes(QpType.RC, p.cqA, p.cqA)));
            QueuePair r = p.keep(p.pd.createQueuePair(new QpInitAttributes(QpType.RC, p.cqB, p.cqB)));
            RemoteEndpoint er = r.localEndpoint(p.how);
            ConnectOptions seven = ConnectOptions.port(dev.port()).gidIndex(dev.gidIndex()).retryCount(7);
            if (rxe(dev)) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> q.connect(er, seven));
                assertMessage(e, "for ever", "Soft-RoCE");
                assertEquals(QpState.RTR, q.state(), "refused at the move to RTS, before the verb");
                report("retry count 7 on Soft-RoCE: refused (" + e.getMessage() + ")");
            } else {
                q.connect(er, seven);
                report("retry count 7 on " + dev.name() + ": allowed");
            }
        }
    }
}
