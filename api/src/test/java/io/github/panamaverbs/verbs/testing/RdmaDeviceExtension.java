package io.github.panamaverbs.verbs.testing;

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
 * Finds the RDMA device that integration tests run against, by the rule of {@link DeviceDetection}
 * (which says which device, and what happens when there is none), and hands it to them as a
 * {@link TestDevice} parameter. Use it through {@link RequiresRdma}.
 *
 * <p>Run by hand on a host without an RDMA device, tests that need one are <b>skipped</b>, and the
 * skip gives the reason. When {@link DeviceDetection#required()} (the environment variable
 * {@code CI} is {@code true}, or the system property {@code rdma.required} is; {@code scripts/run-it}
 * passes {@code -Drdma.required=true} under CI), they <b>fail</b> instead, with the same reason. The
 * device is looked for once per test run (the engine's root store), whichever module's tests run.
 *
 * <p>The api module publishes this package as its test jar ({@code panama-verbs:tests}), which the
 * samples' integration tests and the jmh benchmarks use, so that one rule picks the device everywhere.
 */
public final class RdmaDeviceExtension
        implements ExecutionCondition, BeforeAllCallback, BeforeEachCallback, ParameterResolver {

    /** The system property that, set to {@code true}, makes a missing device a failure. */
    public static final String REQUIRED_PROPERTY = DeviceDetection.REQUIRED_PROPERTY;

    private static final Namespace NAMESPACE = Namespace.create(RdmaDeviceExtension.class);

    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
        DeviceDetection detection = detection(context);
        if (detection.device() != null) {
            return ConditionEvaluationResult.enabled("RDMA device " + detection.device());
        }
        if (DeviceDetection.required()) {
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
        DeviceDetection detection = detection(context);
        if (detection.device() != null) {
            return detection.device();
        }
        if (DeviceDetection.required()) {
            throw new IllegalStateException("no RDMA device: " + detection.reason()
                    + " (a failure, not a skip: CI=true or " + REQUIRED_PROPERTY + "=true)");
        }
        return Assumptions.abort("no RDMA device: " + detection.reason());
    }

    private static DeviceDetection detection(ExtensionContext context) {
        return context.getRoot().getStore(NAMESPACE).computeIfAbsent(DeviceDetection.class,
                key -> DeviceDetection.detect(), DeviceDetection.class);
    }
}
