package io.github.panamaverbs.jmh;

import io.github.panamaverbs.verbs.ConnectOptions;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.Device;
import io.github.panamaverbs.verbs.testing.DeviceDetection;
import io.github.panamaverbs.verbs.testing.TestDevice;

/**
 * The device to benchmark on, by the rule every module's integration tests use
 * ({@link DeviceDetection}, from the api's test jar): {@code RDMA_DEVICE}, else the first device with
 * an ACTIVE port; port {@code RDMA_PORT} (1); GID index {@code RDMA_GID_INDEX}, else the port's RoCE
 * v2 IPv4 GID, else 0. scripts/with-rdma sets the three variables. Looked for once, when a benchmark
 * first needs it; with none, that benchmark fails saying why.
 */
final class Rdma {
    static final Rdma DEVICE = new Rdma(DeviceDetection.detect());

    private final DeviceDetection detection;

    private Rdma(DeviceDetection detection) {
        this.detection = detection;
    }

    /** The device found; without one, an IllegalStateException with the reason. */
    TestDevice device() {
        try {
            return detection.orElseThrow();
        } catch (IllegalStateException e) {
            throw new IllegalStateException(e.getMessage() + " (run through scripts/with-rdma)", e);
        }
    }

    String name() {
        return device().name();
    }

    int port() {
        return device().port();
    }

    int gidIndex() {
        return device().gidIndex();
    }

    Context open() {
        return Device.open(name());
    }

    ConnectOptions options() {
        return ConnectOptions.port(port()).gidIndex(gidIndex());
    }

    /** The device for a report's header: its name, port and GID index, or why there is none. */
    @Override
    public String toString() {
        return detection.device() != null ? detection.device().toString() : "none (" + detection.reason() + ")";
    }
}
