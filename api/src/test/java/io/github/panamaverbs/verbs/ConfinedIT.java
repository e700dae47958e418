package io.github.panamaverbs.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The confined views (the fast form of post and poll) on the device: transfers through them are
 * checked byte for byte, and every way to misuse them ends in {@link IllegalStateException}: another
 * thread's call, a close from another thread while the owner polls and posts, a view left open when
 * its queue closes, and use after close.
 */
@RequiresRdma
class ConfinedIT {
    @Test
    void sendsAndWritesThroughTheViewsArriveIntact(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC);
             QueuePair.Confined sender = p.a.confined();
             QueuePair.Confined receiver = p.b.confined();
             CompletionQueue.Confined sends = p.cqA.confined();
             CompletionQueue.Confined receives = p.cqB.confined()) {
            MemorySegment src = p.mrA.segment().asSlice(0, 8192);
            byte[] bytes = new byte[8192];
            new Random(7).nextBytes(bytes);
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, src, 0, bytes.length);
            ReceiveRequest recv = new ReceiveRequest(1);
            SendRequest send = new SendRequest(1).opcode(SendOpcode.SEND).signaled(true);
            WorkCompletions wc = new WorkCompletions(4);
            for (int i = 0; i < 20; i++) {
                receiver.postReceive(recv.id(100 + i).sge(p.mrB, 16384, 4096));
                sender.postSend(send.id(i).sge(p.mrA, i * 128L, 4096));
                assertEquals(i, one(sends, wc, WcOpcode.SEND).wrId(0));
                WorkCompletions r = one(receives, wc, WcOpcode.RECV);
                assertEquals(100 + i, r.wrId(0));
                assertEquals(4096, r.byteLength(0));
                assertEquals(-1, src.asSlice(i * 128L, 4096).mismatch(p.mrB.segment().asSlice(16384, 4096)), "send " + i);
            }
            sender.postSend(new SendRequest(1).id(7).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(p.mrA, 0, 8192)
                    .rdma(p.mrB.address() + 65536, p.mrB.rkey()));
            assertEquals(7, one(sends, wc, WcOpcode.RDMA_WRITE).wrId(0));
            assertEquals(-1, src.mismatch(p.mrB.segment().asSlice(65536, 8192)));
        }
    }

    @Test
    void aCloseFromAnotherThreadWhileTheOwnerPollsAndPostsIsRefusedAndHarmless(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            AtomicReference<CompletionQueue.Confined> views = new AtomicReference<>();
            CountDownLatch running = new CountDownLatch(1);
            long[] rounds = new long[1];
            Thread owner = Thread.ofPlatform().name("owner").start(() -> {
                try (CompletionQueue.Confined poller = p.cqA.confined(); QueuePair.Confined sender = p.a.confined()) {
                    views.set(poller);
                    SendRequest write = new SendRequest(1).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(p.mrA, 0, 64)
                            .rdma(p.mrB.address(), p.mrB.rkey());
                    WorkCompletions wc = new WorkCompletions(8);
                    running.countDown();
                    while (!stop.get()) {
                        sender.postSend(write.id(rounds[0]));
                        one(poller, wc, WcOpcode.RDMA_WRITE);
                        rounds[0]++;
                    }
                } catch (Throwable t) {
                    failure.set(t);
                }
            });
            running.await();
            for (int i = 0; i < 20; i++) {
                IllegalStateException cq = assertThrows(IllegalStateException.class, p.cqA::close);
                assertTrue(cq.getMessage().contains("still in use by [") && cq.getMessage().contains("CompletionQueue.Confined["),
                        cq.getMessage());
                IllegalStateException qp = assertThrows(IllegalStateException.class, p.a::close);
                assertTrue(qp.getMessage().contains("QueuePair.Confined["), qp.getMessage());
                IllegalStateException view = assertThrows(IllegalStateException.class, () -> views.get().close());
                assertTrue(view.getMessage().contains("is confined to thread #" + owner.threadId()), view.getMessage());
                IllegalStateException use = assertThrows(IllegalStateException.class, () -> views.get().poll(p.wc));
                assertTrue(use.getMessage().contains("\"owner\""), use.getMessage());
                Thread.sleep(5);
            }
            stop.set(true);
            owner.join();
            if (failure.get() != null) {
                throw new AssertionError("the owner's loop failed", failure.get());
            }
            assertTrue(rounds[0] > 0, "the owner posted and polled meanwhile");
            assertTrue(views.get().isClosed());
        } // the queues close now: the owner's try-with-resources closed its views
    }

    @Test
    void aViewLeftOpenKeepsItsQueueFromClosingUntilItIsClosed(TestDevice dev) throws Exception {
        Pair p = new Pair(dev, QpType.RC);
        CompletionQueue.Confined poller = p.cqB.confined();
        QueuePair.Confined receiver = p.b.confined();
        IllegalStateException e = assertThrows(IllegalStateException.class, p::close);
        assertTrue(e.getMessage().contains(".Confined["), e.getMessage());
        receiver.close();
        poller.close();
        p.close();
        assertTrue(p.cqB.isClosed() && p.b.isClosed());
        assertEquals(poller + " is closed", assertThrows(IllegalStateException.class, () -> poller.poll(p.wc)).getMessage());
        ReceiveRequest late = new ReceiveRequest(1).id(3);
        assertEquals(receiver + " is closed", assertThrows(IllegalStateException.class, () -> receiver.postReceive(late)).getMessage());
        assertThrows(IllegalStateException.class, p.cqA::confined); // a closed queue has no views
    }

    /** The example of docs/features.md: a post through one view, polls through another until a completion comes. */
    static int postAndPoll(CompletionQueue cq, QueuePair qp, SendRequest request, WorkCompletions batch) {
        int n;
        // FEATURES-CONFINED-EXAMPLE-BEGIN
        try (CompletionQueue.Confined poller = cq.confined(); QueuePair.Confined sender = qp.confined()) {
            sender.postSend(request);              // no arena acquired: the view keeps the queue open
            while ((n = poller.poll(batch)) == 0) {
                Thread.onSpinWait();
            }
        }                                          // views first, then the queues may close
        // FEATURES-CONFINED-EXAMPLE-END
        return n;
    }

    @Test
    void theDocsExampleRuns(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            p.mrA.segment().setString(0, "confined");
            SendRequest write = new SendRequest(1).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(p.mrA, 0, 16)
                    .rdma(p.mrB.address(), p.mrB.rkey());
            assertEquals(1, postAndPoll(p.cqA, p.a, write, p.wc));
            assertEquals(WcStatus.SUCCESS, p.wc.status(0));
            assertEquals("confined", p.mrB.segment().getString(0));
        }
    }

    /** Polls {@code view} until one completion of {@code opcode} arrives (5 s at most); fails on an error status. */
    private static WorkCompletions one(CompletionQueue.Confined view, WorkCompletions wc, WcOpcode opcode) {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (view.poll(wc) == 0) {
            if (System.nanoTime() - deadline > 0) {
                fail("no " + opcode + " completion within 5 s");
            }
            Thread.onSpinWait();
        }
        assertEquals(1, wc.count());
        assertEquals(WcStatus.SUCCESS, wc.status(0), wc.toString());
        assertEquals(opcode, wc.opcode(0));
        return wc;
    }
}
