package io.github.panamaverbs.verbs.testing;

import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.Device;
import java.util.Objects;

/**
 * The RDMA device an integration test runs against, as {@link RdmaDeviceExtension} found it.
 * Declare a parameter of this type in a test (or lifecycle) method of a class annotated
 * {@link RequiresRdma} to receive it.
 *
 * @param name     the device's name ({@code rxe0}, {@code siw0}, {@code mlx5_0})
 * @param port     the port number to use (1-based)
 * @param gidIndex the GID index to use on that port: a RoCE v2 GID holding an IPv4 address where
 *                 the device has one, else 0
 */
public record TestDevice(String name, int port, int gidIndex) {

    public TestDevice {
        Objects.requireNonNull(name, "name");
        if (name.isBlank()) {
            throw new IllegalArgumentException("device name is blank");
        }
        if (port < 1) {
            throw new IllegalArgumentException("port " + port + " is not a port number (ports start at 1)");
        }
        if (gidIndex < 0) {
            throw new IllegalArgumentException("GID index " + gidIndex + " is negative");
        }
    }

    /** Opens this device: {@code Device.open(name())}. */
    public Context open() {
        return Device.open(name);
    }

    /**
     * This device as {@link Device#list()} describes it now.
     *
     * @throws IllegalStateException if the device has gone away
     */
    public Device device() {
        return Device.list().stream()
                .filter(d -> d.name().equals(name))
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("RDMA device " + name + " is no longer listed"));
    }

    @Override
    public String toString() {
        return name + " port " + port + " GID index " + gidIndex;
    }
}
