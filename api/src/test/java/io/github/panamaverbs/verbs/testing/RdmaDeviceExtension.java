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
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ExtensionContext.Namespace;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Finds the RDMA device that integration tests run against and hands it to them as a
 * {@link TestDevice} parameter. Use it through {@link RequiresRdma}.
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
 * {@code scripts/with-rdma} sets all three variables inside its VM. The device is looked for once
 * per test run.
 *
 * <h2>When there is none</h2>
 * Run by hand on a host without an RDMA device, tests that need one are <b>skipped</b>, and the
 * skip gives the reason (no device listed, no port ACTIVE, {@code RDMA_DEVICE} naming a device that
 * is not there, libibverbs missing). When the environment variable {@code CI} is {@code true}, or the
 * system property {@code rdma.required} is {@code true} ({@code scripts/run-it} passes
 * {@code -Drdma.required=true} under CI), they <b>fail</b> instead, with the same reason: in CI a
 * missing device is a broken test environment, never a reason to pass.
 */
public final class RdmaDeviceExtension
        implements ExecutionCondition, BeforeAllCallback, BeforeEachCallback, ParameterResolver {

    /** The system property that, set to {@code true}, makes a missing device a failure. */
    public static final String REQUIRED_PROPERTY = "rdma.required";

    static final Path SYSFS = Path.of("/sys/class/infiniband");
    static final String MAPPED_IPV4_PREFIX = "0000:0000:0000:0000:0000:ffff:";

    private static final Namespace NAMESPACE = Namespace.create(RdmaDeviceExtension.class);

    /** The outcome of looking for a device: either {@code device} or the {@code reason} there is none. */
    record Detection(TestDevice device, String reason) {
        static Detection found(TestDevice device) {
            return new Detection(device, null);
        }

        static Detection none(String reason) {
            return new Detection(null, reason);
        }
    }

    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
        Detection detection = detection(context);
        if (detection.device() != null) {
            return ConditionEvaluationResult.enabled("RDMA device " + detection.device());
        }
        if (required()) {
            // Let the test start so that beforeEach fails it.
            return ConditionEvaluationResult.enabled("no RDMA device, and one is required");
        }
        return ConditionEvaluationResult.disabled("no RDMA device: " + detection.reason()
                + " (with CI=true or -D" + REQUIRED_PROPERTY + "=true this is a failure)");
    }

    /** Reports the device in use, once per test class. */
    @Override
    public void beforeAll(ExtensionContext context) {
        TestDevice device = detection(context).device();
        if (device != null) {
            context.publishReportEntry("rdma.device", device.toString());
        }
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        device(context);
    }

    @Override
    public boolean supportsParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        return parameterContext.getParameter().getType() == TestDevice.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        return device(extensionContext);
    }

    private static TestDevice device(ExtensionContext context) {
        Detection detection = detection(context);
        if (detection.device() != null) {
            return detection.device();
        }
        if (required()) {
            throw new IllegalStateException("no RDMA device: " + detection.reason()
                    + " (a failure, not a skip: CI=true or " + REQUIRED_PROPERTY + "=true)");
        }
        return Assumptions.abort("no RDMA device: " + detection.reason());
    }

    private static Detection detection(ExtensionContext context) {
        return context.getRoot().getStore(NAMESPACE).computeIfAbsent(Detection.class,
                key -> detect(System.getenv(), SYSFS, RdmaDeviceExtension::listDeviceNames), Detection.class);
    }

    /** Whether a missing device fails tests: {@code CI=true} or {@code -Drdma.required=true}. */
    static boolean required() {
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
    static Detection detect(Map<String, String> env, Path sysfs, Supplier<List<String>> deviceNames) {
        int port;
        Integer gidIndex = null;
        try {
            port = intVariable(env, "RDMA_PORT", 1, 1);
            if (!env.getOrDefault("RDMA_GID_INDEX", "").isBlank()) {
                gidIndex = intVariable(env, "RDMA_GID_INDEX", 0, 0);
            }
        } catch (IllegalArgumentException e) {
            return Detection.none(e.getMessage());
        }

        List<String> names;
        try {
            names = deviceNames.get();
        } catch (Throwable t) { // a missing libibverbs shows up as an Error from class initialisation
            return Detection.none("cannot list RDMA devices: " + t);
        }

        String name = env.getOrDefault("RDMA_DEVICE", "").trim();
        if (!name.isEmpty()) {
            if (!names.contains(name)) {
                return Detection.none("RDMA_DEVICE=" + name + " but ibv_get_device_list has no such device; found: "
                        + (names.isEmpty() ? "none" : String.join(", ", names)));
            }
        } else if (names.isEmpty()) {
            return Detection.none("ibv_get_device_list found no RDMA device on this host"
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
                return Detection.none("no RDMA device has port " + port + " ACTIVE (" + String.join(", ", states) + ")");
            }
        }
        return Detection.found(new TestDevice(name, port, gidIndex != null ? gidIndex : roceV2Ipv4Gid(sysfs, name, port)));
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
