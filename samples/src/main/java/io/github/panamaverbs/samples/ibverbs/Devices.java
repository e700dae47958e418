package io.github.panamaverbs.samples.ibverbs;

import io.github.panamaverbs.samples.common.Options;
import io.github.panamaverbs.verbs.Device;
import java.io.PrintStream;
import java.util.List;

/** {@code devices}: lists the RDMA devices, as {@code ibv_devices} does. */
public final class Devices {
    private Devices() {
    }

    /** Runs the tool with {@code args}, printing on {@code out}; returns the exit status. */
    public static int main(String[] args, PrintStream out) {
        for (String a : args) {
            if (a.equals("-h") || a.equals("--help")) {
                out.println("Usage: devices\n  Lists the RDMA devices on this host, as ibv_devices does.");
                return 0;
            }
            throw new Options.UsageException("unexpected argument " + a);
        }
        List<Device> devices = Device.list();
        out.printf("    %-16s\t    %s%n", "device", "node GUID");
        out.printf("    %-16s\t%s%n", "------", "----------------");
        for (Device d : devices) {
            out.printf("    %-16s\t%016x%n", d.name(), d.guid());
        }
        return 0;
    }
}
