package io.github.panamaverbs.samples;

import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.Device;
import io.github.panamaverbs.verbs.Mtu;
import java.util.List;
import java.util.stream.Collectors;

/** What several tools share: picking the device, reading an MTU, the UD constants. */
final class Common {
    /** The Q_Key both sides of a UD test use: the C ping-pongs' and perftest's (DEF_QKEY). */
    static final int QKEY = 0x11111111;
    /** The bytes in front of every UD receive: the GRH, present or not (perftest's UD_ADDITION). */
    static final int GRH_BYTES = 40;

    private Common() {
    }

    /** Opens device {@code name}, or the first one when it is null, with the C tools' messages. */
    static Context openDevice(String name) {
        List<Device> devices = Device.list();
        if (devices.isEmpty()) {
            throw new SampleException("No IB devices found");
        }
        if (name == null) {
            return devices.getFirst().open();
        }
        for (Device d : devices) {
            if (d.name().equals(name)) {
                return d.open();
            }
        }
        throw new SampleException("IB device " + name + " not found (devices: "
                + devices.stream().map(Device::name).collect(Collectors.joining(", ")) + ")");
    }

    /** pp_mtu_to_enum: 256 … 4096 bytes. */
    static Mtu mtu(int bytes) {
        try {
            return Mtu.ofBytes(bytes);
        } catch (IllegalArgumentException e) {
            throw new Options.UsageException("--mtu: " + bytes + " is not one of 256, 512, 1024, 2048, 4096");
        }
    }
}
