package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/**
 * Regression tests for misuse that used to abort the JVM inside the provider or let the device write
 * into freed memory (each failed before its fix): every one must now end in a documented exception
 * or an error completion, and the JVM lives.
 */
@RequiresRdma
class SafetyIT {
    private static final int QKEY = 0x11111111;

    private static void assertMessage(Throwable t, String part) {
        assertTrue(t.getMessage() != null && t.getMessage().contains(part), () -> "message lacks '" + part + "': " + t.getMessage());
    }

    @Test
    void udSendWithoutDestinationIsRefused(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.UD)) {
            p.a.activateDatagram(p.how, QKEY);
            SendRequest noAh = new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(p.mrA, 0, 64);
            assertMessage(assertThrows(IllegalStateException.class, () -> p.a.postSend(noAh)), "no destination");

            // wr.ud and wr.rdma share the C union: rdma() after datagram() must not leave a wild pointer.
            Gid gid = p.ctx.queryGid(dev.port(), dev.gidIndex());
            AddressHandle ah = p.keep(p.pd.createAddressHandle(AddressVector.global(dev.port(), gid, dev.gidIndex(), 64)));
            SendRequest clobbered = new SendRequest(1).opcode(SendOpcode.SEND).sge(p.mrA, 0, 64)
                    .datagram(ah, p.b.qpNumber(), QKEY).rdma(0x1234, 99);
            assertMessage(assertThrows(IllegalStateException.class, () -> p.a.postSend(clobbered)), "no destination");

            // A chain whose second member has no destination.
            SendRequest good = new SendRequest(1).opcode(SendOpcode.SEND).sge(p.mrA, 0, 64).datagram(ah, p.b.qpNumber(), QKEY);
            good.next(noAh);
            assertMessage(assertThrows(IllegalStateException.class, () -> p.a.postSend(good)), "#1");
            assertEquals(0, p.cqA.poll(p.wc), "nothing was posted");
        }
    }

    @Test
    void chainMemberInAClosedArenaIsRefused(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            Arena shortLived = Arena.ofConfined();
            SendRequest first = new SendRequest(1).opcode(SendOpcode.RDMA_WRITE).sge(p.mrA, 0, 8)
                    .rdma(p.mrB.address(), p.mrB.rkey());
            first.next(new SendRequest(1, shortLived).opcode(SendOpcode.RDMA_WRITE).sge(p.mrA, 0, 8)
                    .rdma(p.mrB.address(), p.mrB.rkey()));
            ReceiveRequest recv = new ReceiveRequest(1).sge(p.mrB, 0, 8);
            recv.next(new ReceiveRequest(1, shortLived).sge(p.mrB, 0, 8));
            shortLived.close();
            assertMessage(assertThrows(IllegalStateException.class, () -> p.a.postSend(first)), "#1 of the chain has been freed");
            assertMessage(assertThrows(IllegalStateException.class, () -> p.b.postReceive(recv)), "#1 of the chain has been freed");
        }
    }

    @Test
    void opcodesTheRequestCannotDescribeAreRefused() {
        SendRequest r = new SendRequest(1);
        for (SendOpcode op : new SendOpcode[] {SendOpcode.BIND_MW, SendOpcode.TSO, SendOpcode.DRIVER1}) {
            assertMessage(assertThrows(UnsupportedOperationException.class, () -> r.opcode(op)), op.name());
        }
    }

    @Test
    void completionQueueOfAnotherContextIsRefused(TestDevice dev) throws Exception {
        try (Context one = dev.open();
             Context two = dev.open();
             ProtectionDomain pd = one.allocateProtectionDomain();
             CompletionQueue mine = one.createCompletionQueue(4);
             CompletionQueue foreign = two.createCompletionQueue(4)) {
            assertMessage(assertThrows(IllegalArgumentException.class,
                    () -> pd.createQueuePair(new QpInitAttributes(QpType.RC, mine, foreign))), "its own context");
            // Nothing leaked: both completion queues close (the old bug left one EBUSY).
        }
    }

    /**
     * The caller's arena is closed under a live registration: the region is deregistered before the
     * memory is freed, so a peer's RDMA write with the old rkey fails and a new allocation in the
     * same place is never written.
     */
    @Test
    void closingTheArenaOfRegisteredMemoryDeregistersItFirst(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            Arena arena = Arena.ofShared();
            MemorySegment mem = arena.allocate(1 << 20, 4096);
            MemoryRegion target = p.keep(p.pd.register(arena, mem, AccessFlag.REMOTE_WRITE));
            long address = target.address();
            int rkey = target.rkey();
            // A receive posted into it on B, before the arena closes.
            p.b.postReceive(new ReceiveRequest(1).id(9).sge(target, 0, 64));
            arena.close();

            try (Arena reuse = Arena.ofShared()) {
                MemorySegment fresh = reuse.allocate(1 << 20, 4096);
                fresh.fill((byte) 0x5A);
                p.mrA.segment().asSlice(0, 4096).fill((byte) 0x77);
                p.a.postSend(new SendRequest(1).id(1).opcode(SendOpcode.RDMA_WRITE).signaled(true)
                        .sge(p.mrA, 0, 4096).rdma(address, rkey));
                WorkCompletions w = p.await(p.cqA, 1);
                assertNotEquals(WcStatus.SUCCESS, w.status(0), "an RDMA write through a deregistered rkey must fail");
                assertEquals(-1L, fresh.mismatch(reuse.allocate(1 << 20, 4096).fill((byte) 0x5A)),
                        "the new allocation must be untouched");
            }
            // Posting a request over the freed memory is refused in Java; closing the region works.
            assertMessage(assertThrows(IllegalStateException.class, () -> new SendRequest(1).sge(target, 0, 8)), "freed");
        }
    }

    @Test
    void aPostedReceiveIntoMemoryWhoseArenaClosedNeverLands(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            Arena arena = Arena.ofShared();
            MemoryRegion target = p.keep(p.pd.register(arena, arena.allocate(1 << 16, 4096)));
            p.b.postReceive(new ReceiveRequest(1).id(9).sge(target, 0, 64));
            arena.close();
            try (Arena reuse = Arena.ofShared()) {
                MemorySegment fresh = reuse.allocate(1 << 16, 4096);
                fresh.fill((byte) 0x5A);
                p.mrA.segment().asSlice(0, 64).fill((byte) 0x77);
                p.a.postSend(new SendRequest(1).id(1).opcode(SendOpcode.SEND).signaled(true).sge(p.mrA, 0, 64));
                WorkCompletions r = p.await(p.cqB, 1);
                assertEquals(9, r.wrId(0));
                assertNotEquals(WcStatus.SUCCESS, r.status(0), "the receive into deregistered memory must fail");
                for (long i = 0; i < fresh.byteSize(); i++) {
                    assertEquals((byte) 0x5A, fresh.get(JAVA_BYTE, i), "byte " + i + " of the new allocation was written");
                }
            }
        }
    }

    @Test
    void registrationRequiresTheSegmentsOwnArena(TestDevice dev) throws Exception {
        try (Context ctx = dev.open();
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             Arena mine = Arena.ofConfined();
             Arena other = Arena.ofConfined()) {
            MemorySegment seg = mine.allocate(4096);
            assertMessage(assertThrows(IllegalArgumentException.class, () -> pd.register(other, seg)), "does not belong");
            try (MemoryRegion ok = pd.register(mine, seg)) {
                assertEquals(seg.address(), ok.address());
            }
        }
    }

    @Test
    void aDeadPeerIsReportedInBoundedTimeWithTheDefaults(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            p.b.toError(); // the peer's queue pair stops answering
            long t0 = System.nanoTime();
            p.a.postSend(new SendRequest(1).id(3).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(p.mrA, 0, 64)
                    .rdma(p.mrB.address(), p.mrB.rkey()));
            WorkCompletions w = p.await(p.cqA, 1);
            double seconds = (System.nanoTime() - t0) / 1e9;
            System.out.printf("dead peer reported as %s after %.2f s%n", w.status(0), seconds);
            assertEquals(WcStatus.RETRY_EXC_ERR, w.status(0));
            assertTrue(seconds < 10, "took " + seconds + " s");
        }
    }

    @Test
    void nullsAndHugeSizesNameTheArgument(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            assertMessage(assertThrows(NullPointerException.class, () -> p.cqA.poll(null)), "batch");
            assertMessage(assertThrows(NullPointerException.class, () -> p.a.postSend(null)), "request");
            assertMessage(assertThrows(NullPointerException.class, () -> p.a.postReceive(null)), "request");
            assertMessage(assertThrows(NullPointerException.class, () -> p.pd.register(null, MemorySegment.NULL)), "arena");
            assertMessage(assertThrows(NullPointerException.class, () -> p.pd.createQueuePair(null)), "init");
            assertMessage(assertThrows(NullPointerException.class, () -> p.a.connect(null, null)), "options");
            assertMessage(assertThrows(NullPointerException.class, () -> new SendRequest(1).opcode(null)), "opcode");
            assertMessage(assertThrows(NullPointerException.class, () -> new SendRequest(1).sge(null, 0, 1)), "region");
            assertMessage(assertThrows(NullPointerException.class, () -> new SendRequest(1).datagram(null, 1, 1)), "destination");
            assertMessage(assertThrows(NullPointerException.class, () -> new QpInitAttributes(null, p.cqA, p.cqA)), "type");
            assertMessage(assertThrows(IllegalArgumentException.class, () -> p.pd.allocateAndRegister(Long.MAX_VALUE)), "cannot allocate");
            assertMessage(assertThrows(IllegalArgumentException.class, () -> new SendRequest(Integer.MAX_VALUE)), "maxSge");
            assertMessage(assertThrows(IllegalArgumentException.class, () -> new WorkCompletions(Integer.MAX_VALUE)), "capacity");
            assertMessage(assertThrows(IllegalArgumentException.class, () -> ConnectOptions.port(1).retryCount(8)), "retryCount");
            assertMessage(assertThrows(IllegalArgumentException.class, () -> ConnectOptions.port(1).timeout(32)), "timeout");
        }
    }

    @Test
    void closeWhileAnotherThreadBusyPollsEndsThatThreadWithAClearException(TestDevice dev) throws Exception {
        try (Context ctx = dev.open()) {
            CompletionQueue cq = ctx.createCompletionQueue(16);
            java.util.concurrent.CompletableFuture<Throwable> poller = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                WorkCompletions wc = new WorkCompletions(4);
                try {
                    while (true) {
                        cq.poll(wc);
                    }
                } catch (Throwable t) {
                    return t;
                }
            });
            Thread.sleep(200); // the poller is in its loop
            cq.close();
            Throwable ended = poller.get(10, java.util.concurrent.TimeUnit.SECONDS);
            assertTrue(ended instanceof IllegalStateException, "poller ended with " + ended);
            assertMessage(ended, "is closed");
            assertTrue(cq.isClosed());
        }
    }

    @Test
    void aForgottenQueuePairKeepsItsParentsOpenAndIsNamed(TestDevice dev) throws Exception {
        Context ctx = dev.open();
        ProtectionDomain pd = ctx.allocateProtectionDomain();
        CompletionQueue cq = ctx.createCompletionQueue(4);
        forget(pd, cq);
        System.gc();
        // No finalization: the dropped queue pair stays allocated and the domain refuses to close, naming it.
        assertMessage(assertThrows(IllegalStateException.class, pd::close), "QueuePair[RC");
        assertTrue(!pd.isClosed());
    }

    private static void forget(ProtectionDomain pd, CompletionQueue cq) {
        pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq));
    }
}
