package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.Lifetime;
import java.lang.foreign.MemorySegment;

/**
 * What the confined views ({@link CompletionQueue.Confined}, {@link QueuePair.Confined}) share: the
 * thread that made the view is the only one that may use it or close it, and the resource cannot
 * close while the view is open (the view is one of its users, under the closing rule). Together
 * these let a call pass the resource's C object as a plain address: no arena is acquired, and the
 * check per call is a comparison of the current thread and a field only that thread writes.
 */
abstract sealed class ConfinedView implements AutoCloseable permits CompletionQueue.Confined, QueuePair.Confined {
    private final Thread owner = Thread.currentThread();
    /** Links the view to the resource for the closing rule; its arena is never used by a call. */
    private final Lifetime life;
    /** Written and read by {@link #owner} only. */
    private boolean closed;

    ConfinedView(Resource resource, long size) {
        this.life = new Lifetime(this, MemorySegment.ofAddress(resource.handle().address()), size, freed -> { },
                resource.life);
        life.orphanedWhen(() -> !owner.isAlive());
    }

    /** The check of every call: the owner thread, and the view open. */
    final void check() {
        if (Thread.currentThread() != owner || closed) {
            throw refused();
        }
    }

    private IllegalStateException refused() {
        if (Thread.currentThread() != owner) {
            return new IllegalStateException(this + " is confined to " + threadName(owner) + ", not "
                    + threadName(Thread.currentThread()) + ": make a view in each thread, or use the resource's own "
                    + "methods, which any thread may call");
        }
        return new IllegalStateException(this + " is closed");
    }

    /** {@return the thread that may use this view} */
    public final Thread owner() {
        return owner;
    }

    /**
     * Ends the view: the resource may close once its views are closed. Only the owner thread may close
     * it while that thread is alive; once it has ended (nothing can be in a call through the view
     * then), any thread may, and the resource's own {@code close()} closes such a view itself.
     *
     * @throws IllegalStateException if called by another thread while the owner is alive, or if already
     *                               closed
     */
    @Override
    public final void close() {
        if (Thread.currentThread() != owner && owner.isAlive()) {
            throw refused();
        }
        if (closed || life.isClosed()) {
            throw new IllegalStateException(this + " is already closed");
        }
        closed = true;
        life.close();
    }

    /** {@return whether {@link #close()} has been called} */
    public final boolean isClosed() {
        return life.isClosed();
    }

    static String threadName(Thread t) {
        String name = t.getName();
        return (t.isVirtual() ? "virtual thread #" : "thread #") + t.threadId() + (name.isEmpty() ? "" : " \"" + name + "\"");
    }
}
