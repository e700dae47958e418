package io.github.panamaverbs.diagnostics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.panamaverbs.verbs.Device;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The doctor on the host: every check reports, every problem has a fix; without a device it says how to get one. */
class DoctorTest {

    @Test
    void everyCheckReportsAndEveryProblemHasAFix() {
        Doctor.Report report = Doctor.check();
        System.out.print(report);
        for (String check : List.of("libraries", "kernel modules", "/dev/infiniband", "devices", "memlock", "native access")) {
            assertFalse(report.of(check).isEmpty(), "no finding for " + check + ":\n" + report);
        }
        for (Doctor.Finding f : report.findings()) {
            if (f.status() == Doctor.Status.PROBLEM || f.status() == Doctor.Status.WARNING) {
                assertNotNull(f.fix(), f.toString());
            }
        }
        assertEquals(report.problems().isEmpty(), report.healthy());
        assertTrue(report.toString().endsWith("\n"));
    }

    @Test
    void withoutADeviceItSaysSoAndHowToGetOne() {
        assumeTrue(Device.list().isEmpty(), "this host has an RDMA device");
        Doctor.Report report = Doctor.check();
        Doctor.Finding devices = report.of("devices").getFirst();
        assertEquals(Doctor.Status.PROBLEM, devices.status(), report.toString());
        assertTrue(devices.detail().contains("no RDMA device"), devices.toString());
        assertTrue(devices.fix().contains("modprobe rdma_rxe"), devices.fix());
        assertTrue(devices.fix().contains("rdma link add rxe0 type rxe netdev"), devices.fix());
        assertTrue(devices.fix().contains("scripts/with-rdma"), devices.fix());
        assertFalse(report.healthy());
    }

    @Test
    void nativeAccessIsSeenAsEnabled() {
        // surefire runs the tests with --enable-native-access=ALL-UNNAMED
        Doctor.Finding f = Doctor.check().of("native access").getFirst();
        assertEquals(Doctor.Status.OK, f.status(), f.toString());
    }

    @Test
    void memlockIsRead() {
        long[] limit = Doctor.getrlimitMemlock();
        assertNotNull(limit);
        assertTrue(limit[0] == -1L || limit[0] >= 0, Long.toString(limit[0]));
        assertEquals("unlimited", Doctor.bytes(-1L));
        assertEquals("8 MiB", Doctor.bytes(8L << 20));
        assertEquals("64 KiB", Doctor.bytes(64L << 10));
    }

    @Test
    void versionComesFromTheFileName() {
        assertEquals(" (version 1.14.44.0, rdma-core 44)", Doctor.version(Path.of("/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0")));
        assertEquals("", Doctor.version(Path.of("/opt/libibverbs.so.1")));
    }

    @Test
    void aProblemWithoutAFixIsRejected() {
        assertThrows(IllegalArgumentException.class, () -> new Doctor.Finding("x", Doctor.Status.PROBLEM, "broken", null));
    }
}
