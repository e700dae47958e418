package io.github.panamaverbs.diagnostics;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.github.panamaverbs.access.VerbsAccess;
import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.internal.NativeLibraries;
import io.github.panamaverbs.internal.Quirks;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.Device;
import io.github.panamaverbs.verbs.GidEntry;
import io.github.panamaverbs.verbs.GidType;
import io.github.panamaverbs.verbs.LinkLayer;
import io.github.panamaverbs.verbs.PortAttributes;
import io.github.panamaverbs.verbs.PortState;
import io.github.panamaverbs.verbs.TransportType;
import io.github.panamaverbs.verbs.VerbsException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Diagnoses why RDMA does not work on this host, as {@code samples/run doctor} prints it: the
 * rdma-core libraries and their versions, the kernel modules, {@code /dev/infiniband}, the devices
 * and their ports, the GID table's RoCE v2 entries, {@code RLIMIT_MEMLOCK}, and whether native
 * access is enabled. Each problem found comes with the command that fixes it.
 *
 * <pre>{@code
 * Doctor.Report report = Doctor.check();
 * System.out.print(report);            // one line per finding, with the fix under each problem
 * if (!report.healthy()) { ... }
 * }</pre>
 *
 * <p>Never throws for what it finds: a missing library, no device or no permission is a finding.
 * It does not change anything on the host.
 */
public final class Doctor {
    /** RLIMIT_MEMLOCK on Linux (x86-64 and aarch64). */
    private static final int RLIMIT_MEMLOCK = 8;
    /** Below this memlock limit, registering a modest buffer pool fails: worth a warning. */
    static final long MEMLOCK_WARN_BELOW = 64L << 20;
    private static final int CAP_IPC_LOCK = 14;
    private static final Path DEV_INFINIBAND = Path.of("/dev/infiniband");
    private static final Path SYS_INFINIBAND = Path.of("/sys/class/infiniband");
    private static final List<String> KERNEL_MODULES = List.of("ib_uverbs", "rdma_ucm", "rdma_rxe", "siw");

    private Doctor() {
    }

    /** How a finding stands. */
    public enum Status {
        /** Fine. */
        OK,
        /** Worth knowing, nothing to fix. */
        INFO,
        /** Works, but may fail for larger uses or in a later JDK; see the fix. */
        WARNING,
        /** RDMA will not work (or not fully) until the fix is applied. */
        PROBLEM
    }

    /**
     * One thing checked.
     *
     * @param check  what was checked: {@code libraries}, {@code kernel modules}, {@code /dev/infiniband},
     *               {@code devices}, {@code ports}, {@code GID table}, {@code memlock}, {@code native access}
     * @param status how it stands
     * @param detail what was found
     * @param fix    the command (or step) that fixes it; {@code null} for {@link Status#OK} and {@link Status#INFO}
     */
    public record Finding(String check, Status status, String detail, String fix) {
        /**
         * Checks that a warning or a problem has a fix.
         *
         * @throws IllegalArgumentException if a {@link Status#WARNING} or {@link Status#PROBLEM} has no fix
         */
        public Finding {
            Objects.requireNonNull(check, "check");
            Objects.requireNonNull(status, "status");
            Objects.requireNonNull(detail, "detail");
            if ((status == Status.WARNING || status == Status.PROBLEM) && (fix == null || fix.isBlank())) {
                throw new IllegalArgumentException("a " + status + " needs a fix: " + detail);
            }
        }

        @Override
        public String toString() {
            String line = String.format("%-8s %-16s %s", status, check, detail);
            return fix == null ? line : line + "\n         fix: " + fix;
        }
    }

    /**
     * What {@link #check()} found.
     *
     * @param findings every finding, in the order checked
     */
    public record Report(List<Finding> findings) {
        /**
         * Copies the list.
         *
         * @throws NullPointerException if {@code findings} or one of them is null
         */
        public Report {
            findings = List.copyOf(findings);
        }

        /** {@return whether nothing is a {@link Status#PROBLEM}} */
        public boolean healthy() {
            return problems().isEmpty();
        }

        /** {@return whether nothing is a {@link Status#PROBLEM} or a {@link Status#WARNING}} */
        public boolean allGreen() {
            return findings.stream().noneMatch(f -> f.status() == Status.PROBLEM || f.status() == Status.WARNING);
        }

        /** {@return the findings that are problems} */
        public List<Finding> problems() {
            return findings.stream().filter(f -> f.status() == Status.PROBLEM).toList();
        }

