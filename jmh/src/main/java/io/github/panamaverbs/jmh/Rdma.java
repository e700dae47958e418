package io.github.panamaverbs.jmh;

import io.github.panamaverbs.verbs.ConnectOptions;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.Device;

/**
 * The device to benchmark on: {@code RDMA_DEVICE} (else the first device), port {@code RDMA_PORT}
 * (1) and GID index {@code RDMA_GID_INDEX} (0), as scripts/with-rdma sets them.
 */
final class Rdma {
    static final Rdma DEVICE = new Rdma();

    final String name = System.getenv("RDMA_DEVICE");
    final int port = intEnv("RDMA_PORT", 1);
    final int gidIndex = intEnv("RDMA_GID_INDEX", 0);

    private static int intEnv(String name, int fallback) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? fallback : Integer.parseInt(v.trim());
    }

    Context open() {
        if (name != null && !name.isBlank()) {
            return Device.open(name);
        }
        var devices = Device.list();
        if (devices.isEmpty()) {
            throw new IllegalStateException("no RDMA device (run through scripts/with-rdma)");
        }
        return devices.getFirst().open();
    }

    ConnectOptions options() {
        return ConnectOptions.port(port).gidIndex(gidIndex);
    }
}
