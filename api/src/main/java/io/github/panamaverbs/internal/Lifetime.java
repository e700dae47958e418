package io.github.panamaverbs.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Function;

/**
 * The lifetime of one native object: the one place where the pointer to a C struct is tied to an
 * arena and where the closing rule lives. Every native object of the module holds one: each verbs
 * {@code Resource}, and the connection manager's event channels and IDs.
 *
 * <p><b>The closing rule.</b> A lifetime does not close while a lifetime that uses it (created from
 * it, or referring to it) is open: {@link #close()} then throws {@link IllegalStateException} naming
 * those, and everything stays open. Closing twice throws; so does every use after close.
 *
 * <p><b>Use after close.</b> The pointer is a segment of a shared {@link Arena} that {@link #close()}
 * closes before the C object is destroyed: from then on FFM refuses the segment, from any thread, and
 * a freed pointer never reaches C. A thread in a downcall that takes the segment keeps the arena
 * open; close retries in the gaps between such calls for {@value #CLOSE_RETRY_SECONDS} s, then gives
 * up and leaves the object open.
 *
 * <p><b>A failed destroy</b> (the C verb returns an error) reopens the lifetime over a new arena: the
 * object stays usable and closable.
 *
 * <p>The owner is what messages name (its {@code toString}); the destroyer frees the C object and
 * throws if that fails.
 */
public final class Lifetime {
    /** Frees the C object at {@code address}; throws (a {@code VerbsException}) if the C verb fails. */
    @FunctionalInterface
    public interface Destroyer {
        void destroy(MemorySegment address);
    }

    /** How long {@link #close()} retries while other threads are in calls that use the object. */
    static final int CLOSE_RETRY_SECONDS = 2;
    private static final long CLOSE_RETRY_NANOS = CLOSE_RETRY_SECONDS * 1_000_000_000L;

    private final Object owner;
    private final Destroyer destroyer;
    private volatile Arena arena = Arena.ofShared();
    /** The C struct, a segment of {@link #arena}; replaced only when a failed destroy reopens the object. */
    private volatile MemorySegment handle;
    private final Lifetime[] uses;
    private final Set<Lifetime> users = new LinkedHashSet<>();
    private boolean closed;
    /** When it answers true, a resource this one uses closes it first instead of refusing to close. */
    private volatile BooleanSupplier orphaned;

    /**
     * Links a new native object to the lifetimes it uses. If one of them was closed meanwhile (by
     * another thread, after the creating verb checked it), this throws {@link IllegalStateException}
     * and links nothing; the caller destroys the C object if it still exists.
     *
     * @param owner     the object that holds this lifetime: what messages name
     * @param pointer   the C object, as returned by the verb that created it
     * @param size      the size of the C struct, so that field reads are bounds-checked
     * @param destroyer frees the C object
     * @param uses      the lifetimes this object was created from or refers to (nulls and repeats ignored)
     */
    public Lifetime(Object owner, MemorySegment pointer, long size, Destroyer destroyer, Lifetime... uses) {
        this.owner = owner;
        this.destroyer = destroyer;
        this.handle = pointer.reinterpret(size, arena, null);
        List<Lifetime> list = new ArrayList<>();
        for (Lifetime l : uses) {
            if (l != null && !list.contains(l)) {
                list.add(l);
            }
        }
        this.uses = list.toArray(new Lifetime[0]);
        int linked = 0;
        try {
            for (Lifetime l : this.uses) {
                l.addUser(this);
                linked++;
            }
        } catch (RuntimeException | Error e) {
            for (int i = 0; i < linked; i++) {
                this.uses[i].removeUser(this);
            }
            arena.close();
            throw e;
        }
    }

    /** {@return the object that holds this lifetime} */
    public Object owner() {
        return owner;
    }

