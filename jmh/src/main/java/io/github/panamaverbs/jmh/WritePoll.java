package io.github.panamaverbs.jmh;

import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
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
 * Post of a prepared, signaled 64-byte RDMA write from one RC queue pair to the other, then poll
 * of its completion: the typed API, the raw generated bindings, and a C loop ({@code pvb_write_poll})
 * called once with {@link #N} iterations.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 10, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class WritePoll {
    static final int N = 2_000;
    static final int SIZE = 64;

    @State(Scope.Thread)
    public static class Api {
        ApiPair p;
        SendRequest write;
        WorkCompletions wc;

        @Setup(Level.Trial)
        public void open() {
            p = new ApiPair(1 << 16);
            write = new SendRequest(1, Arena.ofAuto()).id(1).opcode(SendOpcode.RDMA_WRITE).signaled(true)
                    .sge(p.mrA, 0, SIZE).rdma(p.mrB.address(), p.mrB.rkey());
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
        Raw raw;
        Arena arena;
        MemorySegment write;

        @Setup(Level.Trial)
        public void open() {
            pair = new C.Pair(Rdma.DEVICE, 1 << 16, 0);
            arena = Arena.ofConfined();
            raw = new Raw(pair, arena, 1);
            write = Raw.write(pair, arena, SIZE, 0, MemorySegment.NULL, true);
        }

        @TearDown(Level.Trial)
        public void close() {
            arena.close();
            pair.close();
        }
    }

    @Benchmark
    public int api(Api s) {
        s.p.a.postSend(s.write);
        return ApiPair.awaitAny(s.p.cqA, s.wc);
    }

    @Benchmark
    public void raw(Native s) {
        s.raw.postSend(0, s.write);
        s.raw.awaitOne(0);
    }

    @Benchmark
    @Warmup(iterations = 1, time = 1)
    @Measurement(iterations = 3, time = 1)
    @OperationsPerInvocation(N)
    public long c(Native s) throws Throwable {
        return C.check("pvb_write_poll", (long) C.WRITE_POLL.invokeExact(s.pair.pair, (long) N, SIZE));
    }
}
