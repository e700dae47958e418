package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_device;
import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Native;
import io.github.panamaverbs.internal.NativeLibraries;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * An RDMA device present on this host, as {@code ibv_get_device_list} reports it: a snapshot of
 * its name and identity. {@link #open()} it to get a {@link Context}, through which everything else
 * is created.
 *
 * <pre>{@code
 * for (Device d : Device.list()) {
 *     System.out.println(d.name() + " " + d.guidString() + " " + d.transport());
 * }
 * try (Context ctx = Device.open("rxe0")) { ... }
 * }</pre>
 *
 * @param name       the kernel's name for the device ({@code rxe0}, {@code mlx5_0}, {@code siw0})
 * @param guid       the node GUID, in host byte order ({@code ibv_get_device_guid}); 0 if it has none
 * @param nodeType   what kind of node it is
 * @param transport  the transport it speaks (RoCE devices report {@link TransportType#IB})
 * @param devName    the uverbs device name ({@code uverbs0})
 * @param devPath    the uverbs sysfs path
 * @param ibdevPath  the infiniband device's sysfs path
 */
public record Device(String name, long guid, NodeType nodeType, TransportType transport,
                     String devName, String devPath, String ibdevPath) {

    /** Made on first use, after {@link NativeLibraries#require()}: this record's class loads without rdma-core. */
    private static final class Handles {
        static final MethodHandle GET_DEVICE_LIST = Native.withErrno(
                Verbs.ibv_get_device_list$address(), Verbs.ibv_get_device_list$descriptor());
        static final MethodHandle FREE_DEVICE_LIST = Native.plain(
                Verbs.ibv_free_device_list$address(), Verbs.ibv_free_device_list$descriptor());
        static final MethodHandle OPEN_DEVICE = Native.withErrno(
                Verbs.ibv_open_device$address(), Verbs.ibv_open_device$descriptor());
        static final MethodHandle FORK_INIT = Native.plain(
                Verbs.ibv_fork_init$address(), Verbs.ibv_fork_init$descriptor());
        static final MethodHandle IS_FORK_INITIALIZED = Native.plain(
                Verbs.ibv_is_fork_initialized$address(), Verbs.ibv_is_fork_initialized$descriptor());
    }

    /** {@code enum ibv_fork_status}: whether memory registered with the device survives a {@code fork()}. */
    public enum ForkStatus {
        /** {@code IBV_FORK_DISABLED}: a child process that touches registered pages can corrupt the parent's transfers. */
        DISABLED,
        /** {@code IBV_FORK_ENABLED}: {@link #forkInit()} made registered pages {@code MADV_DONTFORK}. */
        ENABLED,
        /** {@code IBV_FORK_UNNEEDED}: the kernel keeps registered pages safe across {@code fork()} (Linux 5.13 on). */
        UNNEEDED
    }

    /**
     * {@code ibv_fork_init}: makes the memory registered from now on safe across {@code fork()} (it is
     * marked {@code MADV_DONTFORK}: the child does not see it), where the kernel does not already do
     * so. Call it before opening any device; it costs a system call per registration. A JVM forks to
     * start processes ({@code ProcessBuilder} uses {@code posix_spawn} or {@code vfork}, which do not
     * copy pages, on Linux), so it matters only where native code forks. Also enabled by the
     * environment variables {@code RDMAV_FORK_SAFE} or {@code IBV_FORK_SAFE}.
     *
     * @throws VerbsException if {@code ibv_fork_init} fails (EINVAL: a device was opened before it, which
     *                        rdma-core 44 reports even where the kernel makes it unneeded), or
     *                        rdma-core's libraries cannot be loaded
     */
    public static void forkInit() {
        NativeLibraries.require();
        int rc;
        try {
            rc = (int) Handles.FORK_INIT.invokeExact();
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
        if (rc != 0) {
            throw new VerbsException("ibv_fork_init", rc, rc == io.github.panamaverbs.internal.Errno.EINVAL
                    ? "call it before the first device is opened" : null);
        }
    }

    /**
     * {@code ibv_is_fork_initialized}: whether registered memory is fork-safe in this process.
     *
     * @return the status
     * @throws VerbsException if rdma-core's libraries cannot be loaded
     */
    public static ForkStatus forkStatus() {
        NativeLibraries.require();
        int s;
        try {
            s = (int) Handles.IS_FORK_INITIALIZED.invokeExact();
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
        return ForkStatus.values()[s];
    }

    /**
     * The RDMA devices on this host ({@code ibv_get_device_list}). An empty list where the host has
     * none, including when the kernel has no RDMA support at all.
     *
     * @return the devices, an unmodifiable list
     * @throws VerbsException if rdma-core's libraries cannot be loaded (naming the missing one and how to
     *                        install it), or if listing fails for another reason
     */
    public static List<Device> list() {
        return withDeviceList(devices -> {
            List<Device> result = new ArrayList<>(devices.size());
            for (MemorySegment d : devices) {
                result.add(describe(d));
            }
            return List.copyOf(result);
        });
    }

    /**
     * Opens the device called {@code name} ({@code ibv_open_device}).
     *
     * @param name the kernel's name for the device, such as {@code rxe0} or {@code mlx5_0}
     * @return the open context; close it after everything created from it
     * @throws IllegalArgumentException if {@code name} is null or empty
     * @throws VerbsException           naming the devices that exist if there is none of that name, if
     *                                  opening fails, or if rdma-core's libraries cannot be loaded
     */
    public static Context open(String name) {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("device name is empty");
        }
        return withDeviceList(devices -> {
            for (MemorySegment d : devices) {
                if (name.equals(ibv_device.name(d).getString(0))) {
                    return openDevice(d);
                }
            }
            String found = devices.isEmpty() ? "none"
                    : devices.stream().map(d -> ibv_device.name(d).getString(0)).collect(Collectors.joining(", "));
            throw new VerbsException("ibv_open_device", Errno.ENODEV, "no RDMA device named " + name + "; found: " + found
                    + (devices.isEmpty() ? " (" + openHint(Errno.ENODEV) + ")" : ""));
        });
    }

    /**
     * Opens this device ({@code ibv_open_device}); see {@link #open(String)}.
     *
     * @return the open context; close it after everything created from it
     * @throws VerbsException if the device is gone or opening fails
     */
    public Context open() {
        return open(name);
    }

    /** {@return the node GUID as {@code ibv_devinfo} prints it: four groups of four hex digits} */
    public String guidString() {
        return formatGuid(guid);
    }

    static String formatGuid(long guid) {
        String hex = HexFormat.of().toHexDigits(guid);
        return hex.substring(0, 4) + ':' + hex.substring(4, 8) + ':' + hex.substring(8, 12) + ':' + hex.substring(12);
    }

    static Device describe(MemorySegment d) {
        long beGuid;
        try {
            beGuid = (long) Verbs.ibv_get_device_guid$handle().invokeExact(d);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
        return new Device(ibv_device.name(d).getString(0), Long.reverseBytes(beGuid),
                NodeType.of(ibv_device.node_type(d)), TransportType.of(ibv_device.transport_type(d)),
                ibv_device.dev_name(d).getString(0), ibv_device.dev_path(d).getString(0),
                ibv_device.ibdev_path(d).getString(0));
    }

    private static Context openDevice(MemorySegment device) {
        MemorySegment ctx = Native.create("ibv_open_device", Device::openHint,
                c -> (MemorySegment) Handles.OPEN_DEVICE.invokeExact(c.errno(), device));
        return new Context(ctx, describe(device));
    }

    static String openHint(int errno) {
        return switch (errno) {
            case Errno.ENOSYS, Errno.ENODEV -> "no RDMA support: the kernel has no RDMA devices "
                    + "(load rdma_rxe or siw, or run under scripts/with-rdma)";
            case Errno.EACCES, Errno.EPERM -> "no permission for /dev/infiniband/uverbs*";
            default -> null;
        };
    }

    /**
     * Runs {@code action} over the device list and frees the list afterwards. Where the kernel has
     * no RDMA support, {@code ibv_get_device_list} returns NULL (errno ENOSYS): that is an empty
     * list here, and NULL is never passed to {@code ibv_free_device_list}.
     */
    private static <T> T withDeviceList(Function<List<MemorySegment>, T> action) {
        NativeLibraries.require();
        return Native.call(c -> {
            MemorySegment count = c.allocate(JAVA_INT);
            MemorySegment list = (MemorySegment) Handles.GET_DEVICE_LIST.invokeExact(c.errno(), count);
            if (list.address() == 0) {
                int e = c.lastErrno();
                if (e == Errno.ENOSYS || e == Errno.ENODEV || e == Errno.ENOENT || e == 0) {
                    return action.apply(List.of());
                }
                throw Native.fail("ibv_get_device_list", e, Native.NO_HINT);
            }
            try {
                int n = count.get(JAVA_INT, 0);
                MemorySegment array = list.reinterpret(ADDRESS.byteSize() * n);
                List<MemorySegment> devices = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    devices.add(array.getAtIndex(ADDRESS, i).reinterpret(ibv_device.sizeof()));
                }
                return action.apply(devices);
            } finally {
                Handles.FREE_DEVICE_LIST.invokeExact(list);
            }
        });
    }
}
