package io.github.panamaverbs.samples.common;

import io.github.panamaverbs.cm.CmId;
import io.github.panamaverbs.cm.EventChannel;
import io.github.panamaverbs.cm.PortSpace;
import io.github.panamaverbs.verbs.CompletionQueue;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.Device;
import io.github.panamaverbs.verbs.GidEntry;
import io.github.panamaverbs.verbs.LinkLayer;
import io.github.panamaverbs.verbs.MemoryRegion;
import io.github.panamaverbs.verbs.Mtu;
import io.github.panamaverbs.verbs.ProtectionDomain;
import io.github.panamaverbs.verbs.QpInitAttributes;
import io.github.panamaverbs.verbs.QpType;
import io.github.panamaverbs.verbs.QueuePair;
import io.github.panamaverbs.verbs.ReceiveRequest;
import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;

/** What several tools share: picking the device, reading an MTU, the UD constants. */
public final class Common {
    /** The Q_Key both sides of a UD test use: the C ping-pongs' and perftest's (DEF_QKEY). */
    public static final int QKEY = 0x11111111;
    /** The bytes in front of every UD receive: the GRH, present or not (perftest's UD_ADDITION). */
    public static final int GRH_BYTES = 40;

    /** A tool's warm-up stops after this long, compiled or not (the peer waits meanwhile). */
    private static final long WARM_UP_NANOS = 8_000_000_000L;
    private static final CompilationMXBean JIT = ManagementFactory.getCompilationMXBean();

    private Common() {
    }

    /**
     * Whether the latency tools run their loop on a queue pair connected to itself before they talk
     * to the peer ({@link #untilCompiled}); {@code -Dpanamaverbs.samples.warmup=false} turns it off.
     */
    public static boolean warmUp() {
        return Boolean.parseBoolean(System.getProperty("panamaverbs.samples.warmup", "true"));
    }

    /**
     * The GID index for a queue pair connected to itself on {@code port}: {@code gidIndex} when one
     * was given, else on RoCE (which needs a GRH) the port's first GID, else -1 (InfiniBand: the LID).
     */
    public static int loopbackGidIndex(Context ctx, int port, int gidIndex) {
        if (gidIndex >= 0 || ctx.queryPort(port).linkLayer() != LinkLayer.ETHERNET) {
            return gidIndex;
        }
        return ctx.gidTable().stream().filter(e -> e.port() == port).mapToInt(GidEntry::index).min().orElse(-1);
    }

    /**
     * Runs {@code round} (a tool's own loop, a few hundred iterations of it on a queue pair connected
     * to itself) again until the JIT has compiled nothing for 300 ms of rounds, or 8 s (a quarter of
     * {@code peerTimeout}, if less) passed: the
     * peer's clock then starts on compiled code, with no compiler thread competing for the CPU,
     * instead of on the interpreter (a measured loop of 1,000 iterations ends before the JIT has
     * compiled it, most of all on a slow or emulated CPU).
     */
    public static void untilCompiled(Runnable round, Duration peerTimeout) {
        // the peer waits meanwhile, and gives up after its --timeout (the same as this side's, as a
        // rule): stop well before that, compiled or not
        long limit = Math.min(WARM_UP_NANOS, peerTimeout.toNanos() / 4);
        boolean measurable = JIT != null && JIT.isCompilationTimeMonitoringSupported();
        long start = System.nanoTime();
        long compiled = measurable ? JIT.getTotalCompilationTime() : 0;
        long changed = start;
        for (int i = 0; ; i++) {
            round.run();
            long t = System.nanoTime();
            long now = measurable ? JIT.getTotalCompilationTime() : i;
            if (now != compiled) {
                compiled = now;
                changed = t;
            }
            // quiet for a while, not for one round only: a compilation still running when a short
            // round ends has not counted yet (C2 takes hundreds of ms for a loop on an emulated CPU)
            if ((i > 0 && t - changed >= QUIET_NANOS) || (!measurable && i >= 8) || t - start > limit) {
                return;
            }
        }
    }

    /** How long the JIT must have compiled nothing for a warm-up to end. */
    private static final long QUIET_NANOS = 300_000_000L;

    /**
     * Runs the accept path once before listening, on the device that has {@code address} (nothing
     * for 0.0.0.0, every device): a protection domain, completion queue, queue pair, memory region
     * and work requests created and closed, so that the classes they need are loaded and
     * initialized before a client waits. Under an emulated CPU a cold JVM took over 10 s from a
     * connection request to its accept, and an iWARP peer gives up waiting for the MPA reply after 10 s.
     */
    public static void warmUpAccept(InetAddress address) {
        if (address.isAnyLocalAddress()) {
            return;
        }
        try (EventChannel ch = EventChannel.create(); CmId id = ch.createId(PortSpace.TCP)) {
            id.bind(new InetSocketAddress(address, 0));
            Context ctx = id.context();
            try (ProtectionDomain pd = ctx.allocateProtectionDomain();
                 CompletionQueue cq = ctx.createCompletionQueue(4);
                 QueuePair qp = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq).maxSendWr(1).maxRecvWr(1));
                 MemoryRegion mr = pd.allocateAndRegister(64)) {
                new ReceiveRequest(1).sge(mr, 0, 16);
                new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(mr, 16, 16);
                cq.poll(new WorkCompletions(1));
                qp.capabilities();
            }
        } catch (RuntimeException e) {
            // Only a warm-up: the real bind reports what is wrong.
        }
    }

    /** Opens device {@code name}, or the first one when it is null, with the C tools' messages. */
    public static Context openDevice(String name) {
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
    public static Mtu mtu(int bytes) {
        try {
            return Mtu.ofBytes(bytes);
        } catch (IllegalArgumentException e) {
            throw new Options.UsageException("--mtu: " + bytes + " is not one of 256, 512, 1024, 2048, 4096");
        }
    }
}
