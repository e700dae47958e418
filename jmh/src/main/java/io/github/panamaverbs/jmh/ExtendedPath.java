package io.github.panamaverbs.jmh;

import io.github.panamaverbs.verbs.ExtendedCompletionQueue;
import io.github.panamaverbs.verbs.SendBatch;
import io.github.panamaverbs.verbs.WcStatus;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The extended verbs' data path, the same operations as {@link PollEmpty} and {@link WritePoll}
 * through the newer interfaces: {@code ibv_start_poll} of an empty extended CQ, and a signaled
 * 64-byte RDMA write posted with {@code ibv_wr_start} / {@code ibv_wr_rdma_write} /
 * {@code ibv_wr_set_sge} / {@code ibv_wr_complete} ({@link SendBatch}) whose completion is read with
 * {@code ibv_start_poll} / {@code ibv_end_poll}. Each beside the same sequence in C
 * ({@code pvb_ex_poll_empty}, {@code pvb_ex_write_poll}) called once with N iterations.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 10, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class ExtendedPath {
    static final int POLLS = 100_000;
    static final int WRITES = 2_000;
    static final int SIZE = 64;

    @State(Scope.Thread)
    public static class Api {
        ApiPair p;
        SendBatch batch;
        ExtendedCompletionQueue cq;
        int rkey;
        long remote;

        @Setup(Level.Trial)
        public void open() {
            p = new ApiPair(1 << 16, true);
            batch = p.a.sendBatch();
            cq = (ExtendedCompletionQueue) p.cqA; // an ApiPair made with extended = true
            rkey = p.mrB.rkey();
            remote = p.mrB.address();
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
            pair = new C.Pair(Rdma.DEVICE, 1 << 16, 0, true);
        }

        @TearDown(Level.Trial)
        public void close() {
            pair.close();
        }
    }

    @Benchmark
    public boolean pollEmpty(Api s) {
        boolean found = s.cq.startPoll();
        if (found) {
            s.cq.endPoll();
        }
        return found;
    }

    @Benchmark
    public WcStatus writePoll(Api s) {
        s.batch.start().id(1).signaled(true).rdmaWrite(s.rkey, s.remote).sge(s.p.mrA, 0, SIZE).complete();
        ExtendedCompletionQueue cq = s.cq;
        while (!cq.startPoll()) {
            Thread.onSpinWait();
        }
        WcStatus status = cq.status();
        cq.endPoll();
        if (status != WcStatus.SUCCESS) {
            throw new IllegalStateException("completion failed: " + status);
        }
        return status;
    }

    @Benchmark
    @Warmup(iterations = 1, time = 1)
    @Measurement(iterations = 3, time = 1)
    @OperationsPerInvocation(POLLS)
    public long cPollEmpty(Native s) throws Throwable {
        return (long) C.EX_POLL_EMPTY.invokeExact(s.pair.pair, (long) POLLS);
    }

    @Benchmark
    @Warmup(iterations = 1, time = 1)
    @Measurement(iterations = 3, time = 1)
    @OperationsPerInvocation(WRITES)
    public long cWritePoll(Native s) throws Throwable {
        return C.check("pvb_ex_write_poll", (long) C.EX_WRITE_POLL.invokeExact(s.pair.pair, (long) WRITES, SIZE));
    }
}
