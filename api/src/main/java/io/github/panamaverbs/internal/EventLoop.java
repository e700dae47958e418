package io.github.panamaverbs.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * Waits on file descriptors without holding an OS thread: one daemon platform thread per process
 * owns an {@code epoll} set and completes the futures of the virtual threads that wait for one of
 * its descriptors to become readable (completion channels, async-event and connection-manager
 * fds). A virtual thread parks on its future and is unmounted from its carrier meanwhile; a
 * platform thread keeps the direct {@code poll(2)} of {@link Native#awaitReadable}, which costs no
 * hand-over.
 *
 * <p>The thread starts with the first context or connection-manager event channel ({@link Native#prepareWaits()}) and stays, parked in
 * {@code epoll_wait}, for the life of the process.
 *
 * <p>Each wait arms its descriptor once ({@code EPOLLIN | EPOLLONESHOT}, level-triggered: a
 * descriptor already readable when armed is reported at once, so no event is lost between a check
 * and the wait). When it is reported, every waiter of that descriptor wakes; the one that reads the
 * event has it, the others find nothing ({@code EAGAIN}) and wait again, re-arming.
 */
final class EventLoop {
    private static final MethodHandle EPOLL_CREATE1 = Native.withErrno(
            Native.LINKER.defaultLookup().find("epoll_create1").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final MethodHandle EPOLL_CTL = Native.withErrno(
            Native.LINKER.defaultLookup().find("epoll_ctl").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                    ValueLayout.ADDRESS));
    private static final MethodHandle EPOLL_WAIT = Native.withErrno(
            Native.LINKER.defaultLookup().find("epoll_wait").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT));
    private static final int EPOLL_CLOEXEC = 0x80000;
    private static final int EPOLL_CTL_ADD = 1;
    private static final int EPOLL_CTL_MOD = 3;
    private static final int EPOLLIN = 0x001;
    private static final int EPOLLONESHOT = 1 << 30;
    /** struct epoll_event is packed on x86-64 (12 bytes: events, then the 8-byte data), not elsewhere (16). */
    private static final boolean PACKED = System.getProperty("os.arch").equals("amd64")
            || System.getProperty("os.arch").equals("x86_64");
    private static final long EVENT_SIZE = PACKED ? 12 : 16;
    private static final long DATA = PACKED ? 4 : 8;
    private static final int BATCH = 64;

    private static final EventLoop INSTANCE = new EventLoop();

    private final int epfd;
    /** The futures waiting for each descriptor; guarded by {@link #lock}. */
    private final Map<Integer, List<CompletableFuture<Void>>> waiters = new HashMap<>();
    /** A lock a virtual thread may wait for without pinning its carrier (Java 22 and 23 pin in synchronized). */
    private final ReentrantLock lock = new ReentrantLock();
    /** Scratch for epoll_ctl's event, used under {@link #lock}. */
    private final MemorySegment ctlEvent = Arena.global().allocate(EVENT_SIZE, 8);
    private final MemorySegment ctlErrno = Arena.global().allocate(Native.CAPTURE_LAYOUT);

    private EventLoop() {
        epfd = Native.call(c -> {
            int fd = (int) EPOLL_CREATE1.invokeExact(c.errno(), EPOLL_CLOEXEC);
            if (fd < 0) {
                throw Native.fail("epoll_create1", c.lastErrno(), Native.NO_HINT);
            }
            return fd;
        });
        Thread t = Thread.ofPlatform().daemon().name("panama-verbs-events").unstarted(this::run);
        t.start();
        warmUp();
    }

    /**
     * Loads and initializes, on the thread that opens the first context, every class a wait uses:
     * a virtual thread that initializes a class, or waits for another thread to, pins its carrier
     * meanwhile (a limit of the JVM), and thousands of first waits at once would all do so.
     */
    private static void warmUp() {
        CompletableFuture<Void> f = new CompletableFuture<>();
        try {
            f.get(1, TimeUnit.NANOSECONDS);
        } catch (TimeoutException | InterruptedException | ExecutionException expected) {
            // TimeoutException: loaded now
        }
        f.complete(null);
        f.join();
        new ArrayList<CompletableFuture<Void>>().remove(f);
    }

    /**
     * Loads the class and starts the thread: when the first device is opened, so that thousands of
     * virtual threads that wait at once never find it uninitialized (class initialization by another
     * thread pins a virtual thread's carrier while it waits for it).
     */
    static void start() {
        // INSTANCE is created by the class's initialization, which this call triggers
    }

    /**
     * {@link Native#awaitReadable} for a virtual thread: parks until {@code fd} is readable, the
     * deadline passes, or {@code open} turns false (checked every {@code sliceMillis}).
     */
    static boolean awaitReadable(int fd, long deadline, String what, BooleanSupplier open, int sliceMillis) {
        return INSTANCE.await(fd, deadline, what, open, sliceMillis);
    }

    private boolean await(int fd, long deadline, String what, BooleanSupplier open, int sliceMillis) {
        while (true) {
            if (!open.getAsBoolean()) {
                throw new IllegalStateException(what + " was closed while a thread waited on it");
            }
            long left = deadline - System.nanoTime();
            CompletableFuture<Void> ready = new CompletableFuture<>();
            arm(fd, ready, what);
            try {
                ready.get(Math.max(0, Math.min(left, TimeUnit.MILLISECONDS.toNanos(sliceMillis))), TimeUnit.NANOSECONDS);
                return true;
            } catch (TimeoutException e) {
                forget(fd, ready);
                if (System.nanoTime() - deadline >= 0) {
                    return false;
                }
            } catch (InterruptedException e) {
                forget(fd, ready);
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting on " + what, e);
            } catch (ExecutionException e) {
                throw new IllegalStateException(e.getCause());
            }
        }
    }

    private void arm(int fd, CompletableFuture<Void> ready, String what) {
        lock.lock();
        try {
            waiters.computeIfAbsent(fd, k -> new ArrayList<>()).add(ready);
            ctlEvent.set(ValueLayout.JAVA_INT, 0, EPOLLIN | EPOLLONESHOT);
            ctlEvent.set(ValueLayout.JAVA_LONG_UNALIGNED, DATA, fd);
            int e = ctl(EPOLL_CTL_MOD, fd);
            if (e == Errno.ENOENT) { // not in the set yet, or closed and its number reused since
                e = ctl(EPOLL_CTL_ADD, fd);
            }
            if (e != 0) {
                waiters.get(fd).remove(ready);
                throw Native.fail("epoll_ctl(" + what + ")", e, Native.NO_HINT);
            }
        } finally {
            lock.unlock();
        }
    }

    /** epoll_ctl(op, fd, ctlEvent): 0, or the errno. */
    private int ctl(int op, int fd) {
        try {
            int rc = (int) EPOLL_CTL.invokeExact(ctlErrno, epfd, op, fd, ctlEvent);
            return rc == 0 ? 0 : Native.errno(ctlErrno);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    private void forget(int fd, CompletableFuture<Void> ready) {
        lock.lock();
        try {
            List<CompletableFuture<Void>> l = waiters.get(fd);
            if (l != null) {
                l.remove(ready);
            }
        } finally {
            lock.unlock();
        }
    }

    private void run() {
        MemorySegment events = Arena.global().allocate(EVENT_SIZE * BATCH, 8);
        MemorySegment errno = Arena.global().allocate(Native.CAPTURE_LAYOUT);
        List<CompletableFuture<Void>> wake = new ArrayList<>();
        while (true) {
            int n;
            try {
                n = (int) EPOLL_WAIT.invokeExact(errno, epfd, events, BATCH, -1);
            } catch (Throwable t) {
                throw Native.rethrow(t);
            }
            if (n < 0) {
                continue; // EINTR
            }
            lock.lock();
            try {
                for (int i = 0; i < n; i++) {
                    int fd = (int) events.get(ValueLayout.JAVA_LONG_UNALIGNED, i * EVENT_SIZE + DATA);
                    List<CompletableFuture<Void>> l = waiters.remove(fd);
                    if (l != null) {
                        wake.addAll(l);
                    }
                }
            } finally {
                lock.unlock();
            }
            for (CompletableFuture<Void> f : wake) {
                f.complete(null);
            }
            wake.clear();
        }
    }
}
