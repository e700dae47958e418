package io.github.panamaverbs.jmh;

import io.github.panamaverbs.verbs.CompletionQueue;
import io.github.panamaverbs.verbs.Context;
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
 * {@code ibv_poll_cq} of an empty completion queue (room for 16 completions): the typed API, the
 * raw generated bindings, and a C loop ({@code pvb_poll_empty}) called once with {@link #N}
 * iterations.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 10, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class PollEmpty {
    static final int N = 100_000;

    @State(Scope.Thread)
    public static class Api {
        Context ctx;
        CompletionQueue cq;
        WorkCompletions wc;

        @Setup(Level.Trial)
        public void open() {
            ctx = Rdma.DEVICE.open();
            cq = ctx.createCompletionQueue(256);
            wc = new WorkCompletions(16);
        }

        @TearDown(Level.Trial)
        public void close() {
            cq.close();
            ctx.close();
        }
    }

    @State(Scope.Thread)
    public static class Native {
        C.Pair pair;
        Raw raw;
        Arena arena;

        @Setup(Level.Trial)
        public void open() {
            pair = new C.Pair(Rdma.DEVICE, 1 << 16, 0);
            arena = Arena.ofConfined();
            raw = new Raw(pair, arena, 16);
        }

        @TearDown(Level.Trial)
        public void close() {
            arena.close();
            pair.close();
        }
    }

    @Benchmark
    public int api(Api s) {
        return s.cq.poll(s.wc);
    }

    @Benchmark
    public int raw(Native s) {
        return s.raw.poll(0, 16);
    }

    @Benchmark
    @Warmup(iterations = 1, time = 1)
    @Measurement(iterations = 3, time = 1)
    @OperationsPerInvocation(N)
    public long c(Native s) throws Throwable {
        return (long) C.POLL_EMPTY.invokeExact(s.pair.cq[0], (long) N);
    }
}
