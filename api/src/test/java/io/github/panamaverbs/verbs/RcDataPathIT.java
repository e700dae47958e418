package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Every RC opcode between two connected queue pairs on a real device, bytes checked. */
@RequiresRdma
class RcDataPathIT {

    private static void fillRandom(MemorySegment s, long seed) {
        Random r = new Random(seed);
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(JAVA_BYTE, i, (byte) r.nextInt());
        }
    }

    private static void assertSameBytes(MemorySegment expected, MemorySegment actual) {
        assertEquals(expected.byteSize(), actual.byteSize());
        long at = expected.mismatch(actual);
        assertEquals(-1L, at, () -> "bytes differ at offset " + at);
    }

    @Test
    void sendAndReceive(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            MemorySegment src = p.mrA.segment().asSlice(0, 4096);
            fillRandom(src, 1);
            p.b.postReceive(new ReceiveRequest(1).id(11).sge(p.mrB, 8192, 4096));
            p.a.postSend(new SendRequest(1).id(22).opcode(SendOpcode.SEND).signaled(true).sge(p.mrA, 0, 4096));
            WorkCompletions s = p.expectOne(p.cqA, WcOpcode.SEND);
            assertEquals(22, s.wrId(0));
            WorkCompletions r = p.expectOne(p.cqB, WcOpcode.RECV);
            assertEquals(11, r.wrId(0));
            assertEquals(4096, r.byteLength(0));
            assertEquals(p.b.qpNumber(), r.qpNumber(0));
            assertTrue(!r.hasImmediate(0));
            assertSameBytes(src, p.mrB.segment().asSlice(8192, 4096));
        }
    }

    @Test
    void sendWithImmediate(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            fillRandom(p.mrA.segment().asSlice(0, 100), 2);
            p.b.postReceive(new ReceiveRequest(1).id(1).sge(p.mrB, 0, 100));
            p.a.postSend(new SendRequest(1).opcode(SendOpcode.SEND_WITH_IMM).immediate(0xCAFEBABE).signaled(true)
                    .sge(p.mrA, 0, 100));
            p.expectOne(p.cqA, WcOpcode.SEND);
            WorkCompletions r = p.expectOne(p.cqB, WcOpcode.RECV);
            assertTrue(r.hasImmediate(0));
            assertEquals(0xCAFEBABE, r.immediate(0));
            assertEquals(100, r.byteLength(0));
            assertSameBytes(p.mrA.segment().asSlice(0, 100), p.mrB.segment().asSlice(0, 100));
        }
    }

    @Test
    void rdmaWrite(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            MemorySegment src = p.mrA.segment().asSlice(100, 5000);
            fillRandom(src, 3);
            p.a.postSend(new SendRequest(1).id(5).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(p.mrA, 100, 5000)
                    .rdma(p.mrB.address() + 300, p.mrB.rkey()));
            assertEquals(5, p.expectOne(p.cqA, WcOpcode.RDMA_WRITE).wrId(0));
            assertSameBytes(src, p.mrB.segment().asSlice(300, 5000));
            assertEquals(0, p.mrB.segment().get(JAVA_BYTE, 299));
            assertEquals(0, p.mrB.segment().get(JAVA_BYTE, 5300));
        }
    }

    @Test
    void rdmaWriteWithImmediate(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            fillRandom(p.mrA.segment().asSlice(0, 64), 4);
            p.b.postReceive(new ReceiveRequest(1).id(9).sge(p.mrB, 0, 1)); // consumed, nothing written into it
            p.a.postSend(new SendRequest(1).opcode(SendOpcode.RDMA_WRITE_WITH_IMM).immediate(42).signaled(true)
                    .sge(p.mrA, 0, 64).rdma(p.mrB.address() + 1024, p.mrB.rkey()));
            p.expectOne(p.cqA, WcOpcode.RDMA_WRITE);
            WorkCompletions r = p.expectOne(p.cqB, WcOpcode.RECV_RDMA_WITH_IMM);
            assertEquals(9, r.wrId(0));
            assertEquals(42, r.immediate(0));
            assertTrue(r.hasImmediate(0));
            assertSameBytes(p.mrA.segment().asSlice(0, 64), p.mrB.segment().asSlice(1024, 64));
        }
    }

    @Test
    void rdmaRead(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            MemorySegment remote = p.mrB.segment().asSlice(4096, 777);
            fillRandom(remote, 5);
            p.a.postSend(new SendRequest(1).opcode(SendOpcode.RDMA_READ).signaled(true).sge(p.mrA, 10, 777)
                    .rdma(p.mrB.address() + 4096, p.mrB.rkey()));
            WorkCompletions c = p.expectOne(p.cqA, WcOpcode.RDMA_READ);
            assertEquals(777, c.byteLength(0));
            assertSameBytes(remote, p.mrA.segment().asSlice(10, 777));
        }
    }

    @Test
    void atomics(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            MemorySegment word = p.mrB.segment().asSlice(64, 8);
            word.set(JAVA_LONG, 0, 1000L);
            SendRequest faa = new SendRequest(1).opcode(SendOpcode.ATOMIC_FETCH_AND_ADD).signaled(true)
                    .sge(p.mrA, 0, 8).atomic(p.mrB.address() + 64, p.mrB.rkey(), 234, 0);
            p.a.postSend(faa);
            p.expectOne(p.cqA, WcOpcode.FETCH_ADD);
            assertEquals(1000L, p.mrA.segment().get(JAVA_LONG, 0), "fetch-and-add returns the old value");
            assertEquals(1234L, word.get(JAVA_LONG, 0));

            SendRequest cas = new SendRequest(1).opcode(SendOpcode.ATOMIC_CMP_AND_SWP).signaled(true)
                    .sge(p.mrA, 8, 8).atomic(p.mrB.address() + 64, p.mrB.rkey(), 1234, 0x7777);
            p.a.postSend(cas);
            p.expectOne(p.cqA, WcOpcode.COMP_SWAP);
            assertEquals(1234L, p.mrA.segment().get(JAVA_LONG, 8));
            assertEquals(0x7777L, word.get(JAVA_LONG, 0), "swapped: compare matched");

            cas.atomic(p.mrB.address() + 64, p.mrB.rkey(), 1, 99);
            p.a.postSend(cas);
            p.expectOne(p.cqA, WcOpcode.COMP_SWAP);
            assertEquals(0x7777L, p.mrA.segment().get(JAVA_LONG, 8));
            assertEquals(0x7777L, word.get(JAVA_LONG, 0), "unchanged: compare did not match");
        }
    }

    @Test
    void inlineSend(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC, c -> c.maxInlineData(64));
             Arena arena = Arena.ofConfined()) {
            assertTrue(p.a.capabilities().maxInlineData() >= 64);
            MemorySegment data = arena.allocate(48);
            fillRandom(data, 6);
            byte[] expected = data.toArray(JAVA_BYTE);
            p.b.postReceive(new ReceiveRequest(1).sge(p.mrB, 0, 64));
            SendRequest send = new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).inlineData(data);
            p.a.postSend(send);
            data.fill((byte) 0); // inline: the buffer may be reused as soon as post returns
            p.expectOne(p.cqA, WcOpcode.SEND);
            WorkCompletions r = p.expectOne(p.cqB, WcOpcode.RECV);
            assertEquals(48, r.byteLength(0));
            assertArrayEquals(expected, p.mrB.segment().asSlice(0, 48).toArray(JAVA_BYTE));
        }
    }

    @Test
    void oneMebibyteOverFourSges(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC, c -> c.maxSendSge(4).maxRecvSge(4))) {
            fillRandom(p.mrA.segment(), 7);
            int quarter = Pair.BUFFER / 4;
            // Gather the four quarters in reverse order, scatter them back in order on the receiver.
            SendRequest send = new SendRequest(4).opcode(SendOpcode.SEND).signaled(true);
            for (int i = 3; i >= 0; i--) {
                send.addSge(p.mrA, (long) i * quarter, quarter);
            }
            ReceiveRequest recv = new ReceiveRequest(4);
            for (int i = 0; i < 4; i++) {
                recv.addSge(p.mrB, (long) i * quarter, quarter);
            }
            p.b.postReceive(recv);
            p.a.postSend(send);
            p.expectOne(p.cqA, WcOpcode.SEND);
            assertEquals(Pair.BUFFER, p.expectOne(p.cqB, WcOpcode.RECV).byteLength(0));
            for (int i = 0; i < 4; i++) {
                assertSameBytes(p.mrA.segment().asSlice((long) (3 - i) * quarter, quarter),
                        p.mrB.segment().asSlice((long) i * quarter, quarter));
            }
        }
    }

    @Test
    void chainOf32WritesInOnePost(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            fillRandom(p.mrA.segment().asSlice(0, 32 * 256), 8);
            SendRequest head = null;
            SendRequest tail = null;
            for (int i = 0; i < 32; i++) {
                SendRequest w = new SendRequest(1).id(i).opcode(SendOpcode.RDMA_WRITE).signaled(true)
                        .sge(p.mrA, i * 256L, 256).rdma(p.mrB.address() + i * 512L, p.mrB.rkey());
                if (head == null) {
                    head = w;
                } else {
                    tail.next(w);
                }
                tail = w;
            }
            p.a.postSend(head);
            WorkCompletions c = p.await(p.cqA, 32);
            for (int i = 0; i < 32; i++) {
                assertEquals(WcStatus.SUCCESS, c.status(i));
                assertEquals(i, c.wrId(i), "completions in posting order");
                assertSameBytes(p.mrA.segment().asSlice(i * 256L, 256), p.mrB.segment().asSlice(i * 512L, 256));
            }
        }
    }

    @Test
    void completionChannelWakesTheWaiter(TestDevice dev) throws Exception {
        try (Context ctx = dev.open();
             CompletionChannel channel = ctx.createCompletionChannel();
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             CompletionQueue sendCq = ctx.createCompletionQueue(16);
             CompletionQueue recvCq = ctx.createCompletionQueue(16, channel, 0);
             QueuePair a = pd.createQueuePair(new QpInitAttributes(QpType.RC, sendCq, sendCq));
             QueuePair b = pd.createQueuePair(new QpInitAttributes(QpType.RC, recvCq, recvCq));
             MemoryRegion mr = pd.allocateAndRegister(4096)) {
            ConnectOptions how = ConnectOptions.port(dev.port()).gidIndex(dev.gidIndex());
            a.connect(b.localEndpoint(how), how);
            b.connect(a.localEndpoint(how), how);
            WorkCompletions wc = new WorkCompletions(4);

            recvCq.requestNotification(false);
            assertEquals(Optional.empty(), channel.awaitEvent(Duration.ofMillis(200)), "no event before a completion");

            mr.segment().asSlice(0, 16).fill((byte) 0x5a);
            b.postReceive(new ReceiveRequest(1).id(3).sge(mr, 2048, 16));
            a.postSend(new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(mr, 0, 16));
            Optional<CompletionQueue> woke = channel.awaitEvent(Duration.ofSeconds(10));
            assertTrue(woke.isPresent(), "the channel reported the completion");
            assertEquals(recvCq, woke.get());
            recvCq.requestNotification(false);
            assertEquals(1, recvCq.poll(wc));
            assertEquals(WcStatus.SUCCESS, wc.status(0));
            assertEquals(3, wc.wrId(0));
            assertSameBytes(mr.segment().asSlice(0, 16), mr.segment().asSlice(2048, 16));
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (sendCq.poll(wc) == 0 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertEquals(WcStatus.SUCCESS, wc.status(0));
        }
    }

    @Test
    void queuePairInErrorFlushesThenRecovers(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            for (int i = 0; i < 3; i++) {
                p.b.postReceive(new ReceiveRequest(1).id(100 + i).sge(p.mrB, i * 64L, 64));
            }
            p.b.toError();
            WorkCompletions c = p.await(p.cqB, 3);
            for (int i = 0; i < 3; i++) {
                assertEquals(WcStatus.WR_FLUSH_ERR, c.status(i));
                assertEquals(100 + i, c.wrId(i));
            }
            assertEquals(QpState.ERR, p.b.query().state());
            // Recovery: back to RESET, connect again, and traffic flows.
            p.b.reset();
            assertEquals(QpState.RESET, p.b.query().state());
            p.a.reset();
            p.a.connect(p.b.localEndpoint(p.how), p.how);
            p.b.connect(p.a.localEndpoint(p.how), p.how);
            p.mrA.segment().asSlice(0, 32).fill((byte) 7);
            p.b.postReceive(new ReceiveRequest(1).sge(p.mrB, 4096, 32));
            p.a.postSend(new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(p.mrA, 0, 32));
            p.expectOne(p.cqA, WcOpcode.SEND);
            p.expectOne(p.cqB, WcOpcode.RECV);
            assertSameBytes(p.mrA.segment().asSlice(0, 32), p.mrB.segment().asSlice(4096, 32));
        }
    }

    @Test
    void remoteAccessErrorIsACompletionNotAnException(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            p.a.postSend(new SendRequest(1).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(p.mrA, 0, 8)
                    .rdma(p.mrB.address(), p.mrB.rkey() ^ 0x100)); // a wrong rkey
            WorkCompletions c = p.await(p.cqA, 1);
            assertEquals(WcStatus.REM_ACCESS_ERR, c.status(0));
            assertTrue(c.status(0).description().contains("access"), c.status(0).description());
        }
    }
}
