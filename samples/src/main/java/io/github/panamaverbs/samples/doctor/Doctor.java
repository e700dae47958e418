package io.github.panamaverbs.samples.doctor;

import io.github.panamaverbs.samples.common.Options;
import java.io.PrintStream;

/**
 * {@code doctor}: why RDMA does or does not work on this host ({@link io.github.panamaverbs.diagnostics.Doctor}):
 * rdma-core libraries, kernel modules, /dev/infiniband, devices, ports, RoCE v2 GIDs, memlock and
 * native access, each problem with the command that fixes it. Exit status 0 when nothing is a
 * problem, 1 otherwise.
 */
public final class Doctor {
    private Doctor() {
    }

    /** Runs the tool with {@code args}, printing on {@code out}; returns the exit status. */
    public static int main(String[] args, PrintStream out) {
        for (String a : args) {
            if (a.equals("-h") || a.equals("--help")) {
                out.println("Usage: doctor\n  Checks what RDMA needs on this host (rdma-core libraries and versions, kernel modules,\n"
                        + "  /dev/infiniband, devices and ports, RoCE v2 GIDs, memlock, native access) and prints\n"
                        + "  the command that fixes each problem. Exit status 1 if there is a problem.");
                return 0;
            }
            throw new Options.UsageException("unexpected argument " + a);
        }
        io.github.panamaverbs.diagnostics.Doctor.Report report = io.github.panamaverbs.diagnostics.Doctor.check();
        out.print(report);
        return report.healthy() ? 0 : 1;
    }
}
