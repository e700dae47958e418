package io.github.panamaverbs.verbs.testing;

import io.github.panamaverbs.verbs.Device;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * The one rule that picks the RDMA device every module's integration tests (and the benchmarks)
 * run against, and what the outcome was: either {@code device} or the {@code reason} there is none.
 * {@link RdmaDeviceExtension} applies it to JUnit tests; it needs no JUnit itself, so that code
 * outside a test (the jmh module's benchmarks) can use the same rule from the api's test jar.
 *
 * <h2>Which device</h2>
 * <ul>
 *   <li><b>Device:</b> the environment variable {@code RDMA_DEVICE} if set (it must be one that
 *       {@link Device#list()} reports); otherwise the first device from {@link Device#list()}
 *       whose port is ACTIVE, as {@code /sys/class/infiniband/<name>/ports/<port>/state} says
 *       ({@code "4: ACTIVE"}).</li>
 *   <li><b>Port:</b> {@code RDMA_PORT}, default 1.</li>
 *   <li><b>GID index:</b> {@code RDMA_GID_INDEX} if set; otherwise the first index {@code i} under
 *       {@code /sys/class/infiniband/<name>/ports/<port>/gids/} whose
 *       {@code gid_attrs/types/i} is {@code RoCE v2} and whose GID is an IPv4-mapped address
 *       ({@code ::ffff:a.b.c.d}); otherwise 0 (InfiniBand, iWARP).</li>
 * </ul>
 * {@code scripts/with-rdma} sets all three variables inside its VM (it knows which provider it set
 * up).
 *
 * <h2>When there is none</h2>
 * The reason says why (no device listed, no port ACTIVE, {@code RDMA_DEVICE} naming a device that
 * is not there, libibverbs missing). Whether that is a failure or a skip is {@link #required()}'s
 * answer: a failure when the environment variable {@code CI} is {@code true} or the system property
 * {@code rdma.required} is {@code true} ({@code scripts/run-it} passes {@code -Drdma.required=true}
 * under CI): in CI a missing device is a broken test environment, never a reason to pass.
 *
 * @param device the device found, or null
 * @param reason why there is none, or null when there is one
 */
public record DeviceDetection(TestDevice device, String reason) {

    /** The system property that, set to {@code true}, makes a missing device a failure. */
    public static final String REQUIRED_PROPERTY = "rdma.required";

    static final Path SYSFS = Path.of("/sys/class/infiniband");
    static final String MAPPED_IPV4_PREFIX = "0000:0000:0000:0000:0000:ffff:";

    public DeviceDetection {
        if ((device == null) == (reason == null)) {
            throw new IllegalArgumentException("either a device or a reason: " + device + ", " + reason);
        }
    }

    static DeviceDetection found(TestDevice device) {
        return new DeviceDetection(device, null);
    }

    static DeviceDetection none(String reason) {
        return new DeviceDetection(null, reason);
    }

    /** Looks for the device on this host: this process's environment, sysfs and {@link Device#list()}. */
    public static DeviceDetection detect() {
        return detect(System.getenv(), SYSFS, DeviceDetection::listDeviceNames);
    }

    /**
     * The device found.
     *
     * @throws IllegalStateException with the reason when there is none
     */
    public TestDevice orElseThrow() {
        if (device == null) {
            throw new IllegalStateException("no RDMA device: " + reason);
        }
        return device;
    }

    /** Whether a missing device fails tests: {@code CI=true} or {@code -Drdma.required=true}. */
    public static boolean required() {
        return required(System.getenv(), System::getProperty);
    }

    static boolean required(Map<String, String> env, Function<String, String> properties) {
        return "true".equalsIgnoreCase(env.getOrDefault("CI", "").trim())
                || "true".equalsIgnoreCase(String.valueOf(properties.apply(REQUIRED_PROPERTY)).trim());
    }

    private static List<String> listDeviceNames() {
        return Device.list().stream().map(Device::name).toList();
    }

    /**
     * Looks for the device to test with.
     *
     * @param env         the environment ({@code RDMA_DEVICE}, {@code RDMA_PORT}, {@code RDMA_GID_INDEX})
     * @param sysfs       {@code /sys/class/infiniband}, or a stand-in for it
     * @param deviceNames the names {@code ibv_get_device_list} reports
     */
    static DeviceDetection detect(Map<String, String> env, Path sysfs, Supplier<List<String>> deviceNames) {
        int port;
        Integer gidIndex = null;
        try {
            port = intVariable(env, "RDMA_PORT", 1, 1);
            if (!env.getOrDefault("RDMA_GID_INDEX", "").isBlank()) {
                gidIndex = intVariable(env, "RDMA_GID_INDEX", 0, 0);
            }
        } catch (IllegalArgumentException e) {
            return none(e.getMessage());
        }

        List<String> names;
        try {
            names = deviceNames.get();
        } catch (Throwable t) { // a missing libibverbs shows up as an Error from class initialisation
            return none("cannot list RDMA devices: " + t);
        }

        String name = env.getOrDefault("RDMA_DEVICE", "").trim();
        if (!name.isEmpty()) {
            if (!names.contains(name)) {
                return none("RDMA_DEVICE=" + name + " but ibv_get_device_list has no such device; found: "
                        + (names.isEmpty() ? "none" : String.join(", ", names)));
            }
        } else if (names.isEmpty()) {
            return none("ibv_get_device_list found no RDMA device on this host"
                    + " (scripts/with-rdma runs a command in a VM that has one)");
        } else {
            List<String> states = new ArrayList<>();
            for (String candidate : names) {
                String state = portState(sysfs, candidate, port);
                if (state.toUpperCase(Locale.ROOT).contains("ACTIVE")) {
                    name = candidate;
                    break;
                }
                states.add(candidate + " port " + port + ": " + state);
            }
            if (name.isEmpty()) {
                return none("no RDMA device has port " + port + " ACTIVE (" + String.join(", ", states) + ")");
            }
        }
        return found(new TestDevice(name, port, gidIndex != null ? gidIndex : roceV2Ipv4Gid(sysfs, name, port)));
    }

    private static int intVariable(Map<String, String> env, String variable, int fallback, int min) {
        String value = env.getOrDefault(variable, "").trim();
        if (value.isEmpty()) {
            return fallback;
        }
        try {
            int n = Integer.parseInt(value);
            if (n >= min) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(variable + "=" + value + " is not a number >= " + min);
    }

    /** The content of the port's sysfs {@code state} file ({@code "4: ACTIVE"}), or why it can't be read. */
    static String portState(Path sysfs, String device, int port) {
        Path file = sysfs.resolve(device).resolve("ports").resolve(Integer.toString(port)).resolve("state");
        try {
            return Files.readString(file, StandardCharsets.US_ASCII).trim();
        } catch (IOException e) {
            return "cannot read " + file + " (" + e + ")";
        }
    }

    /**
     * The first GID index of the port whose type is RoCE v2 and whose GID is an IPv4-mapped address;
     * 0 if there is none (or the device has no GID types, as InfiniBand and iWARP devices do not).
     */
    static int roceV2Ipv4Gid(Path sysfs, String device, int port) {
        Path portDir = sysfs.resolve(device).resolve("ports").resolve(Integer.toString(port));
        List<Integer> indexes;
        try (Stream<Path> gids = Files.list(portDir.resolve("gids"))) {
            indexes = gids.map(p -> p.getFileName().toString())
                    .filter(s -> s.matches("\\d+"))
                    .map(Integer::valueOf)
                    .sorted()
                    .toList();
        } catch (IOException e) {
            return 0;
        }
        for (int i : indexes) {
            try {
                String gid = Files.readString(portDir.resolve("gids").resolve(Integer.toString(i)),
                        StandardCharsets.US_ASCII).trim().toLowerCase(Locale.ROOT);
                if (!gid.startsWith(MAPPED_IPV4_PREFIX)) {
                    continue;
                }
                // Reading the type of an unused entry fails (EINVAL): that entry is skipped.
                String type = Files.readString(portDir.resolve("gid_attrs").resolve("types").resolve(Integer.toString(i)),
                        StandardCharsets.US_ASCII).trim();
                if (type.equalsIgnoreCase("RoCE v2")) {
                    return i;
                }
            } catch (IOException e) {
                // not a usable entry
            }
        }
        return 0;
    }
}
