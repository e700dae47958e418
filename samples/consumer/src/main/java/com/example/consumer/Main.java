package com.example.consumer;

import io.github.panamaverbs.verbs.AccessFlag;
import io.github.panamaverbs.verbs.CompletionQueue;
import io.github.panamaverbs.verbs.ConnectOptions;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.Device;
import io.github.panamaverbs.verbs.GidEntry;
import io.github.panamaverbs.verbs.GidType;
import io.github.panamaverbs.verbs.MemoryRegion;
import io.github.panamaverbs.verbs.ProtectionDomain;
import io.github.panamaverbs.verbs.QpInitAttributes;
import io.github.panamaverbs.verbs.QpType;
import io.github.panamaverbs.verbs.QueuePair;
import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.VerbsException;
import io.github.panamaverbs.verbs.WcStatus;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * Lists the RDMA devices, opens the one that RDMA_DEVICE names (or the first), and RDMA-writes
 * 4 KiB from one RC queue pair to another on it; checks every byte. Exit status 0 if they arrived,
 * 1 if not, 2 if there is no device.
 */
public final class Main {
    private static final int SIZE = 4096;

    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run());
    }

    static int run() {
        String where = Main.class.getModule().isNamed() ? "module path (" + Main.class.getModule().getName() + ")" : "class path";
        System.out.println("consumer on the " + where + ", panama-verbs from "
                + Device.class.getProtectionDomain().getCodeSource().getLocation());
        List<Device> devices = Device.list();
        for (Device d : devices) {
            System.out.println("device " + d.name() + ": " + d.transport() + ", node GUID " + d.guidString());
        }
        String name = System.getenv("RDMA_DEVICE");
        if (name == null || name.isEmpty()) {
            if (devices.isEmpty()) {
                System.err.println("no RDMA device (samples/run doctor says why)");
                return 2;
            }
            name = devices.getFirst().name();
        }
        int port = Integer.parseInt(System.getenv().getOrDefault("RDMA_PORT", "1"));
        try (Context ctx = Device.open(name);
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             CompletionQueue cq = ctx.createCompletionQueue(16);
             QueuePair a = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq));
             QueuePair b = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq));
             MemoryRegion src = pd.allocateAndRegister(SIZE);
             MemoryRegion dst = pd.allocateAndRegister(SIZE, AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_WRITE)) {
            ConnectOptions how = ConnectOptions.port(port).gidIndex(gidIndex(ctx, port));
            a.connect(b.localEndpoint(how), how);
            b.connect(a.localEndpoint(how), how);

            for (int i = 0; i < SIZE; i++) {
                src.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
            }
            a.postSend(new SendRequest(1).opcode(SendOpcode.RDMA_WRITE).signaled(true)
                    .sge(src, 0, SIZE).rdma(dst.address(), dst.rkey()));
            WorkCompletions wc = new WorkCompletions(4);
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (cq.poll(wc) == 0) {
                if (System.nanoTime() > deadline) {
                    System.err.println("FAILED: no completion within 10 s");
                    return 1;
                }
                Thread.onSpinWait();
            }
            if (wc.status(0) != WcStatus.SUCCESS) {
                System.err.println("FAILED: completion " + wc.status(0));
                return 1;
            }
            long mismatch = src.segment().mismatch(dst.segment());
            if (mismatch != -1) {
                System.err.println("FAILED: byte " + mismatch + " differs");
                return 1;
            }
            System.out.println("OK: RDMA write of " + SIZE + " bytes on " + name + " port " + port + " arrived intact");
            return 0;
        } catch (VerbsException e) {
            System.err.println("FAILED: " + e.getMessage());
            return 1;
        }
    }

    /** RDMA_GID_INDEX, else the port's first RoCE v2 GID, else 0 (InfiniBand, iWARP). */
    private static int gidIndex(Context ctx, int port) {
        String env = System.getenv("RDMA_GID_INDEX");
        if (env != null && !env.isEmpty()) {
            return Integer.parseInt(env);
        }
        return ctx.gidTable().stream().filter(g -> g.port() == port && g.type() == GidType.ROCE_V2)
                .mapToInt(GidEntry::index).findFirst().orElse(0);
    }
}
