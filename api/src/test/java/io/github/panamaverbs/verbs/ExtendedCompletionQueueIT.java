package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Extended completion queues ({@code ibv_create_cq_ex}) on the device: as the queues of a connected RC
 * pair, read in place with start/next/end poll and the read accessors, with the classic poll, with a
 * completion channel; the fields the device does not report refused at creation; reads out of turn
 * refused in Java.
 */
@RequiresRdma
class ExtendedCompletionQueueIT {
    private static final Set<WcField> FIELDS = EnumSet.of(WcField.BYTE_LEN, WcField.IMMEDIATE, WcField.QP_NUM,
            WcField.SOURCE_QP);

    /** Two connected RC queue pairs whose completion queues are extended (A's may have a channel). */
    private static final class ExPair implements AutoCloseable {
        final Context ctx;
        final ProtectionDomain pd;
        final CompletionChannel channel;
        final ExtendedCompletionQueue cqA;
        final ExtendedCompletionQueue cqB;
        final QueuePair a;
        final QueuePair b;
        final MemoryRegion mr;

        ExPair(TestDevice dev, boolean withChannel) {
            ctx = dev.open();
            pd = ctx.allocateProtectionDomain();
            channel = withChannel ? ctx.createCompletionChannel() : null;
            cqA = ctx.createCompletionQueue(64, FIELDS, null, 0);
            cqB = ctx.createCompletionQueue(64, FIELDS, channel, 0);
            a = pd.createQueuePair(new QpInitAttributes(QpType.RC, cqA, cqA).maxSendWr(32).maxRecvWr(32));
            b = pd.createQueuePair(new QpInitAttributes(QpType.RC, cqB, cqB).maxSendWr(32).maxRecvWr(32));
            mr = pd.allocateAndRegister(1 << 16);
            ConnectOptions how = ConnectOptions.port(dev.port()).gidIndex(dev.gidIndex());
            RemoteEndpoint ea = a.localEndpoint(how);
            RemoteEndpoint eb = b.localEndpoint(how);
            a.connect(eb, how);
            b.connect(ea, how);
        }

        /** A sends {@code n} messages of 100 + i bytes with immediate 1000 + i into B's posted receives. */
        void sendMany(int n) {
            ReceiveRequest recv = new ReceiveRequest(1);
            SendRequest send = new SendRequest(1).opcode(SendOpcode.SEND_WITH_IMM).signaled(true);
            for (int i = 0; i < n; i++) {
                b.postReceive(recv.id(500 + i).sge(mr, 32768 + i * 256L, 256));
            }
            for (int i = 0; i < n; i++) {
                MemorySegment m = mr.segment().asSlice(i * 256L, 100 + i);
                for (long k = 0; k < m.byteSize(); k++) {
                    m.set(JAVA_BYTE, k, (byte) (k + i));
                }
                a.postSend(send.id(i).immediate(1000 + i).sge(mr, i * 256L, 100 + i));
            }
        }

        @Override
        public void close() {
            b.close();
            a.close();
            mr.close();
            cqB.close();
            cqA.close();
            if (channel != null) {
                channel.close();
            }
            pd.close();
            ctx.close();
        }
    }

