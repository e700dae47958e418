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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * Waits on file descriptors without holding an OS thread: one daemon platform thread per process
 * owns an {@code epoll} set and unparks the virtual threads that wait for one of its descriptors to
 * become readable (completion channels, async-event and connection-manager fds). A virtual thread
 * parks (untimed: the loop, not a timer thread, ends its wait at its deadline) and is unmounted from
 * its carrier meanwhile; a platform thread keeps the direct {@code poll(2)} of
 * {@link Native#awaitReadable}, which costs no hand-over.
 *
 * <p>The thread starts with the first context or connection-manager event channel ({@link Native#prepareWaits()}) and stays, parked in
 * {@code epoll_wait}, for the life of the process. It wakes when a descriptor is readable, when the
 * earliest waiter's deadline comes (at least once a second while idle), when a wait with an earlier
 * deadline is armed (an {@code eventfd} in the set), and when a resource closes
 * ({@link #wakeAll()}: each waiter checks again whether what it waits on is still open).
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
    private static final MethodHandle EVENTFD = Native.withErrno(
            Native.LINKER.defaultLookup().find("eventfd").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final MethodHandle WRITE = Native.LINKER.downcallHandle(
            Native.LINKER.defaultLookup().find("write").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final MethodHandle READ = Native.LINKER.downcallHandle(
            Native.LINKER.defaultLookup().find("read").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final int EPOLL_CLOEXEC = 0x80000;
    private static final int EFD_CLOEXEC = 0x80000;
    private static final int EFD_NONBLOCK = 0x800;
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
    /** The longest the loop sleeps: it then looks at the waiters' deadlines again. */
    private static final long IDLE_NANOS = TimeUnit.SECONDS.toNanos(1);

    private static final EventLoop INSTANCE = new EventLoop();

    /** A virtual thread's wait: parked until {@link #state} is set, then unparked. */
    private static final class Waiter {
        static final int WAITING = 0;
        static final int READABLE = 1;
        /** Its deadline came, or a resource closed: it checks again. */
        static final int WOKEN = 2;

        final Thread thread = Thread.currentThread();
        final int fd;
        final long deadline;
        volatile int state;

        Waiter(int fd, long deadline) {
            this.fd = fd;
            this.deadline = deadline;
        }
    }

    private final int epfd;
    /** The loop's own descriptor in the set: written to end its {@code epoll_wait} early. */
    private final int wakeFd;
    /** The waiters of each descriptor; guarded by {@link #lock}. */
    private final Map<Integer, List<Waiter>> waiters = new HashMap<>();
    /** What the loop itself does when a watched descriptor is readable ({@link #watch}); guarded by {@link #lock}. */
    private final Map<Integer, Runnable> watches = new HashMap<>();
    /** When the loop wakes at the latest ({@link System#nanoTime()}); guarded by {@link #lock}. */
    private long plannedWake = Long.MAX_VALUE;
    /** A lock a virtual thread may wait for without pinning its carrier (Java 22 and 23 pin in synchronized). */
    private final ReentrantLock lock = new ReentrantLock();
    /** Scratch for epoll_ctl's event and the eventfd's counter, used under {@link #lock}. */
    private final MemorySegment ctlEvent = Arena.global().allocate(EVENT_SIZE, 8);
    private final MemorySegment ctlErrno = Arena.global().allocate(Native.CAPTURE_LAYOUT);
    private final MemorySegment one = Arena.global().allocate(ValueLayout.JAVA_LONG, 1);

    private EventLoop() {
        epfd = Native.call(c -> {
            int fd = (int) EPOLL_CREATE1.invokeExact(c.errno(), EPOLL_CLOEXEC);
            if (fd < 0) {
                throw Native.fail("epoll_create1", c.lastErrno(), Native.NO_HINT);
            }
            return fd;
        });
        wakeFd = Native.call(c -> {
            int fd = (int) EVENTFD.invokeExact(c.errno(), 0, EFD_CLOEXEC | EFD_NONBLOCK);
            if (fd < 0) {
                throw Native.fail("eventfd", c.lastErrno(), Native.NO_HINT);
            }
            return fd;
        });
        ctlEvent.set(ValueLayout.JAVA_INT, 0, EPOLLIN); // level-triggered, not one-shot: drained by the loop
        ctlEvent.set(ValueLayout.JAVA_LONG_UNALIGNED, DATA, wakeFd);
        int e = ctl(EPOLL_CTL_ADD, wakeFd);
        if (e != 0) {
            throw Native.fail("epoll_ctl(eventfd)", e, Native.NO_HINT);
        }
        one.set(ValueLayout.JAVA_LONG, 0, 1);
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
        Waiter w = new Waiter(-1, 0);
        List<Waiter> l = new ArrayList<>();
        l.add(w);
        l.remove(w);
        LockSupport.unpark(Thread.currentThread());
        LockSupport.park(w);
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
     * deadline passes, or {@code open} turns false (checked when a resource closes).
     */
    static boolean awaitReadable(int fd, long deadline, String what, BooleanSupplier open) {
        return INSTANCE.await(fd, deadline, what, open);
    }

    /** Wakes every waiting virtual thread, to check again whether what it waits on is open: a resource closed. */
    static void wakeAll() {
        INSTANCE.wakeEveryone();
    }

    /**
     * Runs {@code onReadable} on the loop's thread each time {@code fd} is readable, until
     * {@link #unwatch}: for what must happen even when no thread waits (a connection's events). It
     * must not block, and must make the descriptor unreadable (read what is there), or it runs again
     * at once.
     */
    static void watch(int fd, Runnable onReadable) {
        INSTANCE.addWatch(fd, onReadable);
    }

    /** Stops {@link #watch}ing {@code fd}: before it is closed (its number may be reused). */
    static void unwatch(int fd) {
        INSTANCE.removeWatch(fd);
    }

    private void addWatch(int fd, Runnable onReadable) {
        lock.lock();
        try {
            watches.put(fd, onReadable);
            rearm(fd, "watched descriptor " + fd);
        } finally {
            lock.unlock();
        }
    }

    private void removeWatch(int fd) {
        lock.lock();
        try {
            watches.remove(fd);
        } finally {
            lock.unlock();
        }
    }

    /** Arms {@code fd} once more (EPOLLIN, one-shot), adding it to the set if it is not there; under {@link #lock}. */
    private void rearm(int fd, String what) {
        ctlEvent.set(ValueLayout.JAVA_INT, 0, EPOLLIN | EPOLLONESHOT);
        ctlEvent.set(ValueLayout.JAVA_LONG_UNALIGNED, DATA, fd);
        int e = ctl(EPOLL_CTL_MOD, fd);
        if (e == Errno.ENOENT) { // not in the set yet, or closed and its number reused since
            e = ctl(EPOLL_CTL_ADD, fd);
        }
        if (e != 0) {
            throw Native.fail("epoll_ctl(" + what + ")", e, Native.NO_HINT);
        }
    }

    private boolean await(int fd, long deadline, String what, BooleanSupplier open) {
        Waiter w = new Waiter(fd, deadline);
        while (true) {
            if (!open.getAsBoolean()) {
                throw new IllegalStateException(what + " was closed while a thread waited on it");
            }
            w.state = Waiter.WAITING;
            arm(w, what);
            // again, now that it is armed: a close between the check above and the arming woke no one
            boolean stillOpen;
            try {
                stillOpen = open.getAsBoolean();
            } catch (RuntimeException e) {
                forget(w);
                throw e;
            }
            if (!stillOpen) {
                forget(w);
                throw new IllegalStateException(what + " was closed while a thread waited on it");
            }
            while (w.state == Waiter.WAITING) {
                LockSupport.park(this);
                if (Thread.interrupted()) {
                    forget(w);
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting on " + what);
                }
            }
            if (w.state == Waiter.READABLE) {
                return true;
            }
            if (System.nanoTime() - deadline >= 0) {
                return false;
            }
        }
    }

    private void arm(Waiter w, String what) {
        lock.lock();
        try {
            waiters.computeIfAbsent(w.fd, k -> new ArrayList<>()).add(w);
            try {
                rearm(w.fd, what);
            } catch (RuntimeException e) {
                waiters.get(w.fd).remove(w);
                throw e;
            }
            if (w.deadline - plannedWake < 0) {
                // the loop sleeps past this deadline: wake it to plan again
                plannedWake = w.deadline;
                kick();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Ends the loop's epoll_wait (eventfd_write); under {@link #lock}. */
    private void kick() {
        try {
            long unused = (long) WRITE.invokeExact(wakeFd, one, 8L);
        } catch (Throwable t) {
            throw Native.rethrow(t);
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

    private void forget(Waiter w) {
        lock.lock();
        try {
            List<Waiter> l = waiters.get(w.fd);
            if (l != null) {
                l.remove(w);
            }
        } finally {
            lock.unlock();
        }
    }

    private void wakeEveryone() {
        List<Waiter> wake = new ArrayList<>();
        lock.lock();
        try {
            for (List<Waiter> l : waiters.values()) {
                wake.addAll(l);
            }
            waiters.clear();
        } finally {
            lock.unlock();
        }
        wake(wake, Waiter.WOKEN);
    }

    private static void wake(List<Waiter> wake, int state) {
        for (Waiter w : wake) {
            w.state = state;
            LockSupport.unpark(w.thread);
        }
        wake.clear();
    }

    /** Runs the watch of {@code fd} (what it throws is dropped: the loop goes on), and arms it again while it is watched. */
    private void runWatch(int fd) {
        Runnable r;
        lock.lock();
        try {
            r = watches.get(fd);
        } finally {
            lock.unlock();
        }
        if (r == null) {
            return;
        }
        try {
            r.run();
        } catch (RuntimeException | Error e) {
            // e.g. the channel closed meanwhile: its close removes the watch
        }
        lock.lock();
        try {
            if (watches.get(fd) == r) {
                rearm(fd, "watched descriptor " + fd);
            }
        } catch (RuntimeException e) {
            watches.remove(fd, r); // closed meanwhile
        } finally {
            lock.unlock();
        }
    }

    private void run() {
        MemorySegment events = Arena.global().allocate(EVENT_SIZE * BATCH, 8);
        MemorySegment errno = Arena.global().allocate(Native.CAPTURE_LAYOUT);
        MemorySegment counter = Arena.global().allocate(ValueLayout.JAVA_LONG, 1);
        List<Waiter> readable = new ArrayList<>();
        List<Waiter> due = new ArrayList<>();
        List<Integer> watched = new ArrayList<>();
        while (true) {
            int millis;
            lock.lock();
            try {
                // the waiters whose deadline came go; the loop sleeps until the next one's (at most a second)
                long now = System.nanoTime();
                long next = now + IDLE_NANOS;
                for (List<Waiter> l : waiters.values()) {
                    for (int i = l.size() - 1; i >= 0; i--) {
                        Waiter w = l.get(i);
                        if (w.deadline - now <= 0) {
                            due.add(l.remove(i));
                        } else if (w.deadline - next < 0) {
                            next = w.deadline;
                        }
                    }
                }
                plannedWake = next;
                millis = (int) Math.max(1, (next - now + 999_999) / 1_000_000);
            } finally {
                lock.unlock();
            }
            wake(due, Waiter.WOKEN);
            int n;
            try {
                n = (int) EPOLL_WAIT.invokeExact(errno, epfd, events, BATCH, millis);
            } catch (Throwable t) {
                throw Native.rethrow(t);
            }
            if (n <= 0) {
                continue; // timeout, or EINTR
            }
            lock.lock();
            try {
                for (int i = 0; i < n; i++) {
                    int fd = (int) events.get(ValueLayout.JAVA_LONG_UNALIGNED, i * EVENT_SIZE + DATA);
                    if (fd == wakeFd) {
                        try {
                            long unused = (long) READ.invokeExact(wakeFd, counter, 8L);
                        } catch (Throwable t) {
                            throw Native.rethrow(t);
                        }
                        continue;
                    }
                    List<Waiter> l = waiters.remove(fd);
                    if (l != null) {
                        readable.addAll(l);
                    }
                    if (watches.containsKey(fd)) {
                        watched.add(fd);
                    }
                }
            } finally {
                lock.unlock();
            }
            // the watches first: a waiter of the same descriptor then finds what they read
            for (int fd : watched) {
                runWatch(fd);
            }
            watched.clear();
            wake(readable, Waiter.READABLE);
        }
    }
}
