package io.github.panamaverbs.internal;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.FlightRecorder;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Period;
import jdk.jfr.StackTrace;

/**
 * The library's Java Flight Recorder events, category "RDMA": what operators need to see of the
 * control path (queue pair states, registrations, async and connection-manager events, failed
 * verbs) and a periodic event with each active port's counters. Nothing here is on the data path:
 * posting and polling commit no event (a failed post's {@link VerbError} aside).
 *
 * <p>The events are enabled by default, as every custom event; {@code jfr print --categories RDMA}
 * or {@code jfr summary} shows them in a recording.
 */
public final class Jfr {
    private static final String PREFIX = "io.github.panamaverbs.";
    private static final Path SYSFS = Path.of("/sys/class/infiniband");

    private Jfr() {
    }

    /** A queue pair moved from one state to another (modify_qp, or the connection manager's transitions). */
    @Name(PREFIX + "QueuePairState")
    @Label("Queue Pair State")
    @Category("RDMA")
    @Description("A queue pair changed state: the modify_qp call's duration, or the connection manager's transition")
    @StackTrace(false)
    public static final class QueuePairState extends Event {
        @Label("Device")
        public String device;
        @Label("QP Number")
        public int qpNumber;
        @Label("QP Type")
        public String type;
        @Label("From")
        public String from;
        @Label("To")
        public String to;
    }

    /** A memory registration: how many bytes, with which rights, and how long the kernel took to pin them. */
    @Name(PREFIX + "MemoryRegistration")
    @Label("Memory Registration")
    @Category("RDMA")
    @Description("Memory registered with the device (ibv_reg_mr and its variants, ibv_rereg_mr): pinning is the duration")
    @StackTrace(false)
    public static final class MemoryRegistration extends Event {
        @Label("Device")
        public String device;
        @Label("Verb")
        public String verb;
        @Label("Bytes")
        @Description("The length registered; -1 for the whole address space (implicit On-Demand Paging)")
        @DataAmount
        public long bytes;
        @Label("Access")
        public String access;
        @Label("lkey")
        public int lkey;
        @Label("rkey")
        public int rkey;
    }

    /** An asynchronous event read from a context ({@code ibv_get_async_event}). */
    @Name(PREFIX + "AsyncEvent")
    @Label("Async Event")
    @Category("RDMA")
    @Description("An asynchronous event of a device, as the application read it")
    @StackTrace(false)
    public static final class AsyncEvent extends Event {
        @Label("Device")
        public String device;
        @Label("Type")
        public String type;
        @Label("Element")
        @Description("What the event is about: a queue pair, completion queue or shared receive queue, or a port")
        public String element;
    }

    /** A connection-manager event ({@code rdma_get_cm_event}). */
    @Name(PREFIX + "CmEvent")
    @Label("Connection Manager Event")
    @Category("RDMA")
    @Description("An event of the RDMA connection manager, as the application read it")
    @StackTrace(false)
    public static final class CmEvent extends Event {
        @Label("Type")
        public String type;
        @Label("Status")
        public int status;
        @Label("Port Space")
        public String portSpace;
        @Label("Remote QP Number")
        public int remoteQpNumber;
        @Label("Private Data")
        @DataAmount
        public int privateDataLength;
    }

    /** A verb failed: the exception the application gets, as an event. */
    @Name(PREFIX + "VerbError")
    @Label("Verb Error")
    @Category("RDMA")
    @Description("A verb failed (a VerbsException was made): the verb, its errno and the message")
    public static final class VerbError extends Event {
        @Label("Verb")
        public String verb;
        @Label("errno")
        public int errno;
        @Label("errno Name")
        public String errnoName;
        @Label("Message")
        public String message;
    }

    /** One counter of an active port, from sysfs, at the start and end of every recording chunk. */
    @Name(PREFIX + "PortCounter")
    @Label("Port Counter")
    @Category("RDMA")
    @Description("A counter of an active RDMA port, read from /sys/class/infiniband/<device>/ports/<port>/"
            + "counters or hw_counters (packets, retries, errors: whatever the device exposes)")
    @Period("everyChunk")
    @StackTrace(false)
    public static final class PortCounter extends Event {
        @Label("Device")
        public String device;
        @Label("Port")
        public int port;
        @Label("Group")
        @Description("counters (the InfiniBand port counters) or hw_counters (the driver's own)")
        public String group;
        @Label("Counter")
        public String counter;
        @Label("Value")
        public long value;
    }

    private static final class Periodic {
        static {
            FlightRecorder.addPeriodicEvent(PortCounter.class, Jfr::emitPortCounters);
        }

        static void init() {
        }
    }

    /** Registers the periodic port counter event (once; called when a device is opened). */
    public static void init() {
        Periodic.init();
    }

    private static void emitPortCounters() {
        if (!Files.isDirectory(SYSFS)) {
            return;
        }
        try (DirectoryStream<Path> devices = Files.newDirectoryStream(SYSFS)) {
            for (Path dev : devices) {
                Path ports = dev.resolve("ports");
                if (!Files.isDirectory(ports)) {
                    continue;
                }
                try (DirectoryStream<Path> ps = Files.newDirectoryStream(ports)) {
                    for (Path port : ps) {
                        if (!read(port.resolve("state")).contains("ACTIVE")) {
                            continue;
                        }
                        int n = Integer.parseInt(port.getFileName().toString());
                        for (String group : new String[] {"counters", "hw_counters"}) {
                            emitGroup(dev.getFileName().toString(), n, group, port.resolve(group));
                        }
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            // sysfs changed under us (a device went away): this period's counters are skipped
        }
    }

    private static void emitGroup(String device, int port, String group, Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return;
        }
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path f : files) {
                if (!Files.isRegularFile(f)) {
                    continue;
                }
                long value;
                try {
                    value = Long.parseLong(read(f).trim());
                } catch (NumberFormatException | IOException e) {
                    continue; // a counter the driver cannot read now (EINVAL), or not a number
                }
                PortCounter e = new PortCounter();
                e.device = device;
                e.port = port;
                e.group = group;
                e.counter = f.getFileName().toString();
                e.value = value;
                e.commit();
            }
        }
    }

    private static String read(Path f) throws IOException {
        try {
            return Files.readString(f);
        } catch (IOException e) {
            if (Files.exists(f)) {
                throw e;
            }
            return "";
        }
    }
}