        /**
         * The findings of one check.
         *
         * @param check the check's name, as in {@link Finding#check()}: {@code libraries}, {@code devices}, …
         * @return its findings, in the order checked; empty for an unknown name
         */
        public List<Finding> of(String check) {
            return findings.stream().filter(f -> f.check().equals(check)).toList();
        }

        /** One line per finding, the fix under each warning and problem, and a closing verdict. */
        @Override
        public String toString() {
            StringBuilder sb = new StringBuilder();
            for (Finding f : findings) {
                sb.append(f).append('\n');
            }
            long problems = problems().size();
            long warnings = findings.stream().filter(f -> f.status() == Status.WARNING).count();
            sb.append(problems == 0 && warnings == 0 ? "all checks passed"
                    : problems + " problem(s), " + warnings + " warning(s): run the commands after 'fix:'").append('\n');
            return sb.toString();
        }
    }

    /**
     * Runs every check. Never throws for what it finds, and changes nothing on the host.
     *
     * @return the findings, in the order checked
     */
    public static Report check() {
        List<Finding> out = new ArrayList<>();
        boolean libraries = libraries(out);
        kernelModules(out);
        devInfiniband(out);
        if (libraries) {
            devices(out);
        } else {
            out.add(new Finding("devices", Status.PROBLEM, "not listed: rdma-core's libraries are missing (see above)",
                    NativeLibraries.install(NativeLibraries.LIBIBVERBS)));
        }
        memlock(out);
        nativeAccess(out);
        return new Report(out);
    }

    // ---- libraries

    private static boolean libraries(List<Finding> out) {
        boolean all = true;
        for (String library : NativeLibraries.ALL) {
            if (!NativeLibraries.loads(library)) {
                all = false;
                out.add(new Finding("libraries", Status.PROBLEM, library + " not found", NativeLibraries.install(library)));
                continue;
            }
            Optional<Path> file = loadedFile(library);
            String where = file.map(f -> f + version(f)).orElse("loaded");
            out.add(new Finding("libraries", Status.OK, library + ": " + where, null));
        }
        if (all) {
            providers(out);
        }
        return all;
    }

    private static Optional<Path> loadedFile(String library) {
        return Quirks.loadedFile(library);
    }

    /** " (rdma-core 44)" for libibverbs.so.1.14.44.0: rdma-core puts its release in the file name. */
    static String version(Path file) {
        Matcher m = Pattern.compile("\\.so\\.(\\d+)\\.(\\d+)\\.(\\d+)\\.(\\d+)$").matcher(file.getFileName().toString());
        return m.find() ? " (version " + m.group(1) + "." + m.group(2) + "." + m.group(3) + "." + m.group(4)
                + ", rdma-core " + m.group(3) + ")" : "";
    }


    /** The device providers (librxe-rdmav34.so, libmlx5-rdmav34.so …) beside libibverbs. */
    private static void providers(List<Finding> out) {
        Optional<Path> dir = loadedFile(NativeLibraries.LIBIBVERBS).map(f -> f.resolveSibling("libibverbs"));
        if (dir.isEmpty()) {
            return;
        }
        List<String> names = list(dir.get()).stream().map(p -> p.getFileName().toString())
                .filter(n -> n.contains("-rdmav")).map(n -> n.substring(3, n.indexOf("-rdmav"))).sorted().toList();
        if (names.isEmpty()) {
            out.add(new Finding("libraries", Status.PROBLEM, "no device providers in " + dir.get()
                    + ": libibverbs finds no device without them",
                    "sudo apt-get install ibverbs-providers (Debian, Ubuntu) or sudo dnf install libibverbs (RHEL, Fedora)"));
        } else {
            out.add(new Finding("libraries", Status.OK, "device providers: " + String.join(" ", names), null));
        }
    }

    // ---- kernel

