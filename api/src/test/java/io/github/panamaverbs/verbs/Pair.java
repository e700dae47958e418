package io.github.panamaverbs.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.panamaverbs.verbs.testing.TestDevice;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;

/**
 * Two queue pairs of one type on one device, connected to each other, each with its own completion
 * queue and a registered buffer (1 MiB unless told) with full remote access. The test rig for data-path tests.
 */
final class Pair implements AutoCloseable {
    static final int BUFFER = 1 << 20;

    final Context ctx;
    final ProtectionDomain pd;
    final CompletionQueue cqA;
    final CompletionQueue cqB;
    final QueuePair a;
    final QueuePair b;
    final MemoryRegion mrA;
    final MemoryRegion mrB;
    final ConnectOptions how;
    final WorkCompletions wc = new WorkCompletions(64);
    private final List<AutoCloseable> extra = new ArrayList<>();

    Pair(TestDevice device, QpType type) {
        this(device, type, c -> c);
    }

    Pair(TestDevice device, QpType type, java.util.function.UnaryOperator<QpInitAttributes> tune) {
        this(device, type, BUFFER, tune);
    }

    /** A pair whose two registered buffers have {@code bufferSize} bytes each. */
    Pair(TestDevice device, QpType type, long bufferSize, java.util.function.UnaryOperator<QpInitAttributes> tune) {
        ctx = device.open();
        pd = ctx.allocateProtectionDomain();
        cqA = ctx.createCompletionQueue(256);
        cqB = ctx.createCompletionQueue(256);
        a = pd.createQueuePair(tune.apply(new QpInitAttributes(type, cqA, cqA).maxSendWr(64).maxRecvWr(64)));
        b = pd.createQueuePair(tune.apply(new QpInitAttributes(type, cqB, cqB).maxSendWr(64).maxRecvWr(64)));
        EnumSet<AccessFlag> all = EnumSet.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_WRITE, AccessFlag.REMOTE_READ,
                AccessFlag.REMOTE_ATOMIC);
        if (type == QpType.UC) {
            all.remove(AccessFlag.REMOTE_READ);
            all.remove(AccessFlag.REMOTE_ATOMIC);
        }
        mrA = pd.allocateAndRegister(bufferSize, all.toArray(AccessFlag[]::new));
        mrB = pd.allocateAndRegister(bufferSize, all.toArray(AccessFlag[]::new));
        how = ConnectOptions.port(device.port()).gidIndex(device.gidIndex());
        if (type != QpType.UD) {
            RemoteEndpoint ea = a.localEndpoint(how);
            RemoteEndpoint eb = b.localEndpoint(how);
            a.connect(eb, how);
            b.connect(ea, how);
        }
    }

    <T extends AutoCloseable> T keep(T resource) {
        extra.add(resource);
        return resource;
    }

    /** Polls {@code cq} until {@code n} completions arrived (into {@link #wc}), or fails after 10 s. */
    WorkCompletions await(CompletionQueue cq, int n) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        int got = 0;
        WorkCompletions collected = new WorkCompletions(Math.max(n, 1));
        while (got < n) {
            int k = cq.poll(wc);
            for (int i = 0; i < k; i++) {
                if (got == n) {
                    fail("more completions than expected: " + wc);
                }
                java.lang.foreign.MemorySegment.copy(wc.segment, i * WorkCompletions.SIZE, collected.segment,
                        got++ * WorkCompletions.SIZE, WorkCompletions.SIZE);
            }
            if (System.nanoTime() > deadline) {
                fail("timed out waiting for " + n + " completions, got " + got);
            }
        }
        collected.count = n;
        return collected;
    }

    /** Awaits one completion and checks that it succeeded with {@code opcode}. */
    WorkCompletions expectOne(CompletionQueue cq, WcOpcode opcode) {
        WorkCompletions c = await(cq, 1);
        assertEquals(WcStatus.SUCCESS, c.status(0), () -> "completion failed: " + c.status(0).description());
        assertEquals(opcode, c.opcode(0));
        return c;
    }

    @Override
    public void close() throws Exception {
        for (int i = extra.size() - 1; i >= 0; i--) {
            extra.get(i).close();
        }
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
