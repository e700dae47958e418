package io.github.panamaverbs.jmh;

import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.lang.foreign.Arena;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Message rate of 64-byte RDMA writes with batching: a chain of {@link #BATCH} prepared writes, only
 * the last signaled, posted in one call, then the one completion polled. One operation is one
 * message. The typed API, and the same loop in C ({@code pvb_write_batch}); perftest's
 * {@code ib_write_bw -s 64} runs beside it in scripts/bench.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 10, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class MessageRate {
    static final int BATCH = 16;
    static final int SIZE = 64;
    static final int N = 200;

    @State(Scope.Thread)
    public static class Api {
        ApiPair p;
        SendRequest chain;
        WorkCompletions wc;

        @Setup(Level.Trial)
        public void open() {
            p = new ApiPair(1 << 16);
            Arena auto = Arena.ofAuto();
            SendRequest next = null;
            for (int j = BATCH - 1; j >= 0; j--) {
                SendRequest r = new SendRequest(1, auto).id(j).opcode(SendOpcode.RDMA_WRITE).signaled(j == BATCH - 1)
                        .sge(p.mrA, 0, SIZE).rdma(p.mrB.address() + (long) j * SIZE, p.mrB.rkey());
                if (next != null) {
                    r.next(next);
                }
                next = r;
            }
            chain = next;
            wc = new WorkCompletions(1);
        }

        @TearDown(Level.Trial)
        public void close() {
            p.close();
        }
    }

    @State(Scope.Thread)
    public static class Native {
        C.Pair pair;

        @Setup(Level.Trial)
        public void open() {
            pair = new C.Pair(Rdma.DEVICE, 1 << 16, 0);
        }

        @TearDown(Level.Trial)
        public void close() {
            pair.close();
        }
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int api(Api s) {
        s.p.a.postSend(s.chain);
        return ApiPair.awaitAny(s.p.cqA, s.wc);
    }

    @Benchmark
    @Warmup(iterations = 1, time = 1)
    @Measurement(iterations = 3, time = 1)
    @OperationsPerInvocation(N * BATCH)
    public long c(Native s) throws Throwable {
        return C.check("pvb_write_batch", (long) C.WRITE_BATCH.invokeExact(s.pair.pair, (long) N, BATCH, SIZE));
    }
}
