package io.github.panamaverbs.jmh;

import io.github.panamaverbs.verbs.AccessFlag;
import io.github.panamaverbs.verbs.CompletionQueue;
import io.github.panamaverbs.verbs.ConnectOptions;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.MemoryRegion;
import io.github.panamaverbs.verbs.ProtectionDomain;
import io.github.panamaverbs.verbs.QpType;
import io.github.panamaverbs.verbs.QpInitAttributes;
import io.github.panamaverbs.verbs.QueuePair;
import io.github.panamaverbs.verbs.WcStatus;
import io.github.panamaverbs.verbs.WorkCompletions;

/**
 * Two RC queue pairs connected to each other through the typed API, each with its own completion
 * queue and a registered buffer with remote write access: the typed API's side of the benchmarks.
 */
final class ApiPair implements AutoCloseable {
    final Context ctx;
    final ProtectionDomain pd;
    final CompletionQueue cqA;
    final CompletionQueue cqB;
    final QueuePair a;
    final QueuePair b;
    final MemoryRegion mrA;
    final MemoryRegion mrB;

    ApiPair(long size) {
        Rdma dev = Rdma.DEVICE;
        ctx = dev.open();
        pd = ctx.allocateProtectionDomain();
        cqA = ctx.createCompletionQueue(1024);
        cqB = ctx.createCompletionQueue(1024);
        a = pd.createQueuePair(new QpInitAttributes(QpType.RC, cqA, cqA).maxSendWr(256).maxRecvWr(256));
        b = pd.createQueuePair(new QpInitAttributes(QpType.RC, cqB, cqB).maxSendWr(256).maxRecvWr(256));
        mrA = pd.allocateAndRegister(size, AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_WRITE, AccessFlag.REMOTE_READ);
        mrB = pd.allocateAndRegister(size, AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_WRITE, AccessFlag.REMOTE_READ);
        ConnectOptions how = dev.options();
        var ea = a.localEndpoint(how);
        var eb = b.localEndpoint(how);
        a.connect(eb, how);
        b.connect(ea, how);
    }

    /** Polls {@code cq} into {@code wc} until it returns at least one completion; fails on an error status. */
    static int awaitAny(CompletionQueue cq, WorkCompletions wc) {
        int n;
        while ((n = cq.poll(wc)) == 0) {
            Thread.onSpinWait();
        }
        for (int i = 0; i < n; i++) {
            if (wc.status(i) != WcStatus.SUCCESS) {
                throw new IllegalStateException("completion failed: " + wc.status(i));
            }
        }
        return n;
    }

    @Override
    public void close() {
        b.close();
        a.close();
        mrB.close();
        mrA.close();
        cqB.close();
        cqA.close();
        pd.close();
        ctx.close();
    }
}
