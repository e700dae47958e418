package io.github.panamaverbs.access;

import io.github.panamaverbs.internal.Lifetime;
import io.github.panamaverbs.internal.Quirks;
import io.github.panamaverbs.verbs.AddressVector;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.ProtectionDomain;
import io.github.panamaverbs.verbs.QpInitAttributes;
import io.github.panamaverbs.verbs.QpState;
import io.github.panamaverbs.verbs.QueuePair;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

/**
 * What the module's other public packages need of the verbs package beyond its public API, and
 * nothing more: the connection manager opens contexts and creates queue pairs through librdmacm and
 * reports the connection's state to them; the diagnostics list a device's provider quirks. The verbs
 * package implements it and registers the implementation when {@link Context} is initialized (the
 * JDK's {@code jdk.internal.access} pattern): this interface and {@code Context} are the module's one
 * pair of classes that import each other. Not exported.
 */
public interface VerbsAccess {
    /** The {@link Context} over an {@code ibv_context} that librdmacm opened (and closes): one per device. */
    Context borrowedContext(MemorySegment ibvContext);

    /** The {@code ibv_pd} of {@code pd}; {@link IllegalStateException} if it is closed. */
    MemorySegment pointer(ProtectionDomain pd);

    /**
     * A queue pair created by {@code create}, which is given the filled {@code ibv_qp_init_attr} and
     * returns the new {@code ibv_qp} (and writes the granted capabilities back into the attributes,
     * as {@code ibv_create_qp} does); destroyed by {@code destroy}; it uses {@code owner} (the
     * connection ID's lifetime), which therefore closes after it.
     */
    QueuePair queuePair(ProtectionDomain pd, QpInitAttributes init, UnaryOperator<MemorySegment> create,
                        Consumer<MemorySegment> destroy, Lifetime owner, QpState initialState);

    /** The {@link AddressVector} of a {@code struct ibv_ah_attr} (from a datagram or multicast event). */
    AddressVector addressVector(MemorySegment ahAttr);

    /** Records a state that librdmacm moved the queue pair to. */
    void stateChanged(QueuePair qp, QpState state);

    /** The connection of {@code qp} is gone (DISCONNECTED): moves it to ERR, so that what is outstanding is flushed. */
    void connectionGone(QueuePair qp);

    /** Refuses a transport retry count the device of {@code context} would take as "for ever" (7 on Soft-RoCE). */
    void checkRetryCount(Context context, int retryCount);

    /** The provider bugs of {@link Quirks} that affect the device of {@code context}. */
    Set<Quirks> quirks(Context context);

    /** {@return the verbs package's implementation} Initializes {@link Context} if nothing has yet. */
    static VerbsAccess get() {
        VerbsAccess access = Holder.access;
        if (access == null) {
            try {
                MethodHandles.lookup().ensureInitialized(Context.class);
            } catch (IllegalAccessException e) {
                throw new AssertionError(e);
            }
            access = Holder.access;
        }
        return access;
    }

    /** Called once, by {@link Context}'s static initializer. */
    static void register(VerbsAccess access) {
        if (Holder.access != null) {
            throw new IllegalStateException("VerbsAccess is registered already");
        }
        Holder.access = access;
    }

    /** Where the implementation is kept. */
    final class Holder {
        private static volatile VerbsAccess access;

        private Holder() {
        }
    }
}
