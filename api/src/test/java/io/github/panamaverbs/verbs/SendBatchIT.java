package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The {@code ibv_wr_*} post API ({@link SendBatch}) on the device: every RC operation in one batch,
 * bytes and completions checked; memory windows bound and invalidated through it; UD with its
 * destination; and the orders Java refuses before the provider sees them.
 */
@RequiresRdma
@org.junit.jupiter.api.extension.ExtendWith(io.github.panamaverbs.verbs.testing.AllowType2Windows.class)
class SendBatchIT {

    private static final Set<SendOpcode> RC_OPS = EnumSet.of(SendOpcode.SEND, SendOpcode.SEND_WITH_IMM,
            SendOpcode.SEND_WITH_INV, SendOpcode.RDMA_WRITE, SendOpcode.RDMA_WRITE_WITH_IMM, SendOpcode.RDMA_READ,
            SendOpcode.ATOMIC_CMP_AND_SWP, SendOpcode.ATOMIC_FETCH_AND_ADD, SendOpcode.LOCAL_INV, SendOpcode.BIND_MW);
    private static final int QKEY = 0x22222222;

    private static void fill(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(JAVA_BYTE, i, (byte) (i * 11 + seed));
        }
    }

    private static void same(MemorySegment expected, MemorySegment actual, String what) {
        assertEquals(-1L, expected.mismatch(actual), () -> what + ": expected " + head(expected) + ", got " + head(actual));
    }

    private static String head(MemorySegment s) {
        return java.util.HexFormat.ofDelimiter(" ").formatHex(s.asSlice(0, Math.min(12, s.byteSize())).toArray(JAVA_BYTE));
    }

    private static Pair rc(TestDevice dev) {
        return new Pair(dev, QpType.RC, c -> c.sendOps(RC_OPS).maxSendSge(2).maxInlineData(64));
    }

    @Test
    void everyRcOperationInOneBatch(TestDevice dev) throws Exception {
        try (Pair p = rc(dev); Arena arena = Arena.ofConfined()) {
            MemorySegment a = p.mrA.segment();
            MemorySegment b = p.mrB.segment();
            fill(a.asSlice(0, 4096), 1);               // RDMA write source
            MemorySegment inline = arena.allocate(48);
            fill(inline, 2);                            // write with immediate, inline
            fill(a.asSlice(8192, 100), 3);              // send, first entry
            fill(a.asSlice(12288, 50), 4);              // send, second entry
            fill(b.asSlice(65536, 2048), 5);            // what A reads
            b.set(JAVA_LONG, 131072, 40);               // compare-and-swap target
            b.set(JAVA_LONG, 131080, 1000);             // fetch-and-add target
            for (int i = 0; i < 3; i++) {
                p.b.postReceive(new ReceiveRequest(1).id(100 + i).sge(p.mrB, 200_000 + i * 1024L, 1024));
            }
            SendBatch batch = p.a.sendBatch();
            assertEquals(RC_OPS, batch.operations());
            long base = p.mrB.address();
            int rkey = p.mrB.rkey();
            batch.start();
            batch.id(1).signaled(true).rdmaWrite(rkey, base + 1000).sge(p.mrA, 0, 4096);
            batch.id(2).flags(EnumSet.of(SendFlag.SIGNALED, SendFlag.INLINE))
                    .rdmaWriteWithImmediate(rkey, base + 20_000, 0xABCD).inlineData(inline);
            // Two entries of one length: Soft-RoCE before rdma-core 64 miscounts lists of different lengths.
            IllegalStateException stillInline = assertThrows(IllegalStateException.class,
                    () -> batch.id(3).send().sge(p.mrA, 8192, 50), "INLINE kept from request 2");
            assertTrue(stillInline.getMessage().contains("INLINE"), stillInline.getMessage());
            batch.abort(); // the send above was written: start again
            batch.start(); // the flags are still request 2's: set them again
            batch.id(1).flags(EnumSet.of(SendFlag.SIGNALED)).rdmaWrite(rkey, base + 1000).sge(p.mrA, 0, 4096);
            batch.id(2).flags(EnumSet.of(SendFlag.SIGNALED, SendFlag.INLINE))
                    .rdmaWriteWithImmediate(rkey, base + 20_000, 0xABCD).inlineData(inline);
            batch.id(3).flags(EnumSet.of(SendFlag.SIGNALED)).send()
                    .sges(2, new MemoryRegion[] {p.mrA, p.mrA}, new long[] {8192, 12288}, new int[] {50, 50});
            batch.id(4).signaled(true).sendWithImmediate(77).sge(p.mrA, 8192, 10);
            batch.id(5).signaled(true).rdmaRead(rkey, base + 65536).sge(p.mrA, 300_000, 2048);
            batch.id(6).signaled(true).compareAndSwap(rkey, base + 131072, 40, 41).sge(p.mrA, 400_000, 8);
            batch.id(7).signaled(true).fetchAndAdd(rkey, base + 131080, 5).sge(p.mrA, 400_008, 8);
            assertEquals(7, batch.complete());

            WorkCompletions sent = p.await(p.cqA, 7);
            WcOpcode[] expected = {WcOpcode.RDMA_WRITE, WcOpcode.RDMA_WRITE, WcOpcode.SEND, WcOpcode.SEND,
                    WcOpcode.RDMA_READ, WcOpcode.COMP_SWAP, WcOpcode.FETCH_ADD};
            for (int i = 0; i < 7; i++) {
                assertEquals(WcStatus.SUCCESS, sent.status(i), "request " + (i + 1));
                assertEquals(i + 1, sent.wrId(i));
                assertEquals(expected[i], sent.opcode(i));
            }
            WorkCompletions got = p.await(p.cqB, 3);
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, got.opcode(0));
            assertEquals(0xABCD, got.immediate(0));
            assertEquals(WcOpcode.RECV, got.opcode(1));
            assertEquals(100, got.byteLength(1));
            assertEquals(WcOpcode.RECV, got.opcode(2));
            assertEquals(77, got.immediate(2));

            same(a.asSlice(0, 4096), b.asSlice(1000, 4096), "RDMA write");
            same(inline, b.asSlice(20_000, 48), "inline write with immediate");
            same(a.asSlice(8192, 50), b.asSlice(200_000 + 1024, 50), "send, first entry");
            same(a.asSlice(12288, 50), b.asSlice(200_000 + 1024 + 50, 50), "send, second entry");
            same(a.asSlice(8192, 10), b.asSlice(200_000 + 2048, 10), "send with immediate");
            same(b.asSlice(65536, 2048), a.asSlice(300_000, 2048), "RDMA read");
            assertEquals(40, a.get(JAVA_LONG, 400_000));
            assertEquals(41, b.get(JAVA_LONG, 131072));
            assertEquals(1000, a.get(JAVA_LONG, 400_008));
            assertEquals(1005, b.get(JAVA_LONG, 131080));
        }
    }

    @Test
    void bindsAndInvalidatesAMemoryWindow(TestDevice dev) throws Exception {
        try (Pair p = rc(dev)) {
            MemoryRegion region = p.keep(p.pd.allocateAndRegister(1 << 16, AccessFlag.REMOTE_WRITE, AccessFlag.MW_BIND));
            MemoryWindow window = p.keep(p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_2));
            int rkey = window.nextRkey();
            SendBatch own = p.b.sendBatch();
            own.start().id(9).signaled(true).bindMemoryWindow(window, rkey, region, 4096, 4096,
                    Set.of(AccessFlag.REMOTE_WRITE));
            assertEquals(1, own.complete());
            assertEquals(9, p.expectOne(p.cqB, WcOpcode.BIND_MW).wrId(0));
            fill(p.mrA.segment().asSlice(0, 64), 6);
            p.a.sendBatch().start().id(10).signaled(true).rdmaWrite(rkey, region.address() + 4096).sge(p.mrA, 0, 64)
                    .complete();
            assertEquals(WcStatus.SUCCESS, p.await(p.cqA, 1).status(0));
            same(p.mrA.segment().asSlice(0, 64), region.segment().asSlice(4096, 64), "write through the window");

            own.start().id(11).signaled(true).localInvalidate(rkey);
            own.complete();
            assertEquals(11, p.expectOne(p.cqB, WcOpcode.LOCAL_INV).wrId(0));
            byte[] before = region.segment().toArray(JAVA_BYTE);
            fill(p.mrA.segment().asSlice(0, 64), 7);
            p.a.sendBatch().start().id(12).signaled(true).rdmaWrite(rkey, region.address() + 4096).sge(p.mrA, 0, 64)
                    .complete();
            assertEquals(WcStatus.REM_ACCESS_ERR, p.await(p.cqA, 1).status(0));
            assertEquals(-1, MemorySegment.ofArray(before).mismatch(region.segment()), "invalidated: nothing written");
        }
    }

    @Test
    void udRequestsCarryTheirDestination(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.UD, c -> c.sendOps(Set.of(SendOpcode.SEND, SendOpcode.SEND_WITH_IMM)))) {
            p.a.activateDatagram(p.how, QKEY);
            p.b.activateDatagram(p.how, QKEY);
            Gid gid = p.ctx.queryGid(dev.port(), dev.gidIndex());
            AddressHandle toB = p.keep(p.pd.createAddressHandle(AddressVector.global(dev.port(), gid, dev.gidIndex(), 64)));
            fill(p.mrA.segment().asSlice(0, 300), 8);
            p.b.postReceive(new ReceiveRequest(1).id(1).sge(p.mrB, 0, 40 + 300));
            SendBatch batch = p.a.sendBatch().start();
            batch.id(5).signaled(true).sendWithImmediate(99).sge(p.mrA, 0, 300);
            IllegalStateException e = assertThrows(IllegalStateException.class, batch::complete);
            assertTrue(e.getMessage().contains("no destination"), e.getMessage());
            batch.start().id(5).signaled(true).sendWithImmediate(99).sge(p.mrA, 0, 300)
                    .udAddress(toB, p.b.qpNumber(), QKEY);
            assertThrows(IllegalStateException.class, () -> batch.send().send(), "a second request before the first's destination");
            batch.abort();
            batch.start().id(5).signaled(true).sendWithImmediate(99).sge(p.mrA, 0, 300)
                    .udAddress(toB, p.b.qpNumber(), QKEY).complete();
            assertEquals(5, p.expectOne(p.cqA, WcOpcode.SEND).wrId(0));
            WorkCompletions r = p.expectOne(p.cqB, WcOpcode.RECV);
            assertEquals(99, r.immediate(0));
            assertEquals(p.a.qpNumber(), r.sourceQp(0));
            same(p.mrA.segment().asSlice(0, 300), p.mrB.segment().asSlice(40, 300), "UD send");
        }
    }

    @Test
    void javaRefusesWhatTheProviderWouldGetWrong(TestDevice dev) throws Exception {
        try (Pair p = rc(dev); Pair classic = new Pair(dev, QpType.RC); Arena arena = Arena.ofConfined()) {
            assertThrows(IllegalStateException.class, classic.a::sendBatch);
            SendBatch batch = p.a.sendBatch();
            assertThrows(IllegalStateException.class, batch::complete, "complete before start");
            assertThrows(IllegalStateException.class, () -> batch.id(1), "id before start");
            batch.start();
            assertThrows(IllegalStateException.class, batch::start, "start twice");
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> batch.sge(p.mrA, 0, 8));
            assertTrue(e.getMessage().contains("needs a request"), e.getMessage());
            batch.send();
            IllegalStateException noFlag = assertThrows(IllegalStateException.class, () -> batch.inlineData(arena.allocate(8)));
            assertTrue(noFlag.getMessage().contains("INLINE"), noFlag.getMessage());
            int maxInline = p.a.capabilities().maxInlineData();
            assertThrows(IllegalArgumentException.class, () -> batch.inlineData(arena.allocate(maxInline + 1)),
                    "over maxInlineData");
            assertThrows(IllegalArgumentException.class, () -> batch.inlineData(MemorySegment.ofArray(new byte[8])));
            assertThrows(IndexOutOfBoundsException.class, () -> batch.sge(p.mrA, Pair.BUFFER - 4, 8));
            if (dev.name().startsWith("rxe") && io.github.panamaverbs.internal.Quirks.rdmaCoreRelease() < 64) {
                UnsupportedOperationException u = assertThrows(UnsupportedOperationException.class, () -> batch.sges(2,
                        new MemoryRegion[] {p.mrA, p.mrA}, new long[] {0, 100}, new int[] {100, 50}));
                assertTrue(u.getMessage().contains("wr_set_sge_list"), u.getMessage());
            }
            int over = p.a.capabilities().maxSendSge() + 1;
            assertThrows(IllegalArgumentException.class,
                    () -> batch.sges(over, new MemoryRegion[over], new long[over], new int[over]), "more entries than maxSendSge");
            assertThrows(IllegalArgumentException.class, () -> batch.fetchAndAdd(p.mrB.rkey(), p.mrB.address() + 4, 1));
            assertThrows(NullPointerException.class, () -> batch.udAddress(null, 0, 0));
            batch.abort();
            Thread.sleep(300);
            assertEquals(0, p.cqA.poll(p.wc), "an aborted batch posts nothing");
            assertThrows(IllegalArgumentException.class, () -> new QpInitAttributes(QpType.RC, p.cqA, p.cqA)
                    .sendOps(Set.of(SendOpcode.TSO)));
            assertThrows(IllegalArgumentException.class, () -> new QpInitAttributes(QpType.RC, p.cqA, p.cqA).sendOps(Set.of()));
        }
        // An operation the queue pair was not created with, and a batch larger than the send queue.
        try (Pair p = new Pair(dev, QpType.RC, c -> c.sendOps(Set.of(SendOpcode.RDMA_WRITE)).maxSendWr(4))) {
            SendBatch batch = p.a.sendBatch().start();
            IllegalStateException e = assertThrows(IllegalStateException.class, batch::send);
            assertTrue(e.getMessage().contains("not among the send operations"), e.getMessage());
            int depth = p.a.capabilities().maxSendWr();
            int n = 2 * depth + 2;
            for (int i = 0; i < n; i++) {
                batch.id(i).rdmaWrite(p.mrB.rkey(), p.mrB.address()).sge(p.mrA, 0, 8);
            }
            VerbsException full = assertThrows(VerbsException.class, batch::complete);
            assertEquals(28, full.errno(), full.getMessage()); // ENOSPC: rxe's "send queue full"
            assertTrue(full.getMessage().contains(n + " requests of the batch"), full.getMessage());
            Thread.sleep(300);
            assertEquals(0, p.cqA.poll(p.wc), "a refused batch posts nothing");
        }
    }
}
