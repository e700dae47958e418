package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** UC, UD and shared receive queues on a real device, bytes checked. */
@RequiresRdma
class TransportsIT {
    private static final int QKEY = 0x11111111;
    private static final int GRH = 40;

    private static void pattern(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(JAVA_BYTE, i, (byte) (i * 31 + seed));
        }
    }

    private static void assertSameBytes(MemorySegment expected, MemorySegment actual) {
        long at = expected.mismatch(actual);
        assertEquals(-1L, at, () -> "bytes differ at offset " + at);
    }

    @Test
    void ucWriteAndSend(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.UC)) {
            pattern(p.mrA.segment().asSlice(0, 2000), 1);
            p.a.postSend(new SendRequest(1).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(p.mrA, 0, 2000)
                    .rdma(p.mrB.address() + 8192, p.mrB.rkey()));
            p.expectOne(p.cqA, WcOpcode.RDMA_WRITE);
            // UC has no acknowledgements: the sender's completion does not mean the data landed. A send
            // behind it on the same QP arrives after it, so its receive completion orders the check.
            pattern(p.mrA.segment().asSlice(4096, 300), 2);
            p.b.postReceive(new ReceiveRequest(1).id(77).sge(p.mrB, 0, 300));
            p.a.postSend(new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(p.mrA, 4096, 300));
            p.expectOne(p.cqA, WcOpcode.SEND);
            WorkCompletions r = p.expectOne(p.cqB, WcOpcode.RECV);
            assertEquals(77, r.wrId(0));
            assertEquals(300, r.byteLength(0));
            assertSameBytes(p.mrA.segment().asSlice(4096, 300), p.mrB.segment().asSlice(0, 300));
            assertSameBytes(p.mrA.segment().asSlice(0, 2000), p.mrB.segment().asSlice(8192, 2000));
        }
    }

    @Test
    void udSendWithGrh(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.UD)) {
            p.a.activateDatagram(p.how, QKEY);
            p.b.activateDatagram(p.how, QKEY);
            assertEquals(QpState.RTS, p.b.query().state());
            assertEquals(QKEY, p.b.query().qkey());
            Gid bGid = p.ctx.queryGid(dev.port(), dev.gidIndex());
            AddressHandle toB = p.keep(p.pd.createAddressHandle(AddressVector.global(dev.port(), bGid, dev.gidIndex(), 64)));

            pattern(p.mrA.segment().asSlice(0, 512), 3);
            p.b.postReceive(new ReceiveRequest(1).id(5).sge(p.mrB, 0, GRH + 512));
            p.a.postSend(new SendRequest(1).opcode(SendOpcode.SEND_WITH_IMM).immediate(123).signaled(true)
                    .sge(p.mrA, 0, 512).datagram(toB, p.b.qpNumber(), QKEY));
            p.expectOne(p.cqA, WcOpcode.SEND);
            WorkCompletions r = p.expectOne(p.cqB, WcOpcode.RECV);
            assertEquals(GRH + 512, r.byteLength(0), "a UD receive counts the GRH");
            assertTrue(r.hasGrh(0));
            assertEquals(p.a.qpNumber(), r.sourceQp(0), "source QPN");
            assertEquals(123, r.immediate(0));
            assertSameBytes(p.mrA.segment().asSlice(0, 512), p.mrB.segment().asSlice(GRH, 512));
        }
    }

    @Test
    void udWithWrongQkeyIsDropped(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.UD)) {
            p.a.activateDatagram(p.how, QKEY);
            p.b.activateDatagram(p.how, QKEY);
            Gid bGid = p.ctx.queryGid(dev.port(), dev.gidIndex());
            AddressHandle toB = p.keep(p.pd.createAddressHandle(AddressVector.global(dev.port(), bGid, dev.gidIndex(), 64)));
            p.b.postReceive(new ReceiveRequest(1).sge(p.mrB, 0, GRH + 64));
            p.a.postSend(new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(p.mrA, 0, 64)
                    .datagram(toB, p.b.qpNumber(), QKEY + 1));
            p.expectOne(p.cqA, WcOpcode.SEND);
            Thread.sleep(500);
            assertEquals(0, p.cqB.poll(p.wc), "a datagram with the wrong Q_Key must not be delivered");
        }
    }

    @Test
    void sharedReceiveQueueServesFourQueuePairs(TestDevice dev) throws Exception {
        try (Context ctx = dev.open();
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             CompletionQueue cq = ctx.createCompletionQueue(256);
             SharedReceiveQueue srq = pd.createSharedReceiveQueue(64, 1);
             MemoryRegion mr = pd.allocateAndRegister(1 << 16)) {
            ConnectOptions how = ConnectOptions.port(dev.port()).gidIndex(dev.gidIndex());
            List<QueuePair> receivers = new ArrayList<>();
            List<QueuePair> senders = new ArrayList<>();
            try {
                for (int i = 0; i < 4; i++) {
                    QueuePair r = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq).sharedReceiveQueue(srq));
                    receivers.add(r);
                    QueuePair s = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq));
                    senders.add(s);
                    r.connect(s.localEndpoint(how), how);
                    s.connect(r.localEndpoint(how), how);
                }
                // 8 receive buffers of 256 bytes at 32 KiB.., posted as one chain.
                ReceiveRequest head = null;
                for (int i = 7; i >= 0; i--) {
                    head = new ReceiveRequest(1).id(1000 + i).sge(mr, 32768 + i * 256L, 256).next(head);
                }
                srq.postReceive(head);
                for (int i = 0; i < 4; i++) {
                    pattern(mr.segment().asSlice(i * 256L, 256), 10 + i);
                    senders.get(i).postSend(new SendRequest(1).id(i).opcode(SendOpcode.SEND).signaled(true)
                            .sge(mr, i * 256L, 256));
                }
                WorkCompletions wc = new WorkCompletions(16);
                Set<Integer> qpns = new HashSet<>();
                int sends = 0;
                int recvs = 0;
                long deadline = System.nanoTime() + 10_000_000_000L;
                while ((sends < 4 || recvs < 4) && System.nanoTime() < deadline) {
                    int n = cq.poll(wc);
                    for (int i = 0; i < n; i++) {
                        assertEquals(WcStatus.SUCCESS, wc.status(i), () -> wc.toString());
                        if (wc.opcode(0) == WcOpcode.SEND && wc.opcode(i) == WcOpcode.SEND) {
                            sends++;
                        } else if (wc.opcode(i) == WcOpcode.RECV) {
                            recvs++;
                            qpns.add(wc.qpNumber(i));
                            int buffer = (int) (wc.wrId(i) - 1000);
                            MemorySegment got = mr.segment().asSlice(32768 + buffer * 256L, 256);
                            int sender = -1;
                            for (int k = 0; k < 4; k++) {
                                if (receivers.get(k).qpNumber() == wc.qpNumber(i)) {
                                    sender = k;
                                }
                            }
                            assertTrue(sender >= 0, "receive on a queue pair of the SRQ");
                            assertSameBytes(mr.segment().asSlice(sender * 256L, 256), got);
                        } else {
                            sends++;
                        }
                    }
                }
                assertEquals(4, recvs);
                assertEquals(4, qpns.size(), "each of the 4 queue pairs received from the one SRQ");
                assertEquals(64, srq.query().maxWr() >= 64 ? 64 : srq.query().maxWr());
            } finally {
                for (QueuePair q : senders) {
                    q.close();
                }
                for (QueuePair q : receivers) {
                    q.close();
                }
            }
        }
    }

    @Test
    void srqLimitEvent(TestDevice dev) throws Exception {
        try (Context ctx = dev.open();
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             CompletionQueue cq = ctx.createCompletionQueue(64);
             SharedReceiveQueue srq = pd.createSharedReceiveQueue(16, 1);
             MemoryRegion mr = pd.allocateAndRegister(8192);
             QueuePair r = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq).sharedReceiveQueue(srq));
             QueuePair s = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq))) {
            ConnectOptions how = ConnectOptions.port(dev.port()).gidIndex(dev.gidIndex());
            r.connect(s.localEndpoint(how), how);
            s.connect(r.localEndpoint(how), how);
            for (int i = 0; i < 4; i++) {
                srq.postReceive(new ReceiveRequest(1).id(i).sge(mr, 4096 + i * 64L, 64));
            }
            srq.arm(3);
            assertEquals(3, srq.query().limit());
            assertEquals(Optional.empty(), ctx.nextAsyncEvent(Duration.ofMillis(200)), "no event while above the limit");
            // Two sends take the SRQ from 4 to 2 receives: below the limit of 3.
            for (int i = 0; i < 2; i++) {
                s.postSend(new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(mr, 0, 64));
            }
            Optional<AsyncEvent> ev = ctx.nextAsyncEvent(Duration.ofSeconds(10));
            assertTrue(ev.isPresent(), "SRQ limit event");
            assertEquals(AsyncEventType.SRQ_LIMIT_REACHED, ev.get().type());
            assertEquals(srq, ev.get().sharedReceiveQueue());
            assertEquals(0, srq.query().limit(), "the limit disarms once it fires");
        }
    }

    @Test
    void drainingTheSendQueueRaisesAnEventForTheQueuePair(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            p.a.postSend(new SendRequest(1).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(p.mrA, 0, 64)
                    .rdma(p.mrB.address(), p.mrB.rkey()));
            p.expectOne(p.cqA, WcOpcode.RDMA_WRITE);
            p.a.modify(new QpAttributes().state(QpState.SQD).sqDrainedNotify(true));
            Optional<AsyncEvent> ev = p.ctx.nextAsyncEvent(Duration.ofSeconds(10));
            assertTrue(ev.isPresent(), "SQ drained event");
            assertEquals(AsyncEventType.SQ_DRAINED, ev.get().type());
            assertEquals(p.a, ev.get().queuePair(), "the event names the Java queue pair");
        }
    }

    @Test
    void flushIntoATooSmallQueueReportsCqError(TestDevice dev) throws Exception {
        try (Context ctx = dev.open();
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             CompletionQueue tiny = ctx.createCompletionQueue(1);
             MemoryRegion mr = pd.allocateAndRegister(8192);
             QueuePair qp = pd.createQueuePair(new QpInitAttributes(QpType.RC, tiny, tiny).maxRecvWr(64))) {
            qp.toInit(ConnectOptions.port(dev.port()));
            int n = tiny.capacity() + 4;
            for (int i = 0; i < n; i++) {
                qp.postReceive(new ReceiveRequest(1).id(i).sge(mr, i * 64L, 64));
            }
            qp.toError(); // n flushed completions into a queue of capacity() entries: it overflows
            Optional<AsyncEvent> ev = ctx.nextAsyncEvent(Duration.ofSeconds(10));
            assertTrue(ev.isPresent(), "CQ overflow event");
            assertEquals(AsyncEventType.CQ_ERR, ev.get().type());
            assertEquals(tiny, ev.get().completionQueue());
            WorkCompletions wc = new WorkCompletions(n);
            int got = tiny.poll(wc);
            assertTrue(got >= 1 && got <= tiny.capacity(), "kept " + got + " of " + n);
            assertEquals(WcStatus.WR_FLUSH_ERR, wc.status(0));
        }
    }
}
