package io.github.panamaverbs.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.time.Duration;

/**
 * The one place for native call plumbing: downcall handles that capture {@code errno}, and how a
 * failed verb becomes a {@link VerbsException}.
 *
 * <p>Control-path verbs are called through handles made here from the generated bindings' address
 * and descriptor, with {@link Linker.Option#captureCallState(String...)} so that {@code errno} is read
 * right after the call, before the JVM can change it. Their first argument is the capture segment
 * (see {@link #errnoSegment(Arena)}).
 */
final class Native {
    static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");

    private static final MethodHandle POLL = withErrno(
            LINKER.defaultLookup().find("poll").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));

    private Native() {
    }

    /**
     * Waits until {@code fd} is readable or {@code timeout} passes: {@code poll(2)}, so that no
     * thread ever blocks forever in a verb that reads a file descriptor.
     *
     * @return true if readable, false on timeout
     */
    static boolean awaitReadable(int fd, Duration timeout, String what) {
        long deadline = System.nanoTime() + timeout.toNanos();
        try (Arena call = Arena.ofConfined()) {
            MemorySegment pollfd = call.allocate(8, 4); // struct pollfd { int fd; short events; short revents; }
            MemorySegment errno = errnoSegment(call);
            while (true) {
                long left = Math.max(0, deadline - System.nanoTime());
                int millis = (int) Math.min(Integer.MAX_VALUE, (left + 999_999) / 1_000_000);
                pollfd.set(ValueLayout.JAVA_INT, 0, fd);
                pollfd.set(ValueLayout.JAVA_SHORT, 4, (short) 1); // POLLIN
                pollfd.set(ValueLayout.JAVA_SHORT, 6, (short) 0);
                int rc = (int) POLL.invokeExact(errno, pollfd, 1L, millis);
                if (rc > 0) {
                    return true;
                }
                if (rc == 0) {
                    if (System.nanoTime() - deadline >= 0) {
                        return false;
                    }
                    continue;
                }
                int e = errno(errno);
                if (e != Errno.EINTR) {
                    throw fail("poll(" + what + ")", e);
                }
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** A downcall handle for a C function that sets errno: its first parameter is the capture segment. */
    static MethodHandle withErrno(MemorySegment address, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(address, descriptor, CAPTURE_ERRNO);
    }

    /** A plain downcall handle. */
    static MethodHandle plain(MemorySegment address, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(address, descriptor);
    }

    /** Space for the errno of one call. */
    static MemorySegment errnoSegment(Arena arena) {
        return arena.allocate(CAPTURE_LAYOUT);
    }

    /** The errno captured by the call that was given {@code capture}. */
    static int errno(MemorySegment capture) {
        return (int) ERRNO.get(capture, 0L);
    }

    /**
     * A {@link VerbsException} for {@code verb} failing with {@code errno}, with a hint for the
     * causes that are common enough to name.
     */
    static VerbsException fail(String verb, int errno) {
        return new VerbsException(verb, errno, hint(verb, errno));
    }

    static String hint(String verb, int errno) {
        if (errno == Errno.ENOMEM && (verb.contains("reg_mr") || verb.contains("create_cq")
                || verb.contains("create_qp") || verb.contains("create_srq"))) {
            return "registering memory pins it, and pinned memory is limited by RLIMIT_MEMLOCK: "
                    + "raise it with 'ulimit -l unlimited' (or memlock in /etc/security/limits.conf)";
        }
        if (errno == Errno.ENOSYS || errno == Errno.ENODEV && verb.equals("ibv_open_device")) {
            return "no RDMA support: the kernel has no RDMA devices (load rdma_rxe or siw, or run under scripts/with-rdma)";
        }
        if (errno == Errno.EACCES && verb.contains("open_device")) {
            return "no permission for /dev/infiniband/uverbs*";
        }
        if (errno == Errno.EINVAL && verb.equals("ibv_modify_qp")) {
            return "an attribute or the attribute mask is not valid for this state transition";
        }
        return null;
    }

    /**
     * Checks the int result of a verb. Verbs report failure either as a positive errno value
     * ({@code ibv_dealloc_pd}, {@code ibv_modify_qp}) or as -1 with errno set ({@code ibv_close_device});
     * both end here.
     */
    static void check(String verb, int rc, MemorySegment capture) {
        if (rc != 0) {
            throw fail(verb, rc > 0 ? rc : errno(capture));
        }
    }

    /**
     * Calls a destroy verb ({@code int verb(struct X *)}, errno-capturing handle) on {@code address}
     * and checks its result.
     */
    static void destroy(String verb, MethodHandle handle, MemorySegment address) {
        try (Arena call = Arena.ofConfined()) {
            MemorySegment errno = errnoSegment(call);
            int rc = (int) handle.invokeExact(errno, address);
            check(verb, rc, errno);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Re-throws what {@code invokeExact} threw: unchecked as is, anything else wrapped. */
    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException("unexpected exception from a native call", t);
    }
}
