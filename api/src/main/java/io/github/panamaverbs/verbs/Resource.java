package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.Native;
import io.github.panamaverbs.internal.VerbsBridge;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Lifetime of one native verbs object: the one place where handles are tied to arenas and where
 * the closing rule lives.
 *
 * <p><b>The closing rule.</b> A resource can't be closed while a resource that was created from it
 * or uses it is still open: closing a {@link ProtectionDomain} with a live memory region or queue
 * pair, a completion queue that a queue pair still uses, or a context with anything open under it
 * throws {@link IllegalStateException} naming what is still open, and leaves everything open.
 * Close in the reverse order of creation; try-with-resources does exactly that. (A type 2
 * {@link MemoryWindow} uses each queue pair it was bound through, until it is closed.) Closing twice
 * throws {@link IllegalStateException}; so does any use after close.
 *
 * <p>Each resource owns a shared {@link Arena}; the pointer to its C struct is a segment of that
 * arena, so after {@link #close()} FFM itself refuses every access to it, from any thread, and a
 * freed pointer never reaches C.
 *
 * <p><b>Threads.</b> Posting, polling and queries may be called from several threads (the provider
 * locks its queues); a {@link SendRequest}, {@link ReceiveRequest} or {@link WorkCompletions} is
 * used by one thread at a time. {@link #close()} may be called while other threads post or poll:
 * it waits for the gap between their calls (at most 2 s), after which their next call throws
 * {@link IllegalStateException} ("... is closed") instead of reaching freed memory. To stop a
 * resource that other threads use, close it and let them end on that exception.
 *
 * <p><b>Forgotten resources.</b> There is no finalization: a resource that is never closed stays
 * allocated (and its memory pinned) until the process exits, and the resources it was created from
 * refuse to close while it is open, naming it. Close every resource, in try-with-resources.
 */
public abstract sealed class Resource implements AutoCloseable permits AddressHandle, CompletionChannel,
        CompletionQueue, Context, Handle, MemoryRegion, MemoryWindow, ProtectionDomain, QueuePair, SharedReceiveQueue {
    static {
        VerbsBridge.register(new Bridge());
    }

    private volatile Arena arena = Arena.ofShared();
    /** The C struct, a segment of {@link #arena}; replaced only when a failed destroy reopens the resource. */
    private volatile MemorySegment handle;
    private final Resource[] uses;
    private final Set<Resource> users = new LinkedHashSet<>();
    private boolean closed;

    /**
     * @param pointer the C object, as returned by the verb that created it
     * @param size    the size of the C struct, so that field reads are bounds-checked
     * @param uses    the resources this one was created from or refers to (null entries ignored)
     */
    Resource(MemorySegment pointer, long size, Resource... uses) {
        this.handle = pointer.reinterpret(size, arena, null);
        List<Resource> list = new ArrayList<>();
        for (Resource r : uses) {
            if (r != null && !list.contains(r)) {
                list.add(r);
            }
        }
        this.uses = list.toArray(new Resource[0]);
        int linked = 0;
        try {
            for (Resource r : this.uses) {
                r.addUser(this);
                linked++;
            }
        } catch (RuntimeException | Error e) {
            // A parent was closed by another thread since the creating verb checked it. The only parent
            // that can close while its child exists natively is a context (the kernel refuses to free
            // the others, EBUSY), and closing a context destroyed the child with it: unlink, and throw.
            for (int i = 0; i < linked; i++) {
                this.uses[i].removeUser(this);
            }
            arena.close();
            throw e;
        }
    }

    /**
     * For a constructor that fails after {@code super(...)}, when the native object exists: destroys
     * it and unlinks it from the resources it uses, so that they stay closable. A failure of the destroy
     * verb is added to {@code failure} as suppressed. The constructor then throws {@code failure}:
     * <pre>{@code
     * super(create(...), ...);
     * try {
     *     ...
     * } catch (RuntimeException | Error e) {
     *     abandon(e);
     *     throw e;
     * }
     * }</pre>
     * The fields that {@link #destroy(MemorySegment)} uses must be set before anything that can fail.
     */
    final void abandon(Throwable failure) {
        MemorySegment address = MemorySegment.ofAddress(handle.address()).reinterpret(handle.byteSize());
        synchronized (this) {
            closed = true;
        }
        try {
            arena.close();
        } catch (IllegalStateException e) {
            failure.addSuppressed(e);
        }
        try {
            destroy(address);
        } catch (RuntimeException | Error e) {
            failure.addSuppressed(e);
        }
        for (Resource r : uses) {
            r.removeUser(this);
        }
    }

    /**
     * Test hook (package-private, null in production): when set, the constructors of the resources
     * that do more after creating their native object (queue pairs, completion queues, shared receive
     * queues, memory regions, completion channels, contexts) call it last, so that a test can make a
     * constructor fail after the native object exists.
     */
    static volatile java.util.function.Consumer<Resource> afterCreateHook;

    /** Calls {@link #afterCreateHook}, if set; the last statement of a constructor that can fail after creating. */
    final void afterCreate() {
        java.util.function.Consumer<Resource> hook = afterCreateHook;
        if (hook != null) {
            hook.accept(this);
        }
    }

    /**
     * Checks that {@code parent} is open before a child is created from it: call this before the
     * creating verb so that a closed parent fails in Java, not in C.
     */
    static MemorySegment checkOpen(Resource parent) {
        return parent.handle();
    }

    /** Makes {@code user} one of the resources that must close before this one (also after creation: a window bound through a queue pair). */
    final synchronized void addUser(Resource user) {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
        users.add(user);
    }

    final synchronized void removeUser(Resource user) {
        users.remove(user);
    }

    /** How many open resources of {@code type} use this one. */
    synchronized int countUsers(Class<? extends Resource> type) {
        int n = 0;
        for (Resource r : users) {
            n += type.isInstance(r) ? 1 : 0;
        }
        return n;
    }

    /** The C struct; throws {@link IllegalStateException} once closed. */
    final MemorySegment handle() {
        if (!handle.scope().isAlive()) {
            throw new IllegalStateException(this + " is closed");
        }
        return handle;
    }

    /**
     * The C struct without a liveness check, for the data path: the downcall itself refuses a
     * segment whose arena is closed, and {@link #closed(IllegalStateException)} names this resource.
     */
    final MemorySegment ptr() {
        return handle;
    }

    /** Whether this resource is still open; lock-free, for the data path. */
    final boolean isOpen() {
        return handle.scope().isAlive();
    }

    /**
     * What a call on this resource throws when FFM refused one of its segments: "this resource is
     * closed" when it is, else FFM's own exception (another segment of the call was closed).
     */
    final IllegalStateException closed(IllegalStateException cause) {
        return isOpen() ? cause : new IllegalStateException(this + " is closed", cause);
    }

    /**
     * For a verb that creates a child of {@code involved}: FFM's refusal ("Already closed") of a
     * parent that another thread closed during the call becomes "... is closed", naming it.
     */
    static IllegalStateException closed(IllegalStateException cause, Resource... involved) {
        for (Resource r : involved) {
            if (r != null && !r.isOpen()) {
                return new IllegalStateException(r + " is closed", cause);
            }
        }
        return cause;
    }

    // Control-path calls on this resource. The handle is checked first, but another thread may close the
    // resource between the check and the downcall, and FFM then refuses the segment with its own bare
    // "Already closed": these turn that into "... is closed", as the data path does (closed(cause)).

    /** {@link Native#call} on this resource. */
    final <T> T call(Native.Body<T> body) {
        try {
            return Native.call(body);
        } catch (IllegalStateException e) {
            throw closed(e);
        }
    }

    /** {@link Native#check} on this resource. */
    final void check(String verb, Native.Hint hint, Native.IntBody body) {
        try {
            Native.check(verb, hint, body);
        } catch (IllegalStateException e) {
            throw closed(e);
        }
    }

    /** Reads a field of this resource's C struct. */
    final <T> T read(java.util.function.Function<MemorySegment, T> field) {
        try {
            return field.apply(handle());
        } catch (IllegalStateException e) {
            throw closed(e);
        }
    }

    /** {@return whether {@link #close()} has completed} */
    public final synchronized boolean isClosed() {
        return closed;
    }

    /**
     * Destroys the C object ({@code ibv_dealloc_pd}, {@code ibv_destroy_qp}, …). If the C verb fails,
     * the resource stays open and usable, and can be closed again later. Other threads may be posting
     * to or polling this resource: their calls are waited for (at most 2 s), and their next call
     * throws {@link IllegalStateException}.
     *
     * @throws IllegalStateException if already closed, if resources created from this one (or using
     *                               it) are open, naming them, or if another thread has been in a call
     *                               that uses it for 2 s; the resource then stays open
     * @throws VerbsException        if the C verb fails; the resource then stays open
     */
    @Override
    public final void close() {
        MemorySegment address;
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException(this + " is already closed");
            }
            if (!users.isEmpty()) {
                throw new IllegalStateException("cannot close " + this + ": still in use by " + names(users)
                        + "; close those first");
            }
            address = MemorySegment.ofAddress(handle.address()).reinterpret(handle.byteSize());
            // Closing the arena first makes every later use fail in Java; it throws (and nothing
            // is freed) while another thread is in a call that uses this resource. Calls on the data
            // path are short: retry in their gaps for a while, so that a resource a busy thread polls
            // can be closed (that thread then gets IllegalStateException).
            closeArena();
            closed = true;
            try {
                destroy(address);
            } catch (RuntimeException | Error e) {
                // The C object still exists: reopen, so that it stays usable and closable.
                Arena reopened = Arena.ofShared();
                handle = address.reinterpret(address.byteSize(), reopened, null);
                arena = reopened;
                closed = false;
                throw e;
            }
        }
        for (Resource r : uses) {
            r.removeUser(this);
        }
        Native.wakeWaiters(); // a virtual thread waiting on it (or on what it belonged to) finds it closed
    }

    /**
     * The names of {@code resources}, as a list prints them. A resource joins its parents' users as
     * soon as its native object exists, before its constructor has set the fields its toString reads:
     * another thread's close() may see it then, and names it by its class.
     */
    private static String names(Set<Resource> resources) {
        List<String> names = new ArrayList<>();
        for (Resource r : resources) {
            String name;
            try {
                name = r.toString();
            } catch (RuntimeException e) {
                name = r.getClass().getSimpleName() + " (being created by another thread)";
            }
            names.add(name);
        }
        return names.toString();
    }

    /** How long {@link #close()} retries while other threads are in calls that use the resource. */
    private static final long CLOSE_RETRY_NANOS = 2_000_000_000L;

    private void closeArena() {
        long deadline = System.nanoTime() + CLOSE_RETRY_NANOS;
        for (int attempt = 0; ; attempt++) {
            try {
                arena.close();
                return;
            } catch (IllegalStateException e) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("cannot close " + this + ": another thread has been in calls "
                            + "that use it for " + CLOSE_RETRY_NANOS / 1_000_000_000 + " s (a blocked post or poll?); "
                            + "stop that thread first", e);
                }
                if (attempt < 100) {
                    Thread.onSpinWait();
                } else {
                    Thread.yield();
                }
            }
        }
    }

    /** Calls the C destroy verb on the object at {@code address}; throws {@link VerbsException}. */
    abstract void destroy(MemorySegment address);
}
