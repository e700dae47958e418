package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Memory windows on the device: type 1 bound with ibv_bind_mw, type 2 bound by a work request, the
 * window's rkey used by the peer inside the window and refused outside it (status asserted, bytes
 * untouched), revoked by a rebind, a close, LOCAL_INV and the peer's SEND_WITH_INV. On SoftiWARP,
 * which has no windows, the exact error. Queue pair B owns the window; A is the peer that uses it.
 */
@RequiresRdma
@org.junit.jupiter.api.extension.ExtendWith(io.github.panamaverbs.verbs.testing.AllowType2Windows.class)
class MemoryWindowIT {

    private static final long AT = 8192;
    private static final long LENGTH = 8192;
    private static final Set<AccessFlag> RW = EnumSet.of(AccessFlag.REMOTE_READ, AccessFlag.REMOTE_WRITE);

    /** B's memory behind the window: 64 KiB, with MW_BIND, filled with a pattern. */
    private static MemoryRegion exposed(Pair p) {
        MemoryRegion r = p.keep(p.pd.allocateAndRegister(1 << 16, AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_WRITE,
                AccessFlag.REMOTE_READ, AccessFlag.MW_BIND));
        fill(r.segment(), 9);
        return r;
    }

    private static void fill(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(JAVA_BYTE, i, (byte) (i * 13 + seed));
        }
    }

    /**
     * A RDMA-writes {@code length} fresh bytes to {@code offset} of {@code region} (B's) with {@code rkey};
     * returns the status, and checks that B's bytes are what they were with, on success only, the
     * written range replaced.
     */
    private static WcStatus write(Pair p, MemoryRegion region, long offset, int length, int rkey) {
        byte[] before = region.segment().toArray(JAVA_BYTE);
        MemorySegment src = p.mrA.segment().asSlice(0, length);
        fill(src, (int) System.nanoTime());
        p.a.postSend(new SendRequest(1).id(1).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(p.mrA, 0, length)
                .rdma(region.address() + offset, rkey));
        WcStatus status = p.await(p.cqA, 1).status(0);
        if (status == WcStatus.SUCCESS) {
            MemorySegment.copy(src, JAVA_BYTE, 0, before, (int) offset, length);
        }
        assertArrayEquals(before, region.segment().toArray(JAVA_BYTE), "B's memory after a " + status + " write");
        return status;
    }

    /** A RDMA-reads {@code length} bytes at {@code offset} of {@code region} with {@code rkey}; checks them on success. */
    private static WcStatus read(Pair p, MemoryRegion region, long offset, int length, int rkey) {
        MemorySegment dst = p.mrA.segment().asSlice(1 << 16, length);
        dst.fill((byte) 0x5a);
        p.a.postSend(new SendRequest(1).id(2).opcode(SendOpcode.RDMA_READ).signaled(true).sge(p.mrA, 1 << 16, length)
                .rdma(region.address() + offset, rkey));
        WcStatus status = p.await(p.cqA, 1).status(0);
        if (status == WcStatus.SUCCESS) {
            assertEquals(-1, dst.mismatch(region.segment().asSlice(offset, length)), "bytes read");
        }
        return status;
    }

    private static void expect(Pair p, CompletionQueue cq, WcOpcode opcode, long wrId) {
        WorkCompletions c = p.expectOne(cq, opcode);
        assertEquals(wrId, c.wrId(0));
    }

    @Test
    void type1WindowGrantsItsRangeAndNothingElse(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            MemoryRegion region = exposed(p);
            MemoryWindow window = p.keep(p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_1));
            assertEquals(MemoryWindow.Type.TYPE_1, window.type());
            int before = window.rkey();
            int rkey = p.b.bindMemoryWindow(window, region, AT, LENGTH, RW, 41, true);
            expect(p, p.cqB, WcOpcode.BIND_MW, 41);
            assertEquals(rkey, window.rkey());
            assertEquals(MemoryWindow.incrementKey(before), rkey);
            assertNotEquals(region.rkey(), rkey);

            assertEquals(WcStatus.SUCCESS, write(p, region, AT, 4096, rkey));
            assertEquals(WcStatus.SUCCESS, write(p, region, AT + LENGTH - 100, 100, rkey));
            assertEquals(WcStatus.SUCCESS, read(p, region, AT + 1000, 3000, rkey));
            // Past the end of the window but inside the region: see outsideTheWindow.
            assertEquals(outsideTheWindow(dev), write(p, region, AT + LENGTH - 100, 101, rkey));
            // Past the end of the region: refused, nothing written (the queue pair is in ERR afterwards).
            assertEquals(WcStatus.REM_ACCESS_ERR, write(p, region, (1 << 16) - 100, 101, rkey));
        }
    }

    /**
     * What a request outside the window but inside its region completes with. Soft-RoCE (rxe, Linux
     * 6.1) checks the range of a window's requests against the region, not the window (the
     * responder's check_rkey looks the window up, then checks the region's range), so there it lands;
     * a device that enforces the window refuses it. This asserts the device's exact behaviour.
     */
    private static WcStatus outsideTheWindow(TestDevice dev) {
        return dev.name().startsWith("rxe") ? WcStatus.SUCCESS : WcStatus.REM_ACCESS_ERR;
    }

    @Test
    void type1WindowRefusesBeforeItsStartAndRightsItDoesNotGrant(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            MemoryRegion region = exposed(p);
            MemoryWindow window = p.keep(p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_1));
            int rkey = p.b.bindMemoryWindow(window, region, AT, LENGTH, Set.of(AccessFlag.REMOTE_READ), 1, true);
            expect(p, p.cqB, WcOpcode.BIND_MW, 1);
            assertEquals(WcStatus.SUCCESS, read(p, region, AT, 64, rkey));
            assertEquals(WcStatus.REM_ACCESS_ERR, write(p, region, AT, 64, rkey)); // read-only window
        }
        try (Pair p = new Pair(dev, QpType.RC)) {
            MemoryRegion region = exposed(p);
            MemoryWindow window = p.keep(p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_1));
            int rkey = p.b.bindMemoryWindow(window, region, AT, LENGTH, RW, 1, true);
            expect(p, p.cqB, WcOpcode.BIND_MW, 1);
            assertEquals(outsideTheWindow(dev), write(p, region, AT - 1, 64, rkey));
            assertEquals(WcStatus.REM_ACCESS_ERR, write(p, region, -64, 64, rkey)); // before the region
        }
    }

    @Test
    void rebindingOrClosingAType1WindowRevokesItsKey(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            MemoryRegion region = exposed(p);
            MemoryWindow window = p.keep(p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_1));
            int first = p.b.bindMemoryWindow(window, region, AT, LENGTH, RW, 1, true);
            expect(p, p.cqB, WcOpcode.BIND_MW, 1);
            int second = p.b.bindMemoryWindow(window, region, 0, 4096, RW, 2, true);
            expect(p, p.cqB, WcOpcode.BIND_MW, 2);
            assertNotEquals(first, second);
            assertEquals(WcStatus.SUCCESS, write(p, region, 0, 4096, second));
            assertEquals(WcStatus.REM_ACCESS_ERR, write(p, region, AT, 64, first));
        }
        try (Pair p = new Pair(dev, QpType.RC)) {
            MemoryRegion region = exposed(p);
            MemoryWindow window = p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_1);
            int rkey = p.b.bindMemoryWindow(window, region, AT, LENGTH, RW, 1, true);
            expect(p, p.cqB, WcOpcode.BIND_MW, 1);
            assertEquals(WcStatus.SUCCESS, write(p, region, AT, 64, rkey));
            window.close();
            assertEquals(WcStatus.REM_ACCESS_ERR, write(p, region, AT, 64, rkey));
        }
    }

    @Test
    void aRegionWithABoundWindowDoesNotCloseUntilTheWindowDoes(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            MemoryRegion region = p.pd.allocateAndRegister(1 << 16, AccessFlag.REMOTE_WRITE, AccessFlag.MW_BIND);
            MemoryWindow window = p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_1);
            int rkey = p.b.bindMemoryWindow(window, region, AT, LENGTH, Set.of(AccessFlag.REMOTE_WRITE), 1, true);
            expect(p, p.cqB, WcOpcode.BIND_MW, 1);
            VerbsException e = assertThrows(VerbsException.class, region::close);
            assertTrue(e.getMessage().contains("memory window"), e.getMessage());
            assertFalse(region.isClosed());
            assertEquals(WcStatus.SUCCESS, write(p, region, AT, 64, rkey)); // still registered, memory alive
            window.close();
            region.close();
            assertTrue(region.isClosed());
        }
    }

    @Test
    void aBindWithoutMwBindOnTheRegionCompletesWithAnError(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            // Pair's own regions have remote rights but not MW_BIND.
            MemoryWindow window = p.keep(p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_1));
            p.b.bindMemoryWindow(window, p.mrB, 0, 4096, RW, 5, true);
            WorkCompletions c = p.await(p.cqB, 1);
            assertEquals(5, c.wrId(0));
            assertEquals(WcStatus.MW_BIND_ERR, c.status(0));
        }
    }

    /** Binds a type 2 window on B by a work request; returns its new rkey once the bind completed. */
    private static int bindType2(Pair p, MemoryWindow window, MemoryRegion region, Set<AccessFlag> access) {
        int rkey = window.nextRkey();
        p.b.postSend(new SendRequest(1).id(3).signaled(true).bindMemoryWindow(window, rkey, region, AT, LENGTH, access));
        expect(p, p.cqB, WcOpcode.BIND_MW, 3);
        return rkey;
    }

    @Test
    void type2WindowBoundByAWorkRequestAndInvalidatedLocally(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            MemoryRegion region = exposed(p);
            MemoryWindow window = p.keep(p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_2));
            int rkey = bindType2(p, window, region, RW);
            assertEquals(WcStatus.SUCCESS, write(p, region, AT + 8, 4000, rkey));
            assertEquals(WcStatus.SUCCESS, read(p, region, AT, 8192, rkey));
            p.b.postSend(new SendRequest(1).id(4).signaled(true).opcode(SendOpcode.LOCAL_INV).invalidateRkey(rkey));
            expect(p, p.cqB, WcOpcode.LOCAL_INV, 4);
            assertEquals(WcStatus.REM_ACCESS_ERR, write(p, region, AT + 8, 64, rkey));
        }
        try (Pair p = new Pair(dev, QpType.RC)) {
            MemoryRegion region = exposed(p);
            MemoryWindow window = p.keep(p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_2));
            int rkey = bindType2(p, window, region, RW);
            assertEquals(outsideTheWindow(dev), write(p, region, AT + LENGTH, 64, rkey)); // just past it
            assertEquals(WcStatus.REM_ACCESS_ERR, write(p, region, 1 << 16, 64, rkey)); // past the region
        }
    }

    @Test
    void type2WindowInvalidatedByThePeersSendWithInvalidate(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            MemoryRegion region = exposed(p);
            MemoryWindow window = p.keep(p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_2));
            int rkey = bindType2(p, window, region, RW);
            assertEquals(WcStatus.SUCCESS, write(p, region, AT, 64, rkey));
            fill(p.mrA.segment().asSlice(0, 32), 3);
            p.b.postReceive(new ReceiveRequest(1).id(6).sge(p.mrB, 0, 32));
            p.a.postSend(new SendRequest(1).id(7).signaled(true).opcode(SendOpcode.SEND_WITH_INV).invalidateRkey(rkey)
                    .sge(p.mrA, 0, 32));
            expect(p, p.cqA, WcOpcode.SEND, 7);
            WorkCompletions r = p.expectOne(p.cqB, WcOpcode.RECV);
            if (dev.name().startsWith("rxe")) {
                // rxe hands the kernel's wc_flags through unconverted: IB_WC_WITH_INVALIDATE is 1 << 2
                // there, which is IBV_WC_IP_CSUM_OK in libibverbs, and IBV_WC_WITH_INV (1 << 3) stays clear.
                assertEquals(1 << 2, r.flags(0) & (1 << 2 | 1 << 3), "flags 0x" + Integer.toHexString(r.flags(0)));
                assertFalse(r.hasInvalidated(0));
            } else {
                assertTrue(r.hasInvalidated(0), "IBV_WC_WITH_INV: flags 0x" + Integer.toHexString(r.flags(0)));
            }
            assertFalse(r.hasImmediate(0));
            assertEquals(rkey, r.invalidatedRkey(0));
            assertEquals(-1, p.mrA.segment().asSlice(0, 32).mismatch(p.mrB.segment().asSlice(0, 32)));
            assertEquals(WcStatus.REM_ACCESS_ERR, write(p, region, AT, 64, rkey));
        }
    }

    @Test
    void javaRefusesWhatCWouldGetWrong(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC); Arena arena = Arena.ofConfined()) {
            MemoryRegion region = exposed(p);
            MemoryWindow one = p.keep(p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_1));
            MemoryWindow two = p.keep(p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_2));
            SendRequest r = new SendRequest(1);
            assertThrows(IllegalArgumentException.class, () -> p.b.bindMemoryWindow(two, region, 0, 64, RW, 0, true));
            assertThrows(IllegalArgumentException.class, () -> r.bindMemoryWindow(one, 1, region, 0, 64, RW));
            assertThrows(IndexOutOfBoundsException.class, () -> p.b.bindMemoryWindow(one, region, 1 << 16, 1, RW, 0, true));
            assertThrows(IllegalArgumentException.class, () -> p.b.bindMemoryWindow(one, region, 0, 0, RW, 0, true));
            assertThrows(IllegalArgumentException.class,
                    () -> p.b.bindMemoryWindow(one, region, 0, 64, Set.of(AccessFlag.LOCAL_WRITE), 0, true));
            assertThrows(NullPointerException.class, () -> p.b.bindMemoryWindow(one, null, 0, 64, RW, 0, true));
            MemorySegment callers = arena.allocate(1 << 16, 4096);
            MemoryRegion borrowed = p.pd.register(arena, callers, AccessFlag.REMOTE_WRITE, AccessFlag.MW_BIND);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> p.b.bindMemoryWindow(one, borrowed, 0, 64, RW, 0, true));
            assertTrue(e.getMessage().contains("allocateAndRegister"), e.getMessage());
            UnsupportedOperationException u = assertThrows(UnsupportedOperationException.class,
                    () -> r.opcode(SendOpcode.BIND_MW));
            assertTrue(u.getMessage().contains("bindMemoryWindow"), u.getMessage());
            // A bind request whose window was closed before it was posted never reaches the provider.
            MemoryWindow gone = p.pd.allocateMemoryWindow(MemoryWindow.Type.TYPE_2);
            r.bindMemoryWindow(gone, gone.nextRkey(), region, 0, 64, RW);
            gone.close();
            IllegalStateException s = assertThrows(IllegalStateException.class, () -> p.b.postSend(r));
            assertTrue(s.getMessage().contains("closed"), s.getMessage());
            assertThrows(IllegalStateException.class, gone::rkey);
            assertThrows(IllegalStateException.class, gone::close);
            // Another protection domain.
            try (ProtectionDomain other = p.ctx.allocateProtectionDomain();
                 MemoryWindow foreign = other.allocateMemoryWindow(MemoryWindow.Type.TYPE_1)) {
                assertThrows(IllegalArgumentException.class, () -> p.b.bindMemoryWindow(foreign, region, 0, 64, RW, 0, true));
            }
            borrowed.close();
        }
    }

    @Test
    void softIwarpHasNoMemoryWindows() {
        String siw = System.getenv("RDMA_SIW_DEVICE");
        if (siw == null) {
            if (Boolean.parseBoolean(System.getenv("CI"))) {
                fail("RDMA_SIW_DEVICE is not set: CI runs the integration tests with --provider both");
            }
            org.junit.jupiter.api.Assumptions.abort("no SoftiWARP device (run with scripts/with-rdma --provider both)");
        }
        try (Context ctx = Device.open(siw); ProtectionDomain pd = ctx.allocateProtectionDomain()) {
            for (MemoryWindow.Type type : MemoryWindow.Type.values()) {
                VerbsException e = assertThrows(VerbsException.class, () -> pd.allocateMemoryWindow(type));
                assertEquals("ibv_alloc_mw", e.verb());
                assertEquals(95, e.errno(), e.getMessage()); // EOPNOTSUPP
                assertTrue(e.getMessage().contains(siw), e.getMessage());
            }
        }
    }
}
