package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Registration beyond {@code ibv_reg_mr}, on the device: a region at a chosen IOVA
 * ({@code ibv_reg_mr_iova2}) used by the peer and by local scatter entries; On-Demand Paging,
 * implicit ODP and {@code ibv_advise_mr} refused where the device has none; dma-bufs refused by the
 * soft devices.
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
                // ibv_advise_mr: nothing to advise without ODP, refused in Java before the provider
                MemoryRegion plain = pd.allocateAndRegister(4096);
                VerbsException a = assertThrows(VerbsException.class,
                        () -> plain.advise(MemoryRegion.Advice.PREFETCH, 0, 4096, true));
                assertEquals(95, a.errno(), a.getMessage());
                assertTrue(a.getMessage().startsWith("ibv_advise_mr") && a.getMessage().contains("IBV_ODP_SUPPORT"),
                        a.getMessage());
                assertThrows(NullPointerException.class, () -> plain.advise(null, 0, 4096, true));
                plain.close();
                IllegalStateException closed = assertThrows(IllegalStateException.class,
                        () -> plain.advise(MemoryRegion.Advice.PREFETCH, 0, 4096, true));
                assertTrue(closed.getMessage().contains("is closed"), closed.getMessage());
            } else {
                try (MemoryRegion r = pd.allocateAndRegister(4096, AccessFlag.ON_DEMAND)) {
                    assertTrue(r.access().contains(AccessFlag.ON_DEMAND));
                    r.advise(MemoryRegion.Advice.PREFETCH_WRITE, 0, 4096, true);
                    assertThrows(IndexOutOfBoundsException.class, () -> r.advise(MemoryRegion.Advice.PREFETCH, 4000, 200, true));
                }
            }
            // Implicit ODP (the whole address space) needs IBV_ODP_SUPPORT_IMPLICIT
            if ((odp & 2) == 0) {
                VerbsException e = assertThrows(VerbsException.class,
                        () -> pd.registerImplicitOnDemand(Set.of(AccessFlag.REMOTE_WRITE)));
                assertEquals(95, e.errno(), e.getMessage());
                assertEquals("ibv_reg_mr failed: EOPNOTSUPP (95, Operation not supported): " + dev.name() + " has no implicit "
                        + "On-Demand Paging (its odp_caps.general_caps lack IBV_ODP_SUPPORT_IMPLICIT"
                        + ((odp & 1) == 0 ? " and IBV_ODP_SUPPORT" : "") + ")", e.getMessage());
            } else {
                try (MemoryRegion all = pd.registerImplicitOnDemand(Set.of(AccessFlag.REMOTE_WRITE))) {
                    assertEquals(0, all.address());
                    assertTrue(all.access().contains(AccessFlag.ON_DEMAND));
                    assertThrows(IllegalStateException.class, all::segment);
                }
            }
        }
    }

    /**
     * {@code ibv_reg_dmabuf_mr}. The VM's Debian 6.1 kernel is built without {@code CONFIG_UDMABUF}, so
     * no dma-buf can be made from a memfd there; and neither rxe nor siw registers dma-bufs: their
     * provider refuses before the kernel sees the descriptor (a memfd here), with EOPNOTSUPP.
     */
    @Test
    void aDmaBufIsRefusedBySoftDevicesWithItsErrno(TestDevice dev) throws Throwable {
        assertFalse(java.nio.file.Files.exists(java.nio.file.Path.of("/dev/udmabuf")),
                "the VM kernel has udmabuf now: make a real dma-buf from a memfd here");
        MethodHandle memfdCreate = Linker.nativeLinker().downcallHandle(
                Linker.nativeLinker().defaultLookup().find("memfd_create").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        MethodHandle close = Linker.nativeLinker().downcallHandle(
                Linker.nativeLinker().defaultLookup().find("close").orElseThrow(), FunctionDescriptor.of(JAVA_INT, JAVA_INT));
        try (Context ctx = dev.open(); Arena arena = Arena.ofConfined()) {
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            int fd = (int) memfdCreate.invokeExact(arena.allocateFrom("pv-dmabuf"), 0);
            assertTrue(fd >= 0, "memfd_create");
            try {
                VerbsException e = assertThrows(VerbsException.class,
                        () -> pd.registerDmaBuf(fd, 0, 4096, 0x1000, Set.of(AccessFlag.REMOTE_READ)));
                assertEquals(95, e.errno(), e.getMessage());
                assertTrue(e.getMessage().startsWith("ibv_reg_dmabuf_mr failed: EOPNOTSUPP")
                        && e.getMessage().contains(dev.name() + " does not register dma-bufs"), e.getMessage());
                assertThrows(IllegalArgumentException.class, () -> pd.registerDmaBuf(-1, 0, 4096, 0, Set.of()));
                assertThrows(IllegalArgumentException.class, () -> pd.registerDmaBuf(fd, 0, 0, 0, Set.of()));
                assertThrows(IllegalArgumentException.class, () -> pd.registerDmaBuf(fd, -1, 4096, 0, Set.of()));
                assertThrows(IllegalArgumentException.class,
                        () -> pd.registerDmaBuf(fd, 0, 4096, 0, Set.of(AccessFlag.ON_DEMAND)));
                assertThrows(NullPointerException.class, () -> pd.registerDmaBuf(fd, 0, 4096, 0, null));
            } finally {
                int rc = (int) close.invokeExact(fd);
                assertEquals(0, rc);
            }
            pd.close();
            assertThrows(IllegalStateException.class, () -> pd.registerDmaBuf(0, 0, 4096, 0, Set.of()));
            assertThrows(IllegalStateException.class, () -> pd.registerImplicitOnDemand(Set.of()));
        }
    }
}
