package io.github.panamaverbs.internal;

import io.github.panamaverbs.verbs.AddressVector;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.ProtectionDomain;
import io.github.panamaverbs.verbs.QpInitAttributes;
import io.github.panamaverbs.verbs.QpState;
import io.github.panamaverbs.verbs.QueuePair;
import io.github.panamaverbs.verbs.Resource;
import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

/**
 * What the other packages of this module (the connection manager) need of the verbs package's
 * internals, without making them public API: lifetimes under the one closing rule, a context that
 * librdmacm opened, a queue pair that librdmacm creates. Implemented in the verbs package and
 * found through {@link #get()}.
 */
public interface VerbsBridge {
    /**
     * A lifetime for a native object of another package: closed by {@link Resource#close()} under
     * the closing rule ({@code uses} must be closed after it; it must be closed after what uses it).
     *
     * @param owner   what {@code toString} names (the object that holds the handle)
     * @param destroy frees the C object; throws {@code VerbsException} if that fails
     */
    Resource handle(MemorySegment pointer, long size, Object owner, Consumer<MemorySegment> destroy, Resource... uses);

    /** The C object of {@code resource}; {@link IllegalStateException} if it is closed. */
    MemorySegment pointer(Resource resource);

    /** The {@link Context} over an {@code ibv_context} that librdmacm opened (and closes): one per device. */
    Context borrowedContext(MemorySegment ibvContext);

    /**
     * A queue pair created by {@code create}, which is given the filled {@code ibv_qp_init_attr} and
     * returns the new {@code ibv_qp} (and writes the granted capabilities back into the attributes,
     * as {@code ibv_create_qp} does); destroyed by {@code destroy}, closable only before {@code owner}.
     */
    QueuePair queuePair(ProtectionDomain pd, QpInitAttributes init, UnaryOperator<MemorySegment> create,
                        Consumer<MemorySegment> destroy, Resource owner, QpState initialState);

    /** The {@link AddressVector} of a {@code struct ibv_ah_attr} (from a datagram or multicast event). */
    AddressVector addressVector(MemorySegment ahAttr);

    /** Records a state that librdmacm moved the queue pair to. */
    void stateChanged(QueuePair qp, QpState state);

    /** The connection of {@code qp} is gone (DISCONNECTED): moves it to ERR, so that what is outstanding is flushed. */
    void connectionGone(QueuePair qp);

    /** Refuses a transport retry count the device of {@code context} would take as "for ever" (7 on Soft-RoCE). */
    void checkRetryCount(Context context, int retryCount);

    /** The bridge, once the verbs package has registered it. */
    static VerbsBridge get() {
        VerbsBridge b = Holder.bridge;
        if (b == null) {
            try {
                Class.forName("io.github.panamaverbs.verbs.Resource", true, VerbsBridge.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException(e);
            }
            b = Holder.bridge;
        }
        return b;
    }

    /** Called once by the verbs package. */
    static void register(VerbsBridge bridge) {
        Holder.bridge = bridge;
    }

    /** Where the bridge is kept. */
    final class Holder {
        private static volatile VerbsBridge bridge;

        private Holder() {
        }
    }
}
