package io.github.panamaverbs.verbs.testing;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Marks a test class or method that needs an RDMA device: registers {@link RdmaDeviceExtension}
 * (which skips the test, or fails it under CI, when there is no device, and resolves
 * {@link TestDevice} parameters) and tags the test {@code rdma}.
 *
 * <pre>{@code
 * @RequiresRdma
 * class QueuePairIT {
 *     @Test
 *     void connects(TestDevice device) {
 *         try (Context ctx = device.open()) { ... }
 *     }
 * }
 * }</pre>
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
@ExtendWith(RdmaDeviceExtension.class)
@Tag("rdma")
public @interface RequiresRdma {
}
