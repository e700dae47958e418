package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.VerbsBridge;
import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

/** The verbs package's side of {@link VerbsBridge}; registered when {@link Resource} is initialized. */
final class Bridge implements VerbsBridge {
    @Override
    public Resource handle(MemorySegment pointer, long size, Object owner, Consumer<MemorySegment> destroy, Resource... uses) {
        return new Handle(pointer, size, owner, destroy, uses);
    }

    @Override
    public MemorySegment pointer(Resource resource) {
        return resource.handle();
    }

    @Override
    public Context borrowedContext(MemorySegment ibvContext) {
        return Context.borrowed(ibvContext);
    }

    @Override
    public QueuePair queuePair(ProtectionDomain pd, QpInitAttributes init, UnaryOperator<MemorySegment> create,
                               Consumer<MemorySegment> destroy, Resource owner, QpState initialState) {
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
}