    private static void kernelModules(List<Finding> out) {
        Set<String> loaded = new LinkedHashSet<>();
        try (Stream<String> lines = Files.lines(Path.of("/proc/modules"))) {
            lines.map(l -> l.split(" ", 2)[0]).forEach(loaded::add);
        } catch (IOException | RuntimeException e) {
            // no /proc/modules (a kernel without modules): /sys/module still lists the built-in ones
        }
        List<String> present = new ArrayList<>();
        for (String module : KERNEL_MODULES) {
            if (loaded.contains(module) || Files.isDirectory(Path.of("/sys/module", module))) {
                present.add(module);
            }
        }
        String detail = "loaded: " + (present.isEmpty() ? "none" : String.join(" ", present))
                + " (of " + String.join(" ", KERNEL_MODULES) + ")";
        boolean hardware = !list(SYS_INFINIBAND).isEmpty();
        if (!present.contains("ib_uverbs")) {
            out.add(new Finding("kernel modules", Status.PROBLEM, detail + "; ib_uverbs is what user space talks to",
                    "sudo modprobe ib_uverbs"));
        } else if (!hardware && !present.contains("rdma_rxe") && !present.contains("siw")) {
            out.add(new Finding("kernel modules", Status.PROBLEM, detail + "; no RDMA device, and no software one loaded",
                    addSoftDevice()));
        } else {
            out.add(new Finding("kernel modules", Status.OK, detail, null));
        }
        if (present.contains("ib_uverbs") && !present.contains("rdma_ucm")) {
            out.add(new Finding("kernel modules", Status.WARNING, "rdma_ucm not loaded: the connection manager (io.github.panamaverbs.cm) will not work",
                    "sudo modprobe rdma_ucm"));
        }
    }

    /** The commands that make a Soft-RoCE device on the first network interface that is up. */
    static String addSoftDevice() {
        String netdev = list(Path.of("/sys/class/net")).stream().map(p -> p.getFileName().toString())
                .filter(n -> !n.equals("lo")).filter(n -> read(Path.of("/sys/class/net", n, "operstate")).equals("up"))
                .findFirst().orElse("eth0");
        return "sudo modprobe rdma_rxe && sudo rdma link add rxe0 type rxe netdev " + netdev
                + "   (Soft-RoCE on " + netdev + "; or, in the panama-verbs repository, run the command under "
                + "scripts/with-rdma, which boots a VM that has one)";
    }

    private static void devInfiniband(List<Finding> out) {
        List<Path> files = list(DEV_INFINIBAND);
        if (files.isEmpty()) {
            out.add(new Finding("/dev/infiniband", Status.PROBLEM, "missing or empty: no device node to open",
                    "sudo modprobe ib_uverbs rdma_ucm, and create a device (see 'kernel modules' and 'devices')"));
            return;
        }
        List<String> denied = new ArrayList<>();
        for (Path f : files) {
            if (!Files.isReadable(f) || !Files.isWritable(f)) {
                denied.add(f.toString());
            }
        }
        String names = files.stream().map(p -> p.getFileName().toString()).collect(Collectors.joining(" "));
        if (denied.isEmpty()) {
            out.add(new Finding("/dev/infiniband", Status.OK, names + ": readable and writable", null));
        } else {
            out.add(new Finding("/dev/infiniband", Status.PROBLEM, "no read/write permission on " + String.join(" ", denied),
                    "sudo chmod 0666 " + String.join(" ", denied) + "   (or for good: rdma-core's udev rules, "
                    + "or 'sudo usermod -aG rdma $USER' where the device nodes belong to group rdma)"));
        }
        if (files.stream().noneMatch(p -> p.getFileName().toString().equals("rdma_cm"))) {
            out.add(new Finding("/dev/infiniband", Status.WARNING, "no rdma_cm: the connection manager will not work",
                    "sudo modprobe rdma_ucm"));
        }
    }

    // ---- devices, ports, GIDs

    private static void devices(List<Finding> out) {
        List<Device> devices;
        try {
            devices = Device.list();
        } catch (VerbsException e) {
            out.add(new Finding("devices", Status.PROBLEM, "listing failed: " + e.getMessage(), addSoftDevice()));
            return;
        }
        if (devices.isEmpty()) {
            out.add(new Finding("devices", Status.PROBLEM, "no RDMA device on this host", addSoftDevice()));
            return;
        }
        for (Device device : devices) {
            try (Context ctx = device.open()) {
                int ports = ctx.queryDevice().physPortCnt();
                out.add(new Finding("devices", Status.OK, device.name() + ": " + device.transport() + ", "
                        + ports + " port(s), node GUID " + device.guidString(), null));
                quirks(out, device, VerbsAccess.get().quirks(ctx));
                List<GidEntry> gids;
                try {
                    gids = ctx.gidTable();
                } catch (VerbsException e) {
                    gids = List.of();
                    out.add(new Finding("GID table", Status.INFO, device.name() + ": not readable: " + e.getMessage(), null));
                }
                for (int port = 1; port <= ports; port++) {
                    port(out, device, ctx.queryPort(port), port, gids);
                }
            } catch (VerbsException e) {
                out.add(new Finding("devices", Status.PROBLEM, device.name() + ": cannot open: " + e.getMessage(),
                        "check the permissions on /dev/infiniband (above), or 'ulimit -l' if the error says ENOMEM"));
            }
        }
    }

