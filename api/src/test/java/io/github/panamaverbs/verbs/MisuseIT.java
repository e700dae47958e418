package io.github.panamaverbs.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/** Mistakes a user can make: each is a clear exception, and the JVM lives on. */
@RequiresRdma
class MisuseIT {

    @Test
    void closingAParentWithLiveChildrenFailsAndKeepsEverythingOpen(TestDevice dev) throws Exception {
        try (Context ctx = dev.open();
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             CompletionQueue cq = ctx.createCompletionQueue(4)) {
            MemoryRegion mr = pd.allocateAndRegister(4096);
            QueuePair qp = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq));
            IllegalStateException e = assertThrows(IllegalStateException.class, pd::close);
            assertTrue(e.getMessage().contains("still in use by"), e.getMessage());
            assertTrue(e.getMessage().contains("MemoryRegion") && e.getMessage().contains("QueuePair"), e.getMessage());
            IllegalStateException busyCq = assertThrows(IllegalStateException.class, cq::close);
            assertTrue(busyCq.getMessage().contains("QueuePair"), busyCq.getMessage());
            assertThrows(IllegalStateException.class, ctx::close);
            // Still usable.
            assertTrue(mr.lkey() != 0 || mr.rkey() != 0 || mr.length() == 4096);
            assertEquals(QpState.RESET, qp.query().state());
            qp.close();
            mr.close();
        }
    }

    @Test
    void useAfterCloseAndDoubleClose(TestDevice dev) throws Exception {
        try (Context ctx = dev.open();
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             CompletionQueue cq = ctx.createCompletionQueue(4)) {
            MemoryRegion mr = pd.allocateAndRegister(4096);
            QueuePair qp = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq));
            SendRequest send = new SendRequest(1).opcode(SendOpcode.SEND).sge(mr, 0, 8);
            qp.close();
            IllegalStateException closedQp = assertThrows(IllegalStateException.class, () -> qp.postSend(send));
            assertTrue(closedQp.getMessage().contains("closed"), closedQp.getMessage());
            assertThrows(IllegalStateException.class, qp::query);
            IllegalStateException twice = assertThrows(IllegalStateException.class, qp::close);
            assertTrue(twice.getMessage().contains("already closed"), twice.getMessage());

            mr.close();
            assertThrows(IllegalStateException.class, () -> new SendRequest(1).sge(mr, 0, 8));
            assertThrows(IllegalStateException.class, mr::close);

            CompletionQueue other = ctx.createCompletionQueue(4);
            other.close();
            assertThrows(IllegalStateException.class, () -> other.poll(new WorkCompletions(1)));
            assertThrows(IllegalStateException.class, () -> pd.createQueuePair(new QpInitAttributes(QpType.RC, other, other)));
        }
        Context ctx = dev.open();
        ctx.close();
        assertThrows(IllegalStateException.class, ctx::allocateProtectionDomain);
        assertThrows(IllegalStateException.class, () -> ctx.queryPort(1));
    }

    @Test
    void badBuffersAreRefusedBeforeTheyReachTheDevice(TestDevice dev) throws Exception {
        try (Context ctx = dev.open();
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             CompletionQueue cq = ctx.createCompletionQueue(4);
             QueuePair qp = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq))) {
            IllegalArgumentException heap = assertThrows(IllegalArgumentException.class,
                    () -> pd.register(Arena.global(), MemorySegment.ofArray(new byte[4096])));
            assertTrue(heap.getMessage().contains("heap"), heap.getMessage());

            try (Arena arena = Arena.ofConfined()) {
                MemorySegment ro = arena.allocate(4096).asReadOnly();
                IllegalArgumentException readOnly = assertThrows(IllegalArgumentException.class, () -> pd.register(arena, ro));
                assertTrue(readOnly.getMessage().contains("read-only"), readOnly.getMessage());
            }

            Arena closed = Arena.ofShared();
            MemorySegment gone = closed.allocate(4096);
            closed.close();
            IllegalStateException dead = assertThrows(IllegalStateException.class, () -> pd.register(closed, gone));
            assertTrue(dead.getMessage().contains("arena is already closed"), dead.getMessage());

            Arena shortLived = Arena.ofShared();
            try (MemoryRegion mr = pd.register(shortLived, shortLived.allocate(4096, 4096))) {
                IndexOutOfBoundsException outside = assertThrows(IndexOutOfBoundsException.class,
                        () -> new SendRequest(1).sge(mr, 4000, 200));
                assertTrue(outside.getMessage().contains("outside"), outside.getMessage());
                assertThrows(IndexOutOfBoundsException.class, () -> new ReceiveRequest(1).sge(mr, -1, 8));
                SendRequest send = new SendRequest(1).opcode(SendOpcode.SEND).sge(mr, 0, 64);
                shortLived.close(); // the memory is freed while still registered
                IllegalStateException freed = assertThrows(IllegalStateException.class, () -> qp.postSend(send));
                assertTrue(freed.getMessage().contains("freed"), freed.getMessage());
            }
        }
    }

    @Test
    void postingOnAQueuePairInResetNamesTheRequestAndTheState(TestDevice dev) throws Exception {
        try (Context ctx = dev.open();
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             CompletionQueue cq = ctx.createCompletionQueue(4);
             QueuePair qp = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq));
             MemoryRegion mr = pd.allocateAndRegister(4096)) {
            SendRequest second = new SendRequest(1).id(2).opcode(SendOpcode.SEND).sge(mr, 0, 8);
            SendRequest first = new SendRequest(1).id(1).opcode(SendOpcode.SEND).sge(mr, 0, 8).next(second);
            VerbsException e = assertThrows(VerbsException.class, () -> qp.postSend(first));
            assertEquals("ibv_post_send", e.verb());
            assertTrue(e.errno() != 0);
            // rxe fails in its doorbell and names no request (bad_wr stays NULL); others name #0.
            assertTrue(e.getMessage().contains("#0") || e.getMessage().contains("did not say which"), e.getMessage());
            assertTrue(e.getMessage().contains("RESET"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> second.next(first), "a cycle");
            // The JVM and the device are fine: a query still answers.
            assertEquals(QpState.RESET, qp.query().state());
        }
    }

    @Test
    void badAttributesAreVerbsExceptions(TestDevice dev) throws Exception {
        try (Context ctx = dev.open();
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             CompletionQueue cq = ctx.createCompletionQueue(4);
             QueuePair qp = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq))) {
            // RESET -> RTS is not a legal transition.
            VerbsException e = assertThrows(VerbsException.class,
                    () -> qp.modify(new QpAttributes().state(QpState.RTS).sqPsn(1)));
            assertEquals("ibv_modify_qp", e.verb());
            assertEquals("EINVAL", e.errnoName());
            assertThrows(IllegalArgumentException.class, () -> ctx.queryPort(0));
            VerbsException noPort = assertThrows(VerbsException.class, () -> ctx.queryPort(9));
            assertEquals("ibv_query_port", noPort.verb());
            VerbsException huge = assertThrows(VerbsException.class,
                    () -> pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq).maxSendWr(1 << 30)));
            assertEquals("ibv_create_qp", huge.verb());
        }
    }
}
