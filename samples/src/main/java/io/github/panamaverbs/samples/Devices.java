package io.github.panamaverbs.samples;

import io.github.panamaverbs.verbs.Device;
import java.util.List;

/** {@code devices}: lists the RDMA devices, as {@code ibv_devices} does. */
final class Devices {
    private Devices() {
    }

    static int main(String[] args) {
        for (String a : args) {
            if (a.equals("-h") || a.equals("--help")) {
                System.out.println("Usage: devices\n  Lists the RDMA devices on this host, as ibv_devices does.");
                return 0;
            }
            System.err.println("devices: unexpected argument " + a);
            return 1;
        }
        List<Device> devices = Device.list();
        System.out.printf("    %-16s\t    %s%n", "device", "node GUID");
        System.out.printf("    %-16s\t%s%n", "------", "----------------");
        for (Device d : devices) {
            System.out.printf("    %-16s\t%016x%n", d.name(), d.guid());
        }
        return 0;
    }
}
