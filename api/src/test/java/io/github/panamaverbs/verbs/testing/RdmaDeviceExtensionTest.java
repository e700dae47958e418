package io.github.panamaverbs.verbs.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The device rule ({@link DeviceDetection}, which {@link RdmaDeviceExtension} applies) against a
 * stand-in for {@code /sys/class/infiniband}; needs no device.
 */
class RdmaDeviceExtensionTest {

    @TempDir
    Path sysfs;

    private void port(String device, int port, String state) throws IOException {
        Path dir = sysfs.resolve(device + "/ports/" + port);
        Files.createDirectories(dir.resolve("gids"));
        Files.createDirectories(dir.resolve("gid_attrs/types"));
        Files.writeString(dir.resolve("state"), state + "\n");
    }

    private void gid(String device, int port, int index, String gid, String type) throws IOException {
        Path dir = sysfs.resolve(device + "/ports/" + port);
        Files.writeString(dir.resolve("gids/" + index), gid + "\n");
        if (type != null) {
            Files.writeString(dir.resolve("gid_attrs/types/" + index), type + "\n");
        }
    }

    private DeviceDetection detect(Map<String, String> env, String... devices) {
        return DeviceDetection.detect(env, sysfs, () -> List.of(devices));
    }

    @Test
    void picksFirstDeviceWithActivePortAndRoceV2Ipv4Gid() throws IOException {
        port("rxe0", 1, "1: DOWN");
        port("rxe1", 1, "4: ACTIVE");
        gid("rxe1", 1, 0, "fe80:0000:0000:0000:5054:00ff:fe12:3456", "IB/RoCE v1");
        gid("rxe1", 1, 1, "fe80:0000:0000:0000:5054:00ff:fe12:3456", "RoCE v2");
        gid("rxe1", 1, 2, "0000:0000:0000:0000:0000:ffff:0a00:0002", "IB/RoCE v1");
        gid("rxe1", 1, 3, "0000:0000:0000:0000:0000:ffff:0a00:0002", "RoCE v2");
        gid("rxe1", 1, 4, "0000:0000:0000:0000:0000:0000:0000:0000", null); // unused: type unreadable
        gid("rxe1", 1, 10, "0000:0000:0000:0000:0000:ffff:0a00:0003", "RoCE v2");

        DeviceDetection d = detect(Map.of(), "rxe0", "rxe1");
        assertEquals(new TestDevice("rxe1", 1, 3), d.device(), d.reason());
    }

    @Test
    void gidIndexFallsBackToZero() throws IOException {
        port("siw0", 1, "4: ACTIVE");
        Files.delete(sysfs.resolve("siw0/ports/1/gid_attrs/types"));
        gid("siw0", 1, 0, "5254:0012:3456:0000:0000:0000:0000:0000", null);
        assertEquals(new TestDevice("siw0", 1, 0), detect(Map.of(), "siw0").device());
    }

    @Test
    void environmentOverridesDetection() throws IOException {
        port("rxe0", 1, "4: ACTIVE");
        port("siw0", 2, "1: DOWN");
        DeviceDetection d = detect(Map.of("RDMA_DEVICE", "siw0", "RDMA_PORT", "2", "RDMA_GID_INDEX", "7"), "rxe0", "siw0");
        assertEquals(new TestDevice("siw0", 2, 7), d.device());
    }

    @Test
    void noDevices() {
        DeviceDetection d = detect(Map.of());
        assertNull(d.device());
        assertTrue(d.reason().contains("no RDMA device"), d.reason());
    }

    @Test
    void noActivePort() throws IOException {
        port("rxe0", 1, "1: DOWN");
        DeviceDetection d = detect(Map.of(), "rxe0");
        assertNull(d.device());
        assertTrue(d.reason().contains("rxe0 port 1: 1: DOWN"), d.reason());
    }

    @Test
    void environmentNamesMissingDevice() {
        DeviceDetection d = detect(Map.of("RDMA_DEVICE", "mlx5_0"), "rxe0");
        assertNull(d.device());
        assertTrue(d.reason().contains("RDMA_DEVICE=mlx5_0") && d.reason().contains("found: rxe0"), d.reason());
    }

    @Test
    void badPortVariable() {
        DeviceDetection d = detect(Map.of("RDMA_PORT", "0"), "rxe0");
        assertNull(d.device());
        assertTrue(d.reason().contains("RDMA_PORT=0"), d.reason());
    }

    @Test
    void listingFailureIsAReason() {
        DeviceDetection d = DeviceDetection.detect(Map.of(), sysfs, () -> {
            throw new UnsatisfiedLinkError("libibverbs.so.1: cannot open shared object file");
        });
        assertNull(d.device());
        assertTrue(d.reason().contains("libibverbs.so.1"), d.reason());
    }

    @Test
    void requiredUnderCiOrProperty() {
        Map<String, String> props = new HashMap<>();
        assertFalse(DeviceDetection.required(Map.of(), props::get));
        assertFalse(DeviceDetection.required(Map.of("CI", "false"), props::get));
        assertTrue(DeviceDetection.required(Map.of("CI", "true"), props::get));
        props.put(DeviceDetection.REQUIRED_PROPERTY, "true");
        assertTrue(DeviceDetection.required(Map.of(), props::get));
    }

    @Test
    void testDeviceValidates() {
        assertThrows(IllegalArgumentException.class, () -> new TestDevice("", 1, 0));
        assertThrows(IllegalArgumentException.class, () -> new TestDevice("rxe0", 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new TestDevice("rxe0", 1, -1));
    }

    @Test
    void detectionIsADeviceOrAReason() {
        TestDevice rxe = new TestDevice("rxe0", 1, 1);
        assertEquals(rxe, DeviceDetection.found(rxe).orElseThrow());
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> DeviceDetection.none("no port ACTIVE").orElseThrow());
        assertEquals("no RDMA device: no port ACTIVE", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new DeviceDetection(null, null));
        assertThrows(IllegalArgumentException.class, () -> new DeviceDetection(rxe, "and a reason"));
        assertEquals(DeviceDetection.REQUIRED_PROPERTY, RdmaDeviceExtension.REQUIRED_PROPERTY);
    }

    /**
     * The rule runs outside JUnit too (the jmh benchmarks load it from the api's test jar, with no
     * JUnit on their class path): neither it nor the device it returns may name a JUnit class.
     */
    @Test
    void theRuleNeedsNoJunit() throws IOException {
        for (Class<?> c : List.of(DeviceDetection.class, TestDevice.class)) {
            try (var in = c.getResourceAsStream(c.getSimpleName() + ".class")) {
                assertNotNull(in, c.getName());
                String constants = new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
                assertFalse(constants.contains("org/junit"), c.getName() + " refers to JUnit");
            }
        }
    }
}
