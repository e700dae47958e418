package io.github.panamaverbs.jmh;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
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
import java.lang.foreign.Linker;
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
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * The binding's own cost per data-path call, with no device (so at the host's real CPU speed): the
 * exact shapes of the typed API's calls, {@code poll_cq(fn, cq, n, wc)} and
 * {@code post_send(fn, qp, wr, bad_wr)}, into a stand-in provider function doing the trivial part
 * of the real one (pvbench.c), reached through the function pointer as libibverbs' inline
 * functions reach the provider's. Beside them: the same call made by C through the function
 * pointer (a C loop, per call = loop / N) and through JNI (jlong arguments, as DiSNI passes them).
 *
 * <p>The FFM forms: one segment of a shared arena (the queue's) with the others global, what the
 * typed API passes (the queue's handle is a segment of its resource's shared arena, so that closing
 * it makes later calls fail in Java; a request or completion batch in memory the GC frees goes as a
 * plain address, the object kept reachable across the call); every segment bound to a shared arena
 * (what the API passed before); segments of the global scope (no liveness check to make); and raw
 * addresses ({@code long} parameters); each plain and {@code critical} (no thread-state transition).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class CallShapes {
    private static final int LOOP = 1000;
    private static final Linker.Option CRITICAL = Linker.Option.critical(false);

    private static final MethodHandle POLL_FN = C.LINKER.downcallHandle(C.find("pvb_fake_poll_fn"), FunctionDescriptor.of(ADDRESS));
    private static final MethodHandle POST_FN = C.LINKER.downcallHandle(C.find("pvb_fake_post_fn"), FunctionDescriptor.of(ADDRESS));
    private static final MethodHandle FAKE_CQ_SIZE = C.LINKER.downcallHandle(C.find("pvb_fake_cq_size"), FunctionDescriptor.of(JAVA_LONG));
    private static final MethodHandle FAKE_QP_SIZE = C.LINKER.downcallHandle(C.find("pvb_fake_qp_size"), FunctionDescriptor.of(JAVA_LONG));
    private static final MethodHandle FAKE_QP_LAST_ID = C.LINKER.downcallHandle(C.find("pvb_fake_qp_last_id_offset"),
            FunctionDescriptor.of(JAVA_LONG));
    private static final MethodHandle POLL_LOOP = C.LINKER.downcallHandle(C.find("pvb_fake_poll_loop"),
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG));
    private static final MethodHandle POST_LOOP = C.LINKER.downcallHandle(C.find("pvb_fake_post_loop"),
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG));

    private static final FunctionDescriptor POLL = FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS);
    private static final FunctionDescriptor POST = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS);
    private static final FunctionDescriptor POLL_RAW = FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_LONG);
    private static final FunctionDescriptor POST_RAW = FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG);
    private static final MethodHandle POLL_PLAIN = C.LINKER.downcallHandle(POLL);
    private static final MethodHandle POLL_CRITICAL = C.LINKER.downcallHandle(POLL, CRITICAL);
    private static final MethodHandle POST_PLAIN = C.LINKER.downcallHandle(POST);
    private static final MethodHandle POST_CRITICAL = C.LINKER.downcallHandle(POST, CRITICAL);
    private static final MethodHandle POLL_RAW_PLAIN = C.LINKER.downcallHandle(POLL_RAW);
    private static final MethodHandle POLL_RAW_CRITICAL = C.LINKER.downcallHandle(POLL_RAW, CRITICAL);
    private static final MethodHandle POST_RAW_PLAIN = C.LINKER.downcallHandle(POST_RAW);
    private static final MethodHandle POST_RAW_CRITICAL = C.LINKER.downcallHandle(POST_RAW, CRITICAL);

    private Arena cqArena;
    private Arena qpArena;
    private Arena wcArena;
    private Arena wrArena;
    private MemorySegment pollFn;
    private MemorySegment postFn;
    /** Bound to shared arenas, one per object, as the typed API binds them. */
    private MemorySegment cq;
    private MemorySegment wc;
    private MemorySegment qp;
    private MemorySegment wr;
    private MemorySegment bad;
    /** The typed API's objects over the same stand-in provider (a context whose ops point at it). */
    private StandInProvider standIn;
    private CompletionQueue typedCq;
    private QueuePair typedQp;
    /** Their views confined to the benchmark's thread (JMH runs a thread-scoped state's setup in that thread). */
    private CompletionQueue.Confined confinedCq;
    private QueuePair.Confined confinedQp;
    private WorkCompletions batch;
    private SendRequest request;
    private long lastIdOffset;
    /** The same memory in the global scope. */
    private MemorySegment cqGlobal;
    private MemorySegment wcGlobal;
    private MemorySegment qpGlobal;
    private MemorySegment wrGlobal;
    private MemorySegment badGlobal;

    @Setup(Level.Trial)
    public void setUp() throws Throwable {
        cqArena = Arena.ofShared();
        qpArena = Arena.ofShared();
        wcArena = Arena.ofShared();
        wrArena = Arena.ofShared();
        pollFn = (MemorySegment) POLL_FN.invokeExact();
        postFn = (MemorySegment) POST_FN.invokeExact();
        cq = cqArena.allocate((long) FAKE_CQ_SIZE.invokeExact(), 8); // head == tail: an empty queue
        qp = qpArena.allocate((long) FAKE_QP_SIZE.invokeExact(), 8);
        lastIdOffset = (long) FAKE_QP_LAST_ID.invokeExact();
        standIn = new StandInProvider(pollFn, postFn, cq.byteSize(), qp.byteSize());
        typedCq = standIn.completionQueue();
        typedQp = standIn.queuePair();
        confinedCq = typedCq.confined();
        confinedQp = typedQp.confined();
        batch = new WorkCompletions(16);
        request = new SendRequest(1).opcode(SendOpcode.SEND).id(42);
        wc = wcArena.allocate(ibv_wc.layout(), 16);
        wr = wrArena.allocate(ibv_send_wr.layout());
        bad = wrArena.allocate(ADDRESS);
        ibv_send_wr.wr_id(wr, 42);
        ibv_send_wr.num_sge(wr, 1);
        cqGlobal = MemorySegment.ofAddress(cq.address()).reinterpret(cq.byteSize());
        qpGlobal = MemorySegment.ofAddress(qp.address()).reinterpret(qp.byteSize());
        wcGlobal = MemorySegment.ofAddress(wc.address()).reinterpret(wc.byteSize());
        wrGlobal = MemorySegment.ofAddress(wr.address()).reinterpret(wr.byteSize());
        badGlobal = MemorySegment.ofAddress(bad.address()).reinterpret(bad.byteSize());
    }

    @TearDown(Level.Trial)
    public void tearDown(BenchmarkParams params) {
        if (params.getBenchmark().contains(".post") && qp.get(JAVA_LONG, lastIdOffset) != 42) {
            throw new IllegalStateException("the post benchmarks did not reach the stand-in provider");
        }
        if (params.getBenchmark().contains(".typedPost") && standIn.queuePairStruct().get(JAVA_LONG, lastIdOffset) != 42) {
            throw new IllegalStateException("the typed post did not reach the stand-in provider");
        }
        confinedCq.close();
        confinedQp.close();
        standIn.close();
        cqArena.close();
        qpArena.close();
        wcArena.close();
        wrArena.close();
    }

    // ---- poll_cq(fn, cq, 16, wc) on an empty queue

    @Benchmark
    public int pollSharedArena() throws Throwable {
        return (int) POLL_PLAIN.invokeExact(pollFn, cq, 16, wc);
    }

    @Benchmark
    public int pollSharedArenaCritical() throws Throwable {
        return (int) POLL_CRITICAL.invokeExact(pollFn, cq, 16, wc);
    }

    @Benchmark
    public int pollOneShared() throws Throwable {
        return (int) POLL_PLAIN.invokeExact(pollFn, cq, 16, wcGlobal);
    }

    @Benchmark
    public int pollOneSharedCritical() throws Throwable {
        return (int) POLL_CRITICAL.invokeExact(pollFn, cq, 16, wcGlobal);
    }

    @Benchmark
    public int pollGlobal() throws Throwable {
        return (int) POLL_PLAIN.invokeExact(pollFn, cqGlobal, 16, wcGlobal);
    }

    @Benchmark
    public int pollGlobalCritical() throws Throwable {
        return (int) POLL_CRITICAL.invokeExact(pollFn, cqGlobal, 16, wcGlobal);
    }

    @Benchmark
    public int pollRaw() throws Throwable {
        return (int) POLL_RAW_PLAIN.invokeExact(pollFn, cq.address(), 16, wc.address());
    }

    @Benchmark
    public int pollRawCritical() throws Throwable {
        return (int) POLL_RAW_CRITICAL.invokeExact(pollFn, cq.address(), 16, wc.address());
    }

    @Benchmark
    public int pollJni() {
        return JniNoop.poll(pollFn.address(), cq.address(), 16, wc.address());
    }

    @Benchmark
    @OperationsPerInvocation(LOOP)
    public long pollC() throws Throwable {
        return (long) POLL_LOOP.invokeExact(cq, wc, (long) LOOP);
    }

    /** The typed API's own poll ({@link CompletionQueue#poll}) into the same stand-in: what an application pays. */
    @Benchmark
    public int typedPoll() {
        return typedCq.poll(batch);
    }

    /** The fast form: the poll of a view confined to this thread ({@link CompletionQueue#confined()}). */
    @Benchmark
    public int typedPollConfined() {
        return confinedCq.poll(batch);
    }

    // ---- post_send(fn, qp, wr, bad_wr) of one prepared request

    /** The typed API's own post ({@link QueuePair#postSend}) of one prepared request into the same stand-in. */
    @Benchmark
    public void typedPost() {
        typedQp.postSend(request);
    }

    /** The fast form: the post of a view confined to this thread ({@link QueuePair#confined()}), a plain downcall. */
    @Benchmark
    public void typedPostConfined() {
        confinedQp.postSend(request);
    }

    /**
     * The same, the post a critical downcall ({@code -Dpanamaverbs.critical=all}): what a provider whose
     * post stays in user space (a doorbell write, as mlx5's) allows.
     */
    @Benchmark
    @Fork(value = 1, jvmArgsAppend = "-Dpanamaverbs.critical=all")
    public void typedPostConfinedCritical() {
        confinedQp.postSend(request);
    }

    @Benchmark
    public int postSharedArena() throws Throwable {
        return (int) POST_PLAIN.invokeExact(postFn, qp, wr, bad);
    }

    @Benchmark
    public int postSharedArenaCritical() throws Throwable {
        return (int) POST_CRITICAL.invokeExact(postFn, qp, wr, bad);
    }

    @Benchmark
    public int postOneShared() throws Throwable {
        return (int) POST_PLAIN.invokeExact(postFn, qp, wrGlobal, badGlobal);
    }

    @Benchmark
    public int postOneSharedCritical() throws Throwable {
        return (int) POST_CRITICAL.invokeExact(postFn, qp, wrGlobal, badGlobal);
    }

    @Benchmark
    public int postGlobal() throws Throwable {
        return (int) POST_PLAIN.invokeExact(postFn, qpGlobal, wrGlobal, badGlobal);
    }

    @Benchmark
    public int postGlobalCritical() throws Throwable {
        return (int) POST_CRITICAL.invokeExact(postFn, qpGlobal, wrGlobal, badGlobal);
    }

    @Benchmark
    public int postRaw() throws Throwable {
        return (int) POST_RAW_PLAIN.invokeExact(postFn, qp.address(), wr.address(), bad.address());
    }

    @Benchmark
    public int postRawCritical() throws Throwable {
        return (int) POST_RAW_CRITICAL.invokeExact(postFn, qp.address(), wr.address(), bad.address());
    }

    @Benchmark
    public int postJni() {
        return JniNoop.post(postFn.address(), qp.address(), wr.address(), bad.address());
    }

    @Benchmark
    @OperationsPerInvocation(LOOP)
    public long postC() throws Throwable {
        return (long) POST_LOOP.invokeExact(qp, wr, bad, (long) LOOP);
    }
}
