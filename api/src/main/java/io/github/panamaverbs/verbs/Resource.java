package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.Lifetime;
import io.github.panamaverbs.internal.Native;
import java.lang.foreign.MemorySegment;

/**
 * A native verbs object: what its lifetime means to an application. (The machinery, shared with the
 * connection manager's objects, is one internal class.)
 *
 * <p><b>The closing rule.</b> A resource can't be closed while a resource that was created from it
 * or uses it is still open: closing a {@link ProtectionDomain} with a live memory region or queue
 * pair, a completion queue that a queue pair still uses, or a context with anything open under it
 * throws {@link IllegalStateException} naming what is still open, and leaves everything open.
 * Close in the reverse order of creation; try-with-resources does exactly that. (A type 2
 * {@link MemoryWindow} uses each queue pair it was bound through, until it is closed.) Closing twice
 * throws {@link IllegalStateException}; so does any use after close.
 *
 * <p>Each resource owns a shared {@link java.lang.foreign.Arena}; the pointer to its C struct is a segment of that
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
        CompletionQueue, Context, MemoryRegion, MemoryWindow, ProtectionDomain, QueuePair, SharedReceiveQueue {
    /** The arena, handle, users and closing rule: the module's one {@link Lifetime} class. */
    final Lifetime life;

    /**
     * @param pointer the C object, as returned by the verb that created it
     * @param size    the size of the C struct, so that field reads are bounds-checked
     * @param uses    the resources this one was created from or refers to (null entries ignored)
     */
    Resource(MemorySegment pointer, long size, Resource... uses) {
        this(pointer, size, null, uses);
    }

    /**
     * @param other a lifetime of another package that this resource uses too (a connection ID's, for
     *              the queue pair librdmacm creates on it), or null
     */
    Resource(MemorySegment pointer, long size, Lifetime other, Resource... uses) {
        Lifetime[] lifetimes = new Lifetime[uses.length + 1];
        for (int i = 0; i < uses.length; i++) {
            lifetimes[i] = uses[i] == null ? null : uses[i].life;
        }
        lifetimes[uses.length] = other;
        // A parent closed by another thread since the creating verb checked it makes this throw. The
        // only parent that can close while its child exists natively is a context (the kernel refuses
        // to free the others, EBUSY), and closing a context destroyed the child with it.
        this.life = new Lifetime(this, pointer, size, this::destroy, lifetimes);
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
        life.abandon(failure);
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
    final void addUser(Resource user) {
        life.addUser(user.life);
    }

    final void removeUser(Resource user) {
        life.removeUser(user.life);
    }

    /** How many open resources of {@code type} use this one. */
    final int countUsers(Class<? extends Resource> type) {
        return life.countUsers(type);
    }

    /** The C struct; throws {@link IllegalStateException} once closed. */
    final MemorySegment handle() {
        return life.handle();
    }

    /**
     * The C struct without a liveness check, for the data path: the downcall itself refuses a
     * segment whose arena is closed, and {@link #closed(IllegalStateException)} names this resource.
     */
    final MemorySegment ptr() {
        return life.ptr();
    }

    /** Whether this resource is still open; lock-free, for the data path. */
    final boolean isOpen() {
        return life.isOpen();
    }

    /**
     * What a call on this resource throws when FFM refused one of its segments: "this resource is
     * closed" when it is, else FFM's own exception (another segment of the call was closed).
     */
    final IllegalStateException closed(IllegalStateException cause) {
        return life.closed(cause);
    }

    /**
     * For a verb that creates a child of {@code involved}: FFM's refusal ("Already closed") of a
     * parent that another thread closed during the call becomes "... is closed", naming it.
     */
    static IllegalStateException closed(IllegalStateException cause, Resource... involved) {
        Lifetime[] lifetimes = new Lifetime[involved.length];
        for (int i = 0; i < involved.length; i++) {
            lifetimes[i] = involved[i] == null ? null : involved[i].life;
        }
        return Lifetime.closed(cause, lifetimes);
    }

    /** {@link Native#call} on this resource. */
    final <T> T call(Native.Body<T> body) {
        return life.call(body);
    }

    /** {@link Native#check} on this resource. */
    final void check(String verb, Native.Hint hint, Native.IntBody body) {
        life.check(verb, hint, body);
    }

    /** Reads a field of this resource's C struct. */
    final <T> T read(java.util.function.Function<MemorySegment, T> field) {
        return life.read(field);
    }

    /** {@return whether {@link #close()} has completed} */
    public final boolean isClosed() {
        return life.isClosed();
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
        life.close();
    }

    /** Calls the C destroy verb on the object at {@code address}; throws {@link VerbsException}. */
    abstract void destroy(MemorySegment address);
}
