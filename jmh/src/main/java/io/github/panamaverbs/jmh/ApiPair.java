package io.github.panamaverbs.jmh;

import io.github.panamaverbs.verbs.AccessFlag;
import io.github.panamaverbs.verbs.CompletionChannel;
import io.github.panamaverbs.verbs.CompletionQueue;
import io.github.panamaverbs.verbs.ConnectOptions;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.MemoryRegion;
import io.github.panamaverbs.verbs.ProtectionDomain;
import io.github.panamaverbs.verbs.QpType;
import io.github.panamaverbs.verbs.QpInitAttributes;
import io.github.panamaverbs.verbs.QueuePair;
import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.WcField;
import io.github.panamaverbs.verbs.WcOpcode;
import io.github.panamaverbs.verbs.WcStatus;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.util.EnumSet;
import java.util.Set;

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
    /** The completion queues' own channels ({@link #withEvents}); null otherwise. */
    final CompletionChannel chA;
    final CompletionChannel chB;

    ApiPair(long size) {
        this(size, false);
    }

    /** Each completion queue with a completion channel of its own, as C's {@code pvb_pair_open_events}. */
    static ApiPair withEvents(long size) {
        return new ApiPair(size, false, true);
    }

    ApiPair(long size, boolean extended) {
        this(size, extended, false);
    }

    /**
     * @param extended extended completion queues (standard fields) and queue pairs that post RDMA
     *                 writes and sends through {@link QueuePair#sendBatch()}, as C's
     *                 {@code pvb_pair_open_ex}
     */
    private ApiPair(long size, boolean extended, boolean events) {
        Rdma dev = Rdma.DEVICE;
        ctx = dev.open();
        pd = ctx.allocateProtectionDomain();
        chA = events ? ctx.createCompletionChannel() : null;
        chB = events ? ctx.createCompletionChannel() : null;
        cqA = extended ? ctx.createCompletionQueue(1024, WcField.STANDARD, chA, 0) : events ? ctx.createCompletionQueue(1024, chA, 0) : ctx.createCompletionQueue(1024);
        cqB = extended ? ctx.createCompletionQueue(1024, WcField.STANDARD, chB, 0) : events ? ctx.createCompletionQueue(1024, chB, 0) : ctx.createCompletionQueue(1024);
        Set<SendOpcode> ops = extended ? EnumSet.of(SendOpcode.RDMA_WRITE, SendOpcode.SEND) : null;
        a = pd.createQueuePair(init(cqA, ops));
        b = pd.createQueuePair(init(cqB, ops));
        mrA = pd.allocateAndRegister(size, AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_WRITE, AccessFlag.REMOTE_READ);
        mrB = pd.allocateAndRegister(size, AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_WRITE, AccessFlag.REMOTE_READ);
        ConnectOptions how = dev.options();
        var ea = a.localEndpoint(how);
        var eb = b.localEndpoint(how);
        a.connect(eb, how);
        b.connect(ea, how);
    }

    private static QpInitAttributes init(CompletionQueue cq, Set<SendOpcode> sendOps) {
        QpInitAttributes init = new QpInitAttributes(QpType.RC, cq, cq).maxSendWr(256).maxRecvWr(256);
        return sendOps == null ? init : init.sendOps(sendOps);
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

    /** Checks the {@code n} completions polled into {@code wc}: whether one is a receive; fails on an error status. */
    static boolean sawReceive(WorkCompletions wc, int n) {
        boolean got = false;
        for (int i = 0; i < n; i++) {
            if (wc.status(i) != WcStatus.SUCCESS) {
                throw new IllegalStateException("completion failed: " + wc.status(i));
            }
            got |= wc.opcode(i) == WcOpcode.RECV;
        }
        return got;
    }

    @Override
    public void close() {
        b.close();
        a.close();
        mrB.close();
        mrA.close();
        cqB.close();
        cqA.close();
        if (chA != null) {
            chB.close();
            chA.close();
        }
        pd.close();
        ctx.close();
    }
}
