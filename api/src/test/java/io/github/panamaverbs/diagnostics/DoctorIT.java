package io.github.panamaverbs.diagnostics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.Device;
import io.github.panamaverbs.verbs.LinkLayer;
import io.github.panamaverbs.verbs.TransportType;
import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import org.junit.jupiter.api.Test;

/** The doctor where there is a device (the scripts/with-rdma VM): every check green. */
@RequiresRdma
class DoctorIT {

    @Test
    void allGreenWithADevice(TestDevice device) {
        Doctor.Report report = Doctor.check();
        System.out.print(report);
        assertTrue(report.allGreen(), "not all green:\n" + report);
        assertTrue(report.of("devices").stream().anyMatch(f -> f.detail().startsWith(device.name() + ":")), report.toString());
        assertTrue(report.of("ports").stream().anyMatch(f -> f.status() == Doctor.Status.OK
                && f.detail().startsWith(device.name() + " port")), report.toString());
        for (Doctor.Finding f : report.of("libraries")) {
            assertEquals(Doctor.Status.OK, f.status(), f.toString());
        }
        try (Context ctx = Device.open(device.name())) {
            boolean roce = ctx.queryPort(device.port()).linkLayer() == LinkLayer.ETHERNET
                    && ctx.device().transport() == TransportType.IB;
            if (roce) {
                assertTrue(report.of("GID table").stream().anyMatch(f -> f.status() == Doctor.Status.OK
                        && f.detail().startsWith(device.name() + " port " + device.port()) && f.detail().contains("RoCE v2")),
                        report.toString());
            }
        }
    }
}
