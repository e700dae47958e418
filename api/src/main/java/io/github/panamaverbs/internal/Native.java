package io.github.panamaverbs.internal;

import io.github.panamaverbs.verbs.VerbsException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * The one place for control-path call plumbing: downcall handles that capture {@code errno}, the
 * one way to call a verb ({@link #check}, {@link #create}, {@link #call}), and how a failed verb
 * becomes a {@link VerbsException}. Not exported: the verbs and cm packages use it.
 *
 * <p>A control-path verb is a line:
 * <pre>{@code
 * Native.check("ibv_modify_srq", Native.NO_HINT, c -> (int) MODIFY.invokeExact(c.errno(), srq, attr, mask));
 * MemorySegment pd = Native.create("ibv_alloc_pd", Native.NO_HINT, c -> (MemorySegment) ALLOC_PD.invokeExact(c.errno(), ctx));
 * }</pre>
 * Each call gets a confined {@link Call} (an arena for its arguments and the errno capture
 * segment); the hint for a failure is chosen at the call site. The data path (post, poll) does not
 * come here: it allocates nothing and is in {@code DataPath}.
 */
public final class Native {
    public static final Linker LINKER = Linker.nativeLinker();
    static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    public static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");

    private static final MethodHandle POLL = withErrno(
            LINKER.defaultLookup().find("poll").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));

    /** int fcntl(int fd, int cmd, ...): only the int-argument form is used. */
    private static final MethodHandle FCNTL = LINKER.downcallHandle(
            LINKER.defaultLookup().find("fcntl").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
            CAPTURE_ERRNO, Linker.Option.firstVariadicArg(2));
    private static final int F_GETFL = 3;
    private static final int F_SETFL = 4;
    private static final int O_NONBLOCK = 0x800;
    /** Longest single poll(2) of {@link #awaitReadable}: how soon a waiter notices that its object was closed. */
    private static final int POLL_SLICE_MILLIS = 50;

    /** What a failed verb's errno probably means; null where nothing useful can be said. */
    @FunctionalInterface
    public interface Hint {
        String explain(int errno);
    }

    /** No hint. */
    public static final Hint NO_HINT = e -> null;

    /** For verbs that pin memory (registration, queue creation): the memlock limit. */
    public static final Hint MEMLOCK = e -> e == Errno.ENOMEM
            ? "registering memory pins it, and pinned memory is limited by RLIMIT_MEMLOCK: "
              + "raise it with 'ulimit -l unlimited' (or memlock in /etc/security/limits.conf)"
            : null;

    /** One control-path call: an arena for its arguments, and where {@code errno} is captured. */
    public static final class Call {
        private final Arena arena;
        private final MemorySegment errno;

        private Call(Arena arena) {
            this.arena = arena;
            this.errno = arena.allocate(CAPTURE_LAYOUT);
        }

        /** The capture segment: the first argument of every handle made by {@link #withErrno}. */
        public MemorySegment errno() {
            return errno;
        }

        /** Zeroed memory for this call's arguments and results, freed when the call returns. */
        public MemorySegment allocate(MemoryLayout layout) {
            return arena.allocate(layout);
        }

        /** Zeroed memory for {@code count} elements of {@code layout}. */
        public MemorySegment allocate(MemoryLayout layout, long count) {
            return arena.allocate(layout, count);
        }

        /** The arena of this call (e.g. for strings). */
        public Arena arena() {
            return arena;
        }

        /** The errno the call captured. */
        public int lastErrno() {
            return Native.errno(errno);
        }
    }

    /** The body of a call returning a value. */
    @FunctionalInterface
    public interface Body<T> {
        T run(Call call) throws Throwable;
    }

    /** The body of a call to a verb that returns an int status. */
    @FunctionalInterface
    public interface IntBody {
        int run(Call call) throws Throwable;
    }

    /** The body of a call to a verb that returns a pointer, NULL on failure. */
    @FunctionalInterface
    public interface PointerBody {
        MemorySegment run(Call call) throws Throwable;
    }

    private Native() {
    }

    /**
     * Runs {@code body} with a fresh {@link Call}: for verbs whose result needs more than a status
     * check (queries that read a struct back, verbs returning a count). Checks inside the body use
     * {@link #checkStatus} / {@link #fail}.
     */
    public static <T> T call(Body<T> body) {
        try (Arena arena = Arena.ofConfined()) {
            return body.run(new Call(arena));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls a verb that returns 0 on success, and either a positive errno ({@code ibv_modify_qp},
     * {@code ibv_dealloc_pd}) or -1 with errno set ({@code ibv_close_device}, {@code rdma_*}) on failure.
     *
     * @throws VerbsException naming {@code verb}, the errno and {@code hint}'s explanation
     */
    public static void check(String verb, Hint hint, IntBody body) {
        call(c -> {
            checkStatus(verb, hint, body.run(c), c);
            return null;
        });
    }

    /**
     * Calls a verb that returns a new object, or NULL with errno set.
     *
     * @return the pointer, never NULL
     * @throws VerbsException naming {@code verb}, the errno and {@code hint}'s explanation
     */
    public static MemorySegment create(String verb, Hint hint, PointerBody body) {
        return call(c -> {
            MemorySegment p = body.run(c);
            if (p.address() == 0) {
                throw fail(verb, c.lastErrno(), hint);
            }
            return p;
        });
    }

    /** Checks an int status inside a {@link #call} body; see {@link #check}. */
    public static void checkStatus(String verb, Hint hint, int rc, Call c) {
        if (rc != 0) {
            throw fail(verb, rc > 0 ? rc : c.lastErrno(), hint);
        }
    }

    /**
     * Makes {@code fd} non-blocking ({@code fcntl(F_SETFL, O_NONBLOCK)}), so that a verb reading it
     * ({@code ibv_get_cq_event}, {@code ibv_get_async_event}, {@code rdma_get_cm_event}) returns EAGAIN
     * instead of blocking when another thread took the event first.
     */
    public static void setNonBlocking(int fd, String what) {
        call(c -> {
            int flags = (int) FCNTL.invokeExact(c.errno(), fd, F_GETFL, 0);
            if (flags < 0) {
                throw fail("fcntl(" + what + ", F_GETFL)", c.lastErrno(), NO_HINT);
            }
            if ((int) FCNTL.invokeExact(c.errno(), fd, F_SETFL, flags | O_NONBLOCK) < 0) {
                throw fail("fcntl(" + what + ", F_SETFL)", c.lastErrno(), NO_HINT);
            }
            return null;
        });
    }

    /**
     * Waits until {@code fd} is readable, {@code timeout} passes or {@code open} turns false (checked
     * every {@value #POLL_SLICE_MILLIS} ms, so that closing the object wakes its waiters): {@code poll(2)},
     * so that no thread ever blocks forever in a verb that reads a file descriptor. A virtual thread
     * does not call {@code poll(2)}: it parks until the process's {@link EventLoop} sees the
     * descriptor readable or its deadline comes, and its carrier runs other virtual threads
     * meanwhile; it checks {@code open} again whenever a resource closes ({@link #wakeWaiters}).
     *
     * @return true if readable, false on timeout
     * @throws IllegalStateException naming {@code what} once {@code open} is false, or when the thread is
     *                               interrupted (within a slice; its interrupt status stays set)
     */
    public static boolean awaitReadable(int fd, long deadline, String what, BooleanSupplier open) {
        if (Thread.currentThread().isVirtual() && deadline - System.nanoTime() > 0) {
            // parked, not blocked in poll(2): the carrier runs other virtual threads meanwhile (a look
            // without waiting is a poll(2) of timeout 0, which does not block)
            return EventLoop.awaitReadable(fd, deadline, what, open);
        }
        WaitScratch scratch = waitScratch();
        MemorySegment pollfd = scratch.pollfd;
        try {
            while (true) {
                if (!open.getAsBoolean()) {
                    throw new IllegalStateException(what + " was closed while a thread waited on it");
                }
                if (Thread.interrupted()) { // each slice: an interrupt ends the wait within POLL_SLICE_MILLIS
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting on " + what);
                }
                long left = Math.max(0, deadline - System.nanoTime());
                int millis = (int) Math.min(POLL_SLICE_MILLIS, (left + 999_999) / 1_000_000);
                pollfd.set(ValueLayout.JAVA_INT, 0, fd);
                pollfd.set(ValueLayout.JAVA_SHORT, 4, (short) 1); // POLLIN
                pollfd.set(ValueLayout.JAVA_SHORT, 6, (short) 0);
                int rc = (int) POLL.invokeExact(scratch.errno, pollfd, 1L, millis);
                if (rc > 0) {
                    return true;
                }
                if (rc == 0) {
                    if (System.nanoTime() - deadline >= 0) {
                        return false;
                    }
                    continue;
                }
                int e = errno(scratch.errno);
                if (e != Errno.EINTR) {
                    throw fail("poll(" + what + ")", e, NO_HINT);
                }
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Runs {@code onReadable} on the process's event-loop thread whenever {@code fd} is readable, until
     * {@link #unwatch(int)}: for work that must happen although no thread waits (a connection's
     * events, so that a peer's disconnect reaches a thread that only polls). {@code onReadable} must
     * read what is readable and not block.
     */
    public static void watch(int fd, Runnable onReadable) {
        EventLoop.watch(fd, onReadable);
    }

    /** Ends {@link #watch(int, Runnable)}: call it before {@code fd} is closed. */
    public static void unwatch(int fd) {
        EventLoop.unwatch(fd);
    }

    /**
     * A thread's memory for the system calls of a wait: {@code errno}'s capture, poll(2)'s
     * {@code struct pollfd} and two result pointers (as {@code ibv_get_cq_event} fills), allocated
     * once per thread, so that a wait, which may come once per message in an event-driven loop,
     * allocates nothing and runs the same few lines each time. Used only between a wait's start and
     * its return, by the waiting thread.
     */
    public static final class WaitScratch {
        /** The errno capture segment: the first argument of a handle made by {@link #withErrno}. */
        public final MemorySegment errno;
        final MemorySegment pollfd;
        /** Two pointer-sized results ({@code ibv_get_cq_event}'s CQ and context). */
        public final MemorySegment out1;
        public final MemorySegment out2;

        private WaitScratch() {
            MemorySegment all = Arena.ofAuto().allocate(64, 8);
            errno = all.asSlice(0, CAPTURE_LAYOUT.byteSize());
            pollfd = all.asSlice(32, 8, 4); // struct pollfd { int fd; short events; short revents; }
            out1 = all.asSlice(40, 8, 8);
            out2 = all.asSlice(48, 8, 8);
        }
    }

    private static final ThreadLocal<WaitScratch> WAIT_SCRATCH = ThreadLocal.withInitial(WaitScratch::new);

    /** This thread's {@link WaitScratch}. */
    public static WaitScratch waitScratch() {
        return WAIT_SCRATCH.get();
    }

    /**
     * Wakes the virtual threads waiting in {@link #awaitReadable}, so that each checks again whether
     * what it waits on is open: called when a resource closes. Nothing to do before the first wait.
     */
    public static void wakeWaiters() {
        if (waitsPrepared) {
            EventLoop.wakeAll();
        }
    }

    private static volatile boolean waitsPrepared;

    /** Readies {@link #awaitReadable} for virtual threads (starts the {@link EventLoop}); called when a context opens. */
    public static void prepareWaits() {
        EventLoop.start();
        waitsPrepared = true;
    }

    /** The deadline, in {@link System#nanoTime()} terms, {@code timeout} from now (saturating). */
    public static long deadline(Duration timeout) {
        long now = System.nanoTime();
        long nanos = timeout.isNegative() ? 0 : timeout.compareTo(Duration.ofDays(365)) > 0 ? Long.MAX_VALUE / 4 : timeout.toNanos();
        return now + nanos;
    }

    /** A downcall handle for a C function that sets errno: its first parameter is the capture segment. */
    public static MethodHandle withErrno(MemorySegment address, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(address, descriptor, CAPTURE_ERRNO);
    }

    /** A downcall handle through a function pointer (its first parameter) that sets errno (the second). */
    public static MethodHandle withErrno(FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(descriptor, CAPTURE_ERRNO);
    }

    /** A plain downcall handle. */
    public static MethodHandle plain(MemorySegment address, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(address, descriptor);
    }

    /** The errno captured by the call that was given {@code capture}. */
    public static int errno(MemorySegment capture) {
        return (int) ERRNO.get(capture, 0L);
    }

    /** A {@link VerbsException} for {@code verb} failing with {@code errno}, explained by {@code hint}. */
    public static VerbsException fail(String verb, int errno, Hint hint) {
        return new VerbsException(verb, errno, hint.explain(errno));
    }

    /** Re-throws what {@code invokeExact} threw: unchecked as is, anything else wrapped. */
    public static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException("unexpected exception from a native call", t);
    }
}
