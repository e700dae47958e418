package io.github.panamaverbs.jmh;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.github.panamaverbs.bindings.ibv_send_wr;
import io.github.panamaverbs.bindings.ibv_wc;
import io.github.panamaverbs.verbs.CompletionQueue;
import io.github.panamaverbs.verbs.QueuePair;
import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.StandInProvider;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Two threads on one completion queue and one queue pair (the shared, any-thread form), with no
 * device: each thread polls the same stand-in queue, or posts to the same stand-in queue pair
 * (pvbench.c, as in {@link CallShapes}), through the typed API, and C does the same from two threads
 * (each thread runs the C loop: per call = loop / N). The typed API's shared queue is a segment of
 * one shared arena, acquired and released by every call of both threads (JDK-8371260 reports that
 * counter's contention growing with threads); C's calls share only the stand-in's memory. A thread's
 * own {@code WorkCompletions} and {@code SendRequest}, as the API requires.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@Threads(2)
public class SharedQueue {
    private static final int LOOP = 1000;
    private static final MethodHandle POLL_FN = C.LINKER.downcallHandle(C.find("pvb_fake_poll_fn"), FunctionDescriptor.of(ADDRESS));
    private static final MethodHandle POST_FN = C.LINKER.downcallHandle(C.find("pvb_fake_post_fn"), FunctionDescriptor.of(ADDRESS));
    private static final MethodHandle FAKE_CQ_SIZE = C.LINKER.downcallHandle(C.find("pvb_fake_cq_size"), FunctionDescriptor.of(JAVA_LONG));
    private static final MethodHandle FAKE_QP_SIZE = C.LINKER.downcallHandle(C.find("pvb_fake_qp_size"), FunctionDescriptor.of(JAVA_LONG));
    private static final MethodHandle POLL_LOOP = C.LINKER.downcallHandle(C.find("pvb_fake_poll_loop"),
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG));
    private static final MethodHandle POST_LOOP = C.LINKER.downcallHandle(C.find("pvb_fake_post_loop"),
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS,
                    ADDRESS, JAVA_LONG));

    /** The one queue and queue pair both threads use. */
    @State(Scope.Benchmark)
    public static class Queues {
        StandInProvider standIn;
        CompletionQueue cq;
        QueuePair qp;

        @Setup(Level.Trial)
        public void setUp() throws Throwable {
            standIn = new StandInProvider((MemorySegment) POLL_FN.invokeExact(), (MemorySegment) POST_FN.invokeExact(),
                    (long) FAKE_CQ_SIZE.invokeExact(), (long) FAKE_QP_SIZE.invokeExact());
            cq = standIn.completionQueue();
            qp = standIn.queuePair();
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            standIn.close();
        }
    }

    /** Each thread's batch and request, and its C-side arguments. */
    @State(Scope.Thread)
    public static class Mine {
        final WorkCompletions batch = new WorkCompletions(16);
        final SendRequest request = new SendRequest(1).opcode(SendOpcode.SEND).id(42);
        Arena arena;
        MemorySegment wc;
        MemorySegment wr;
        MemorySegment bad;

        @Setup(Level.Trial)
        public void setUp() {
            arena = Arena.ofConfined();
            wc = arena.allocate(ibv_wc.layout(), 16);
            wr = arena.allocate(ibv_send_wr.layout());
            bad = arena.allocate(ADDRESS);
            ibv_send_wr.wr_id(wr, 42);
            ibv_send_wr.num_sge(wr, 1);
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            arena.close();
        }
    }

    @Benchmark
    public int typedPollShared(Queues q, Mine m) {
        return q.cq.poll(m.batch);
    }

    @Benchmark
    @OperationsPerInvocation(LOOP)
    public long pollCShared(Queues q, Mine m) throws Throwable {
        return (long) POLL_LOOP.invokeExact(q.standIn.completionQueueStruct(), m.wc, (long) LOOP);
    }

    @Benchmark
    public void typedPostShared(Queues q, Mine m) {
        q.qp.postSend(m.request);
    }

    @Benchmark
    @OperationsPerInvocation(LOOP)
    public long postCShared(Queues q, Mine m) throws Throwable {
        return (long) POST_LOOP.invokeExact(q.standIn.queuePairStruct(), m.wr, m.bad, (long) LOOP);
    }
}
