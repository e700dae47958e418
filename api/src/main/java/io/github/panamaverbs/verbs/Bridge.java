package io.github.panamaverbs.verbs;

import io.github.panamaverbs.access.VerbsAccess;
import io.github.panamaverbs.internal.Lifetime;
import io.github.panamaverbs.internal.Quirks;
import java.lang.foreign.MemorySegment;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

/** The verbs package's side of {@link VerbsAccess}; registered when {@link Context} is initialized. */
final class Bridge implements VerbsAccess {
    @Override
    public MemorySegment pointer(ProtectionDomain pd) {
        return pd.handle();
    }

    @Override
    public Context borrowedContext(MemorySegment ibvContext) {
        return Context.borrowed(ibvContext);
    }

    @Override
    public QueuePair queuePair(ProtectionDomain pd, QpInitAttributes init, UnaryOperator<MemorySegment> create,
                               Consumer<MemorySegment> destroy, Lifetime owner, QpState initialState) {
        return new QueuePair(pd, init, create, destroy, owner, initialState);
    }

    @Override
    public AddressVector addressVector(MemorySegment ahAttr) {
        return AddressVector.readFrom(ahAttr);
    }

    @Override
    public void stateChanged(QueuePair qp, QpState state) {
        qp.stateChanged(state);
    }

    @Override
    public void connectionGone(QueuePair qp) {
        qp.connectionGone();
    }

    @Override
    public void checkRetryCount(Context context, int retryCount) {
        QueuePair.checkRetryCount(context, retryCount);
    }

    @Override
    public Set<Quirks> quirks(Context context) {
        return context.quirks();
    }
}
