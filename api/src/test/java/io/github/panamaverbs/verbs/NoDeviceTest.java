package io.github.panamaverbs.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.Test;

/** The "no device" path, on a host without RDMA devices; skipped on a host that has some. */
class NoDeviceTest {

    @Test
    void openingOnAHostWithoutDevicesSaysSo() {
        assumeTrue(Device.list().isEmpty(), "this host has RDMA devices");
        VerbsException e = assertThrows(VerbsException.class, () -> Device.open("rxe0"));
        assertEquals("ibv_open_device", e.verb());
        assertTrue(e.getMessage().contains("no RDMA device named rxe0"), e.getMessage());
        assertTrue(e.getMessage().contains("found: none"), e.getMessage());
    }

    @Test
    void blankNameIsRejectedInJava() {
        assertThrows(IllegalArgumentException.class, () -> Device.open(""));
        assertThrows(IllegalArgumentException.class, () -> Device.open(null));
    }
}