    /** Waits until {@code cq.startPoll()} returns true (10 s at most). */
    private static void startPoll(ExtendedCompletionQueue cq) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!cq.startPoll()) {
            if (System.nanoTime() > deadline) {
                fail("no completion on " + cq);
            }
        }
    }

    @Test
    void readsEveryCompletionInPlace(TestDevice dev) {
        try (ExPair p = new ExPair(dev, false)) {
            assertTrue(p.cqB instanceof CompletionQueue, "an extended queue serves wherever a queue does");
            assertEquals(FIELDS, p.cqB.fields());
            p.sendMany(8);
            int got = 0;
            while (got < 8) {
                startPoll(p.cqB);
                do {
                    assertEquals(WcStatus.SUCCESS, p.cqB.status());
                    assertEquals(500 + got, p.cqB.wrId());
                    assertEquals(WcOpcode.RECV, p.cqB.readOpcode());
                    assertEquals(100 + got, p.cqB.readByteLength());
                    assertEquals(1000 + got, p.cqB.readImmediate());
                    assertTrue((p.cqB.readWcFlags() & WorkCompletions.IBV_WC_WITH_IMM) != 0);
                    assertEquals(p.b.qpNumber(), p.cqB.readQpNumber());
                    assertEquals(0, p.cqB.readSourceQp(), "src_qp is reported for UD datagrams only");
                    assertEquals(0, p.cqB.readVendorError());
                    MemorySegment sent = p.mr.segment().asSlice(got * 256L, 100 + got);
                    assertEquals(-1, sent.mismatch(p.mr.segment().asSlice(32768 + got * 256L, 100 + got)));
                    got++;
                } while (p.cqB.nextPoll());
                p.cqB.endPoll();
            }
            assertFalse(p.cqB.startPoll(), "all 8 were consumed");
            // The sender's completions, through the classic poll of the same kind of queue.
            WorkCompletions wc = new WorkCompletions(16);
            int sends = 0;
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (sends < 8 && System.nanoTime() < deadline) {
                int n = p.cqA.poll(wc);
                for (int i = 0; i < n; i++) {
                    assertEquals(WcStatus.SUCCESS, wc.status(i));
                    assertEquals(WcOpcode.SEND, wc.opcode(i));
                    assertEquals(sends++, wc.wrId(i));
                }
            }
            assertEquals(8, sends);
        }
    }

    @Test
    void wakesThroughItsCompletionChannel(TestDevice dev) {
        try (ExPair p = new ExPair(dev, true)) {
            p.cqB.requestNotification(false);
            p.sendMany(1);
            Optional<CompletionQueue> woke = p.channel.awaitEvent(Duration.ofSeconds(10));
            assertEquals(Optional.of(p.cqB), woke);
            startPoll(p.cqB);
            assertEquals(500, p.cqB.wrId());
            assertEquals(100, p.cqB.readByteLength());
            assertFalse(p.cqB.nextPoll());
            p.cqB.endPoll();
        }
    }

    @Test
    void outOfTurnReadsAreRefusedInJava(TestDevice dev) {
        try (ExPair p = new ExPair(dev, false); CompletionQueue classic = p.ctx.createCompletionQueue(4)) {
            assertFalse(classic instanceof ExtendedCompletionQueue, "the cursor methods exist only on the extended type");
            assertThrows(IllegalStateException.class, p.cqB::readOpcode, "before startPoll");
            assertThrows(IllegalStateException.class, p.cqB::wrId, "before startPoll");
            assertThrows(IllegalStateException.class, p.cqB::endPoll, "endPoll without startPoll");
            assertThrows(IllegalStateException.class, p.cqB::nextPoll, "nextPoll without startPoll");
            assertFalse(p.cqB.startPoll(), "empty");
            assertThrows(IllegalStateException.class, p.cqB::endPoll, "startPoll returned false");
            p.sendMany(1);
            startPoll(p.cqB);
            IllegalStateException e = assertThrows(IllegalStateException.class, p.cqB::readSourceLid);
            assertTrue(e.getMessage().contains("SLID was not asked for"), e.getMessage());
            assertThrows(IllegalStateException.class, p.cqB::readCompletionTimestamp);
            assertThrows(IllegalStateException.class, p.cqB::startPoll, "startPoll twice");
            assertFalse(p.cqB.nextPoll());
            assertThrows(IllegalStateException.class, p.cqB::readByteLength, "after nextPoll returned false");
            p.cqB.endPoll();
            assertThrows(IllegalStateException.class, p.cqB::wrId, "after endPoll");
        }
    }

    @Test
    void fieldsTheDeviceDoesNotReportAreRefusedAtCreation(TestDevice dev) {
        try (Context ctx = dev.open()) {
            for (WcField f : EnumSet.complementOf(EnumSet.copyOf(WcField.STANDARD))) {
                VerbsException e = assertThrows(VerbsException.class,
                        () -> ctx.createCompletionQueue(4, EnumSet.of(WcField.BYTE_LEN, f), null, 0), f.name());
                assertEquals("ibv_create_cq_ex", e.verb());
                assertEquals(95, e.errno(), e.getMessage()); // EOPNOTSUPP: rxe reports the standard fields only
                assertTrue(e.getMessage().contains(f.name()), e.getMessage());
            }
            assertThrows(NullPointerException.class, () -> ctx.createCompletionQueue(4, null, null, 0));
            assertThrows(IllegalArgumentException.class, () -> ctx.createCompletionQueue(0, FIELDS, null, 0));
            try (ExtendedCompletionQueue none = ctx.createCompletionQueue(4, Set.of(), null, 0)) {
                assertEquals(Set.of(), none.fields());
            }
        }
    }
}