    /**
     * For a constructor of the owner that fails after this lifetime was made, when the native object
     * exists: closes the arena, destroys the object and unlinks it from what it uses, so that they
     * stay closable. A failure of either is added to {@code failure} as suppressed; the caller then
     * throws {@code failure}.
     */
    public void abandon(Throwable failure) {
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
            destroyer.destroy(address);
        } catch (RuntimeException | Error e) {
            failure.addSuppressed(e);
        }
        for (Lifetime l : uses) {
            l.removeUser(this);
        }
    }

    /**
     * Lets the lifetimes this one uses close it when {@code test} says it is orphaned (for a confined
     * view, when its owner thread has ended: nothing can be in a call through it, and nothing else may
     * close it), rather than refuse to close because it is open.
     */
    public void orphanedWhen(BooleanSupplier test) {
        orphaned = test;
    }

    /** Makes {@code user} one of the lifetimes that must close before this one (also after creation). */
    public synchronized void addUser(Lifetime user) {
        if (closed) {
            throw new IllegalStateException(owner + " is closed");
        }
        users.add(user);
    }

    /** Undoes {@link #addUser}. */
    public synchronized void removeUser(Lifetime user) {
        users.remove(user);
    }

    /** {@return how many open lifetimes whose owner is a {@code type} use this one} */
    public synchronized int countUsers(Class<?> type) {
        int n = 0;
        for (Lifetime l : users) {
            n += type.isInstance(l.owner) ? 1 : 0;
        }
        return n;
    }

    /** The C struct; throws {@link IllegalStateException} ("... is closed") once closed. */
    public MemorySegment handle() {
        MemorySegment h = handle;
        if (!h.scope().isAlive()) {
            throw new IllegalStateException(owner + " is closed");
        }
        return h;
    }

    /**
     * The C struct without a liveness check, for the data path: the downcall itself refuses a segment
     * whose arena is closed, and {@link #closed(IllegalStateException)} names the owner.
     */
    public MemorySegment ptr() {
        return handle;
    }

    /** {@return whether the object is still open} Lock-free, for the data path. */
    public boolean isOpen() {
        return handle.scope().isAlive();
    }

    /** {@return whether {@link #close()} has completed} */
    public synchronized boolean isClosed() {
        return closed;
    }

    /**
     * What a call on the object throws when FFM refused one of its segments: "... is closed" when it
     * is, else FFM's own exception (another segment of the call was closed).
     */
    public IllegalStateException closed(IllegalStateException cause) {
        return isOpen() ? cause : new IllegalStateException(owner + " is closed", cause);
    }

    /**
     * For a verb that involves several objects (one created from others): FFM's refusal ("Already
     * closed") of one that another thread closed during the call becomes "... is closed", naming it.
     */
    public static IllegalStateException closed(IllegalStateException cause, Lifetime... involved) {
        for (Lifetime l : involved) {
            if (l != null && !l.isOpen()) {
                return new IllegalStateException(l.owner + " is closed", cause);
            }
        }
        return cause;
    }

    // Control-path calls on the object. The handle is checked first, but another thread may close the
    // object between the check and the downcall, and FFM then refuses the segment with its own bare
    // "Already closed": these turn that into "... is closed", as the data path does (closed(cause)).

    /** {@link Native#call} on this object. */
    public <T> T call(Native.Body<T> body) {
        try {
            return Native.call(body);
        } catch (IllegalStateException e) {
            throw closed(e);
        }
    }

    /** {@link Native#check} on this object. */
    public void check(String verb, Native.Hint hint, Native.IntBody body) {
        try {
            Native.check(verb, hint, body);
        } catch (IllegalStateException e) {
            throw closed(e);
        }
    }

    /** Reads a field of the C struct. */
    public <T> T read(Function<MemorySegment, T> field) {
        try {
            return field.apply(handle());
        } catch (IllegalStateException e) {
            throw closed(e);
        }
    }

    /**
     * Destroys the C object, under the closing rule. Other threads may be in calls that use it: they
     * are waited for (at most {@value #CLOSE_RETRY_SECONDS} s), and their next call throws
     * {@link IllegalStateException}. If the destroyer throws, the object stays open and usable.
     *
     * @throws IllegalStateException if already closed, if lifetimes that use this one are open (naming
     *                               them), or if another thread has been in a call that uses it for
     *                               {@value #CLOSE_RETRY_SECONDS} s; the object then stays open
     */
    public void close() {
        MemorySegment address;
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException(owner + " is already closed");
            }
            for (Lifetime user : List.copyOf(users)) {
                BooleanSupplier test = user.orphaned;
                if (test != null && test.getAsBoolean() && user.isOpen()) {
                    user.close(); // removes itself from users (this thread holds both locks)
                }
            }
            if (!users.isEmpty()) {
                throw new IllegalStateException("cannot close " + owner + ": still in use by " + names(users)
                        + "; close those first");
            }
            address = MemorySegment.ofAddress(handle.address()).reinterpret(handle.byteSize());
            // Closing the arena first makes every later use fail in Java; it throws (and nothing is
            // freed) while another thread is in a call that uses this object. Calls on the data path
            // are short: retry in their gaps for a while, so that an object a busy thread polls can be
            // closed (that thread then gets IllegalStateException).
            closeArena();
            closed = true;
            try {
                destroyer.destroy(address);
            } catch (RuntimeException | Error e) {
                // The C object still exists: reopen, so that it stays usable and closable.
                Arena reopened = Arena.ofShared();
                handle = address.reinterpret(address.byteSize(), reopened, null);
                arena = reopened;
                closed = false;
                throw e;
            }
        }
        for (Lifetime l : uses) {
            l.removeUser(this);
        }
        Native.wakeWaiters(); // a virtual thread waiting on it (or on what it belonged to) finds it closed
    }

    /**
     * The names of the owners of {@code lifetimes}, as a list prints them. A lifetime joins its
     * parents' users as soon as its native object exists, before the owner's constructor has set the
     * fields its toString reads: another thread's close() may see it then, and names it by its class.
     */
    private static String names(Set<Lifetime> lifetimes) {
        List<String> names = new ArrayList<>();
        for (Lifetime l : lifetimes) {
            String name;
            try {
                name = String.valueOf(l.owner);
            } catch (RuntimeException e) {
                name = l.owner.getClass().getSimpleName() + " (being created by another thread)";
            }
            names.add(name);
        }
        return names.toString();
    }

    private void closeArena() {
        long deadline = System.nanoTime() + CLOSE_RETRY_NANOS;
        for (int attempt = 0; ; attempt++) {
            try {
                arena.close();
                return;
            } catch (IllegalStateException e) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("cannot close " + owner + ": another thread has been in calls "
                            + "that use it for " + CLOSE_RETRY_SECONDS + " s (a blocked post or poll?); "
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

    @Override
    public String toString() {
        return "Lifetime[" + owner + "]";
    }
}
