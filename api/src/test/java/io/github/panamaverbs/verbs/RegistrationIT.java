package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.lang.foreign.MemorySegment;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Registration beyond {@code ibv_reg_mr}, on the device: a region at a chosen IOVA
 * ({@code ibv_reg_mr_iova2}) used by the peer and by local scatter entries, and On-Demand Paging
 * refused where the device has none.
 */
@RequiresRdma
class RegistrationIT {
    private static final long IOVA_B = 0x10_0000_0000L;
    private static final long IOVA_A = 0x20_0000_0000L;

    private static void fill(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(JAVA_BYTE, i, (byte) (i * 5 + seed));
        }
    }

    @Test
    void aRegionAtAChosenIovaIsAddressedByIt(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC)) {
            MemoryRegion b = p.keep(p.pd.allocateAndRegister(1 << 16, IOVA_B,
                    Set.of(AccessFlag.REMOTE_WRITE, AccessFlag.REMOTE_READ)));
            MemoryRegion a = p.keep(p.pd.allocateAndRegister(1 << 16, IOVA_A, Set.of()));
            assertEquals(IOVA_B, b.address());
            assertEquals(IOVA_A, a.address());
            fill(a.segment().asSlice(0, 4096), 1);
            // The peer writes at IOVA + 100; the local entry is in IOVA terms too.
            p.a.postSend(new SendRequest(1).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(a, 0, 4096)
                    .rdma(IOVA_B + 100, b.rkey()));
            assertEquals(WcStatus.SUCCESS, p.await(p.cqA, 1).status(0));
            assertEquals(-1, a.segment().asSlice(0, 4096).mismatch(b.segment().asSlice(100, 4096)));
            p.a.postSend(new SendRequest(1).opcode(SendOpcode.RDMA_READ).signaled(true).sge(a, 8192, 4096)
                    .rdma(IOVA_B + 100, b.rkey()));
            assertEquals(WcStatus.SUCCESS, p.await(p.cqA, 1).status(0));
            assertEquals(-1, a.segment().asSlice(8192, 4096).mismatch(b.segment().asSlice(100, 4096)));
            // The memory's own address is outside the key's range now: refused, nothing written.
            byte[] before = b.segment().toArray(JAVA_BYTE);
            p.a.postSend(new SendRequest(1).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(a, 0, 64)
                    .rdma(b.segment().address(), b.rkey()));
            assertEquals(WcStatus.REM_ACCESS_ERR, p.await(p.cqA, 1).status(0));
            assertArrayEquals(before, b.segment().toArray(JAVA_BYTE));
            assertThrows(IllegalArgumentException.class, () -> p.pd.allocateAndRegister(4096, -1, Set.of()));
        }
    }

    @Test
    void onDemandPagingIsRefusedWhereTheDeviceHasNone(TestDevice dev) {
        try (Context ctx = dev.open(); ProtectionDomain pd = ctx.allocateProtectionDomain()) {
            long odp = ctx.queryDevice().odpGeneralCaps();
            if (dev.name().startsWith("rxe")) {
                assertEquals(0, odp, "Soft-RoCE on Linux 6.1 has no ODP");
            }
            if ((odp & 1) == 0) {
                VerbsException e = assertThrows(VerbsException.class,
                        () -> pd.allocateAndRegister(4096, AccessFlag.ON_DEMAND));
                assertEquals(95, e.errno(), e.getMessage());
                assertTrue(e.getMessage().contains("On-Demand Paging"), e.getMessage());
            } else {
                try (MemoryRegion r = pd.allocateAndRegister(4096, AccessFlag.ON_DEMAND)) {
                    assertTrue(r.access().contains(AccessFlag.ON_DEMAND));
                }
            }
        }
    }
}