    /**
     * The provider bugs of the API's table ({@link Quirks}) that affect {@code device} ({@code quirks}),
     * as information: the API works around each (a type 2 window allocated on
     * Soft-RoCE with the opt-in logs a warning itself).
     */
    private static void quirks(List<Finding> out, Device device, Set<Quirks> quirks) {
        for (Quirks q : Quirks.values()) {
            if (quirks.contains(q)) {
                boolean panic = q == Quirks.RXE_TYPE2_WINDOW_INVALIDATE_PANIC;
                out.add(new Finding("provider quirks", Status.INFO, device.name() + ": " + q.summary(),
                        panic ? "use type 1 windows or memory regions on Soft-RoCE; never give a type 2 window's rkey "
                                + "to a peer you do not trust" : null));
            }
        }
    }

    private static void port(List<Finding> out, Device device, PortAttributes attrs, int port, List<GidEntry> gids) {
        String name = device.name() + " port " + port;
        String netdev = read(SYS_INFINIBAND.resolve(device.name()).resolve("ports").resolve(Integer.toString(port))
                .resolve("gid_attrs").resolve("ndevs").resolve("0"));
        boolean ethernet = attrs.linkLayer() == LinkLayer.ETHERNET;
        String onto = netdev.isEmpty() ? "" : " (netdev " + netdev + ")";
        if (attrs.state() == PortState.ACTIVE) {
            out.add(new Finding("ports", Status.OK, name + ": ACTIVE, " + attrs.linkLayer() + onto + ", active MTU "
                    + attrs.activeMtu(), null));
        } else {
            String fix = ethernet ? "sudo ip link set " + (netdev.isEmpty() ? "<netdev>" : netdev) + " up   (the port follows its network interface)"
                    : "start a subnet manager on the fabric: sudo systemctl start opensm";
            out.add(new Finding("ports", Status.PROBLEM, name + ": " + attrs.state() + onto, fix));
        }
        if (!ethernet) {
            out.add(new Finding("GID table", Status.INFO, name + ": InfiniBand link layer: RoCE v2 does not apply", null));
            return;
        }
        if (device.transport() == TransportType.IWARP) {
            out.add(new Finding("GID table", Status.INFO, name + ": iWARP: addressed by IP, RoCE v2 does not apply", null));
            return;
        }
        List<GidEntry> v2 = gids.stream().filter(g -> g.port() == port && g.type() == GidType.ROCE_V2).toList();
        if (v2.isEmpty()) {
            out.add(new Finding("GID table", Status.PROBLEM, name + ": no RoCE v2 GID: its network interface has no IP address",
                    "sudo ip addr add 192.0.2.1/24 dev " + (netdev.isEmpty() ? "<netdev>" : netdev)
                    + "   (an address of your network: RoCE v2 GIDs are made from the interface's IP addresses)"));
        } else {
            out.add(new Finding("GID table", Status.OK, name + ": " + v2.size() + " RoCE v2 GID(s): " + v2.stream()
                    .map(g -> "index " + g.index() + " " + g.gid()).collect(Collectors.joining(", ")), null));
        }
    }

    // ---- memlock

