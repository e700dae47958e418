package io.github.panamaverbs.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Listing and opening a real device, checked against rdma-core's {@code ibv_devinfo}. */
@RequiresRdma
class DeviceIT {

    @Test
    void listedDeviceMatchesIbvDevinfo(TestDevice testDevice) throws Exception {
        List<Device> devices = Device.list();
        Device device = devices.stream().filter(d -> d.name().equals(testDevice.name())).findFirst()
                .orElseThrow(() -> new AssertionError(testDevice.name() + " is not in Device.list(): " + devices));

        Map<String, String> devinfo = ibvDevinfo(device.name());
        assertEquals(device.name(), devinfo.get("hca_id"), "hca_id");
        assertEquals(devinfo.get("node_guid"), device.guidString(), "node_guid");
        assertEquals(transportOf(devinfo.get("transport")), device.transport(), "transport: " + devinfo.get("transport"));

        // ibv_devinfo does not print the node type; the kernel's sysfs does ("1: CA", "4: RNIC").
        String nodeType = Files.readString(Path.of("/sys/class/infiniband", device.name(), "node_type"),
                StandardCharsets.US_ASCII).trim();
        String nodeTypeName = nodeType.substring(nodeType.indexOf(':') + 1).trim();
        assertEquals(nodeTypeName.toUpperCase(Locale.ROOT).replace(' ', '_'), device.nodeType().name(),
                "node_type: " + nodeType);
        assertEquals(device.transport() == TransportType.IWARP ? NodeType.RNIC : NodeType.CA, device.nodeType());
    }

    @Test
    void opensAndClosesOnce(TestDevice testDevice) {
        Context context = testDevice.open();
        assertNotNull(context);
        assertEquals(testDevice.name(), context.device().name());
        assertFalse(context.isClosed());
        context.close();
        assertTrue(context.isClosed());
        IllegalStateException twice = assertThrows(IllegalStateException.class, context::close);
        assertTrue(twice.getMessage().contains("closed"), twice.getMessage());
    }

    @Test
    void opensThroughDevice(TestDevice testDevice) {
        try (Context context = testDevice.device().open()) {
            assertEquals(testDevice.name(), context.device().name());
        }
    }

    @Test
    void unknownNameListsTheDevicesThatExist(TestDevice testDevice) {
        VerbsException e = assertThrows(VerbsException.class, () -> Device.open("nonexistent0"));
        assertEquals("ibv_open_device", e.verb());
        String message = e.getMessage();
        assertTrue(message.contains("no RDMA device named nonexistent0"), message);
        assertTrue(message.contains("found:"), message);
        assertTrue(message.contains(testDevice.name()), message);
    }

    private static TransportType transportOf(String devinfo) {
        assertNotNull(devinfo, "ibv_devinfo printed no transport");
        String name = devinfo.replaceFirst("\\s*\\(\\d+\\)$", "");
        return switch (name) {
            case "InfiniBand" -> TransportType.IB;
            case "iWARP" -> TransportType.IWARP;
            case "usNIC" -> TransportType.USNIC;
            case "usNIC UDP" -> TransportType.USNIC_UDP;
            case "unspecified" -> TransportType.UNSPECIFIED;
            default -> TransportType.UNKNOWN;
        };
    }

    /** The {@code key: value} lines of {@code ibv_devinfo -d name} before the first port section. */
    private static Map<String, String> ibvDevinfo(String name) throws IOException, InterruptedException {
        Process p;
        try {
            p = new ProcessBuilder("ibv_devinfo", "-d", name).redirectErrorStream(true).start();
        } catch (IOException e) {
            throw new AssertionError("cannot run ibv_devinfo (install ibverbs-utils): " + e, e);
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "ibv_devinfo did not finish");
        assertEquals(0, p.exitValue(), "ibv_devinfo -d " + name + " failed:\n" + out);
        Map<String, String> fields = new LinkedHashMap<>();
        for (String line : out.split("\n")) {
            int colon = line.indexOf(':');
            if (colon < 0) {
                continue;
            }
            String key = line.substring(0, colon).trim();
            if (key.equals("port")) {
                break;
            }
            fields.putIfAbsent(key, line.substring(colon + 1).trim());
        }
        return fields;
    }
}