    private static void memlock(List<Finding> out) {
        long[] limit = getrlimitMemlock();
        boolean capIpcLock = hasCapIpcLock();
        String locked = statusField("VmLck");
        if (limit == null) {
            out.add(new Finding("memlock", Status.INFO, "RLIMIT_MEMLOCK could not be read", null));
            return;
        }
        String soft = bytes(limit[0]);
        String hard = bytes(limit[1]);
        String already = locked.isEmpty() ? "" : "; locked now: " + locked;
        if (limit[0] == -1L) {
            out.add(new Finding("memlock", Status.OK, "RLIMIT_MEMLOCK unlimited: registration is limited only by memory" + already, null));
        } else if (capIpcLock) {
            out.add(new Finding("memlock", Status.OK, "RLIMIT_MEMLOCK " + soft + " (hard " + hard
                    + "), but the process has CAP_IPC_LOCK: registration is not limited" + already, null));
        } else {
            String detail = "RLIMIT_MEMLOCK " + soft + " (hard " + hard + "): at most " + soft
                    + " can be registered (memory regions and queues, all together)" + already;
            String fix = limit[1] == -1L || limit[1] > limit[0]
                    ? "ulimit -l " + (limit[1] == -1L ? "unlimited" : Long.toString(limit[1] / 1024)) + "   (in the shell that starts java; "
                      + "for good: '* - memlock unlimited' in /etc/security/limits.conf, LimitMEMLOCK=infinity for a systemd "
                      + "service, --ulimit memlock=-1 for docker)"
                    : "raise the hard limit: '* - memlock unlimited' in /etc/security/limits.conf and log in again "
                      + "(LimitMEMLOCK=infinity for a systemd service, --ulimit memlock=-1 for docker)";
            out.add(new Finding("memlock", limit[0] < MEMLOCK_WARN_BELOW ? Status.WARNING : Status.OK, detail,
                    limit[0] < MEMLOCK_WARN_BELOW ? fix : null));
        }
    }

    /** {soft, hard} of RLIMIT_MEMLOCK, -1 meaning unlimited (RLIM_INFINITY); null if getrlimit failed. */
    static long[] getrlimitMemlock() {
        try (Arena arena = Arena.ofConfined()) {
            Linker linker = Linker.nativeLinker();
            MethodHandle getrlimit = linker.downcallHandle(linker.defaultLookup().find("getrlimit").orElseThrow(),
                    FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
            MemorySegment rlimit = arena.allocate(JAVA_LONG, 2);
            int rc = (int) getrlimit.invokeExact(RLIMIT_MEMLOCK, rlimit);
            return rc == 0 ? new long[] {rlimit.getAtIndex(JAVA_LONG, 0), rlimit.getAtIndex(JAVA_LONG, 1)} : null;
        } catch (Throwable t) {
            return null;
        }
    }

    private static boolean hasCapIpcLock() {
        String capEff = statusField("CapEff");
        try {
            return !capEff.isEmpty() && (Long.parseUnsignedLong(capEff, 16) & (1L << CAP_IPC_LOCK)) != 0;
        } catch (NumberFormatException e) {
            return false;
        }
    }

    private static String statusField(String name) {
        try (Stream<String> lines = Files.lines(Path.of("/proc/self/status"))) {
            return lines.filter(l -> l.startsWith(name + ":")).map(l -> l.substring(name.length() + 1).trim())
                    .findFirst().orElse("");
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }

    static String bytes(long n) {
        if (n == -1L) {
            return "unlimited";
        }
        if (n >= 1L << 30 && n % (1L << 30) == 0) {
            return (n >> 30) + " GiB";
        }
        if (n >= 1L << 20 && n % (1L << 20) == 0) {
            return (n >> 20) + " MiB";
        }
        return n >= 1024 && n % 1024 == 0 ? (n >> 10) + " KiB" : n + " bytes";
    }

    // ---- native access

    private static void nativeAccess(List<Finding> out) {
        Module api = Doctor.class.getModule();
        Module bindings = Verbs.class.getModule(); // the class, not initialized: no library is loaded here
        boolean named = api.isNamed();
        String flag = named ? "--enable-native-access=io.github.panamaverbs.bindings,io.github.panamaverbs"
                : "--enable-native-access=ALL-UNNAMED";
        List<String> off = new ArrayList<>();
        for (Module m : new LinkedHashSet<>(List.of(bindings, api))) {
            if (!m.isNativeAccessEnabled()) {
                off.add(m.isNamed() ? m.getName() : "the class path (unnamed module)");
            }
        }
        String where = named ? "module path" : "class path";
        if (off.isEmpty()) {
            out.add(new Finding("native access", Status.OK, "enabled (" + where + ")", null));
        } else {
            out.add(new Finding("native access", Status.WARNING, "not enabled for " + String.join(", ", off) + " (" + where
                    + "): the JVM warns on the first native call, and a later JDK will refuse it", "java " + flag + " ..."));
        }
    }

    // ---- files

    private static List<Path> list(Path dir) {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        List<Path> result = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            entries.forEach(result::add);
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
        result.sort(null);
        return result;
    }

    private static String read(Path file) {
        try {
            return Files.readString(file).trim();
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }
}
