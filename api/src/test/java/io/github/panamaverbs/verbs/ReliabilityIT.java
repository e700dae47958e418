package io.github.panamaverbs.verbs;

import static io.github.panamaverbs.verbs.MisuseGenerator.Kind.ALLOC_PD;
import static io.github.panamaverbs.verbs.MisuseGenerator.Kind.CLOSE_ARENA;
import static io.github.panamaverbs.verbs.MisuseGenerator.Kind.EDIT_SEND;
import static io.github.panamaverbs.verbs.MisuseGenerator.Kind.NEW_ARENA;
import static io.github.panamaverbs.verbs.MisuseGenerator.Kind.NEW_SEND;
import static io.github.panamaverbs.verbs.MisuseGenerator.Kind.OPEN_CONTEXT;
import static io.github.panamaverbs.verbs.MisuseGenerator.Kind.REGISTER;
import static io.github.panamaverbs.verbs.MisuseGenerator.op;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.verbs.MisuseGenerator.Failure;
import io.github.panamaverbs.verbs.MisuseGenerator.Op;
import io.github.panamaverbs.verbs.MisuseGenerator.Result;
import io.github.panamaverbs.verbs.MisuseGenerator.Stats;
import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The reliability suite (issue 16): randomized misuse, close under concurrent use, leaks over many
 * create-connect-write-close cycles, the access-rights matrix, a multi-threaded soak, and constructors
 * that fail after creating their native object. Each test prints its figures as one line starting
 * with {@code RELIABILITY}. The counts are system properties whose defaults are what CI runs:
 * <ul>
 *   <li>{@code reliability.misuse.seeds} (comma-separated, decimal or 0x-hex; default three random
 *       seeds, printed), {@code reliability.misuse.ops} (5000 calls per seed),
 *       {@code reliability.misuse.trace} (print every call of every seed),
 *       {@code reliability.misuse.shrinkSeconds} (how long a failure may be shrunk: 120),
 *       {@code reliability.misuse.hangSeconds} (how long one call may take: 60)</li>
 *   <li>{@code reliability.concurrency.rounds} (200 per target)</li>
 *   <li>{@code reliability.leak.cycles} (2000), {@code reliability.leak.rssBoundMiB} (32)</li>
 *   <li>{@code reliability.soak.messages} (20000 in all, over {@code reliability.soak.threads} = 4)</li>
 * </ul>
 * Run it with {@code scripts/with-rdma -- env IT_MODULES=api IT_PATTERN=.*ReliabilityIT scripts/run-it};
 * options go through {@code RUN_IT_JAVA_OPTS}.
 */
@RequiresRdma
class ReliabilityIT {

    private static void report(String line) {
        System.out.println("RELIABILITY " + line);
        System.out.flush();
    }

    private static double seconds(long t0) {
        return (System.nanoTime() - t0) / 1e9;
    }

    private static void assertMessage(Throwable t, String part) {
        assertTrue(t.getMessage() != null && t.getMessage().toLowerCase(Locale.ROOT).contains(part.toLowerCase(Locale.ROOT)),
                () -> "message lacks '" + part + "': " + t);
    }

    // ---------------------------------------------------------------------------------------------
    // Randomized misuse

    private static List<Long> seeds() {
        String p = System.getProperty("reliability.misuse.seeds", "").trim();
        List<Long> seeds = new ArrayList<>();
        if (p.isEmpty()) {
            for (int i = 0; i < 3; i++) {
                seeds.add(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
            }
        } else {
            for (String s : p.split(",")) {
                s = s.trim();
                seeds.add(s.startsWith("0x") ? Long.parseUnsignedLong(s.substring(2), 16) : Long.parseLong(s));
            }
        }
        return seeds;
    }

    /**
     * 5,000 calls per seed (ops are drawn until then), three seeds: each call must succeed or throw what the
     * generator's model allows (see {@link MisuseGenerator}); afterwards everything closes and the
     * device holds no more objects than before. A failure prints the seed and the shrunk sequence.
     */
    @Test
    void randomizedMisuse(TestDevice dev) {
        int ops = Integer.getInteger("reliability.misuse.ops", 5000);
        int hang = Integer.getInteger("reliability.misuse.hangSeconds", 60);
        boolean trace = Boolean.getBoolean("reliability.misuse.trace");
        long shrinkSeconds = Integer.getInteger("reliability.misuse.shrinkSeconds", 120);
        List<Long> seeds = seeds();
        MisuseGenerator generator = new MisuseGenerator(dev, hang);
        Stats total = new Stats();
        List<String> failures = new ArrayList<>();
        long t0 = System.nanoTime();
        for (long seed : seeds) {
            // Printed first: if the JVM dies, the seed is on the console (replay with -Dreliability.misuse.trace=true).
            report("misuse: seed 0x" + Long.toHexString(seed) + ", " + ops + " calls (replay: -Dreliability.misuse.seeds=0x"
                    + Long.toHexString(seed) + ")");
            // Ops are drawn until `ops` calls were made: an op that finds no target makes none.
            List<Op> drawn = MisuseGenerator.plan(seed, 2 * ops);
            long ts = System.nanoTime();
            Result result = generator.run(drawn, trace, ops);
            List<Op> plan = result.ran();
            if (trace) {
                MisuseGenerator.print(System.out::println, result.trace());
            }
            total.add(result.stats());
            Failure f = result.failure();
            report(String.format("misuse: seed 0x%s: %d ops, %s; %.1f s (most in %s)%s", Long.toHexString(seed), plan.size(),
                    result.stats(), seconds(ts), result.stats().slowest(), f == null ? "" : "; FAILED"));
            if (f != null) {
                failures.add("seed 0x" + Long.toHexString(seed) + ": " + f);
                System.out.println("  failure at " + f);
                if (f.reason().startsWith("hung")) {
                    continue; // its thread is stuck: nothing to shrink with
                }
                List<Op> minimal = generator.shrink(plan, f, shrinkSeconds * 1_000_000_000L);
                Result replay = generator.run(minimal, true);
                System.out.println("  shrunk to " + minimal.size() + " ops, which fail with: " + replay.failure());
                MisuseGenerator.print(System.out::println, replay.trace());
                System.out.println("  as a regression test: List.of("
                        + String.join(", ", minimal.stream().map(Op::toString).toList()) + ")");
            }
        }
        report(String.format("misuse: %d seeds x %d calls, %s, %d failures, %.1f s", seeds.size(), ops, total, failures.size(),
                seconds(t0)));
        assertTrue(failures.isEmpty(), () -> String.join("\n", failures));
        assertTrue(total.executed >= (long) ops * seeds.size(), () -> "fewer calls than " + ops + " per seed: " + total);
        // The runs did reach the device and did misuse it: both outcomes in numbers.
        assertTrue(total.ok > ops / 5 && total.thrown() > ops / 5, () -> "too few successes or exceptions: " + total);
    }

    /**
     * Found by the generator (seed 2 of 600 ops, shrunk to 14): sge() with a range outside the region
     * threw IndexOutOfBoundsException, but had cleared the request's entries first. Written out below,
     * with setSge() at the next index, which replaced an entry nobody counted instead of appending it
     * as documented (found while writing the generator's model).
     */
    @Test
    void misuseRegressions(TestDevice dev) throws Exception {
        List<Op> sgeClearedTheEntries = List.of(op(NEW_SEND, 0x5d3e47ecad6ef3d4L), op(NEW_SEND, 0x3b3a8762bfcb6581L),
                op(NEW_SEND, 0x35e3b5e5cbebd691L), op(NEW_SEND, 0x3da49499bd18432bL), op(NEW_ARENA, 0xd5b5ae9724916278L),
                op(NEW_SEND, 0x4c68138810797a39L), op(NEW_SEND, 0xadf82ba3a8d6f39aL), op(EDIT_SEND, 0xc61639b0ca8e79f6L),
                op(OPEN_CONTEXT, 0x4c53ad0beed6eafaL), op(ALLOC_PD, 0xd168b7cdc8b7d78cL), op(CLOSE_ARENA, 0x540678fd03f83191L),
                op(REGISTER, 0xe380037405b2b0beL), op(NEW_SEND, 0x8186b2dcab09679L), op(EDIT_SEND, 0xcbea7f81de7a738eL));
        Result result = new MisuseGenerator(dev, 60).run(sgeClearedTheEntries, true);
        assertTrue(result.failure() == null, () -> result.failure() + "\n" + String.join("\n", result.trace()));

        try (Context ctx = dev.open();
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             MemoryRegion mr = pd.allocateAndRegister(4096)) {
            SendRequest r = new SendRequest(3).sge(mr, 0, 8).addSge(mr, 8, 8);
            assertThrows(IndexOutOfBoundsException.class, () -> r.sge(mr, 4000, 200));
            assertEquals(2, r.sgeCount(), "a call that throws changes nothing");
            r.setSge(2, mr, 16, 8);
            assertEquals(3, r.sgeCount(), "setSge at the next index appends");
            assertThrows(IndexOutOfBoundsException.class, () -> r.setSge(4, mr, 0, 8));
        }
    }

    /** Polling into a batch whose arena was closed names the batch, not FFM's bare "Already closed". */
    @Test
    void pollingIntoAFreedBatchSaysSo(TestDevice dev) {
        try (Context ctx = dev.open();
             CompletionQueue cq = ctx.createCompletionQueue(4)) {
            Arena arena = Arena.ofShared();
            WorkCompletions wc = new WorkCompletions(4, arena);
            assertEquals(0, cq.poll(wc));
            arena.close();
            assertMessage(assertThrows(IllegalStateException.class, () -> cq.poll(wc)), "WorkCompletions batch has been freed");
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Close under concurrent use

    /** What another thread uses while this one closes it. */
    enum Target { COMPLETION_QUEUE, QUEUE_PAIR, MEMORY_REGION, ARENA_OF_REGISTERED_MEMORY, CONTEXT }

    /** Counts of what each side saw. */
    private static final class Tally {
        final Map<String, Integer> counts = new TreeMap<>();

        void add(String what) {
            counts.merge(what, 1, Integer::sum);
        }

        @Override
        public String toString() {
            return counts.toString();
        }
    }

    /** A documented exception with a message, as each side must end with; its class and message shape. */
    private static String documented(Throwable t) {
        assertNotNull(t);
        assertTrue(t.getClass() == IllegalStateException.class || t.getClass() == VerbsException.class,
                () -> "not a documented exception: " + t);
        assertTrue(t.getMessage() != null && !t.getMessage().isBlank(), () -> "no message: " + t);
        String m = t.getMessage();
        String shape = m.contains(" is closed") ? "is closed" : m.contains("has been freed") ? "has been freed"
                : m.contains("still in use") ? "still in use" : m.contains("Already closed") ? "FFM: Already closed" : m;
        return t.getClass().getSimpleName() + " (" + shape + ")";
    }

    /**
     * Runs {@code use} in {@code user} until it throws, closes with {@code close} once {@code use} has
     * run a random number of times (0 to 63), and returns what the user thread ended with.
     */
    private static Throwable race(ExecutorService user, SplittableRandom rnd, Runnable use, Runnable close) throws Exception {
        AtomicLong calls = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        Future<Throwable> ended = user.submit(() -> {
            try {
                while (!stop.get()) {
                    use.run();
                    calls.incrementAndGet();
                }
                return null;
            } catch (Throwable t) {
                return t;
            }
        });
        long k = rnd.nextInt(64);
        while (calls.get() < k && !ended.isDone()) {
            Thread.yield();
        }
        try {
            close.run();
        } catch (RuntimeException | Error e) {
            stop.set(true); // the user thread must not go on with the resource
            ended.get(30, TimeUnit.SECONDS);
            throw e;
        }
        return ended.get(30, TimeUnit.SECONDS);
    }

    /**
     * One thread polls or posts while this one closes the completion queue, the queue pair, the
     * memory region, the arena of registered memory, or the context, hundreds of times: the closer's
     * close succeeds (for a context: after refusals while the other thread has a domain open), the
     * other thread ends on a documented exception, every completion is a success or a flush, the
     * bytes written are right, and the device holds no more objects afterwards.
     */
    @ParameterizedTest
    @EnumSource(Target.class)
    void closeWhileAnotherThreadUsesIt(Target target, TestDevice dev) throws Exception {
        int rounds = Integer.getInteger("reliability.concurrency.rounds", 200);
        Map<String, Integer> before = Footprint.rdma(dev.name());
        SplittableRandom rnd = new SplittableRandom(target.ordinal());
        Tally userEnds = new Tally();
        Tally completions = new Tally();
        AtomicLong refusals = new AtomicLong();
        AtomicLong calmed = new AtomicLong();
        AtomicLong userCalls = new AtomicLong();
        long t0 = System.nanoTime();
        ExecutorService user = Executors.newSingleThreadExecutor();
        try {
            switch (target) {
                case COMPLETION_QUEUE -> {
                    try (Context ctx = dev.open()) {
                        for (int i = 0; i < rounds; i++) {
                            CompletionQueue cq = ctx.createCompletionQueue(16);
                            WorkCompletions wc = new WorkCompletions(4);
                            Throwable t = race(user, rnd, () -> {
                                cq.poll(wc);
                                userCalls.incrementAndGet();
                            }, cq::close);
                            userEnds.add(documented(t));
                            assertMessage(t, "closed");
                            assertTrue(cq.isClosed());
                        }
                    }
                }
                case QUEUE_PAIR -> {
                    try (Pair p = new Pair(dev, QpType.RC, 4096, c -> c)) {
                        WorkCompletions wc = new WorkCompletions(16);
                        for (int i = 0; i < rounds; i++) {
                            byte pattern = (byte) (i + 1);
                            p.mrA.segment().asSlice(0, 64).fill(pattern);
                            QueuePair a = p.pd.createQueuePair(new QpInitAttributes(QpType.RC, p.cqA, p.cqA).maxSendWr(16));
                            p.b.reset();
                            a.connect(p.b.localEndpoint(p.how), p.how);
                            p.b.connect(a.localEndpoint(p.how), p.how);
                            SendRequest write = new SendRequest(1).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(p.mrA, 0, 64)
                                    .rdma(p.mrB.address(), p.mrB.rkey());
                            int[] outstanding = {0};
                            long[] ok = {0};
                            Throwable t = race(user, rnd, () -> {
                                if (outstanding[0] < 8 || a.isClosed()) {
                                    a.postSend(write);
                                    outstanding[0]++;
                                }
                                int n = p.cqA.poll(wc);
                                for (int j = 0; j < n; j++) {
                                    completions.add(wc.status(j).name());
                                    ok[0] += wc.status(j) == WcStatus.SUCCESS ? 1 : 0;
                                }
                                outstanding[0] -= n;
                                userCalls.incrementAndGet();
                            }, a::close);
                            userEnds.add(documented(t));
                            assertMessage(t, "closed");
                            while (p.cqA.poll(wc) > 0) {
                                for (int j = 0; j < wc.count(); j++) {
                                    completions.add(wc.status(j).name());
                                    ok[0] += wc.status(j) == WcStatus.SUCCESS ? 1 : 0;
                                }
                            }
                            if (ok[0] > 0) {
                                assertEquals(-1L, p.mrB.segment().asSlice(0, 64).mismatch(p.mrA.segment().asSlice(0, 64)),
                                        "round " + i + ": the written bytes");
                            }
                            // The writes that completed did so successfully (a destroyed queue pair's others vanish).
                            assertTrue(Set.of("SUCCESS", "WR_FLUSH_ERR").containsAll(completions.counts.keySet()),
                                    () -> "completions " + completions);
                        }
                    }
                }
                case MEMORY_REGION, ARENA_OF_REGISTERED_MEMORY -> {
                    try (Pair p = new Pair(dev, QpType.RC, 4096, c -> c)) {
                        WorkCompletions wc = new WorkCompletions(16);
                        for (int i = 0; i < rounds; i++) {
                            byte pattern = (byte) (i + 1);
                            Arena arena = Arena.ofShared();
                            MemoryRegion src = target == Target.MEMORY_REGION ? p.pd.allocateAndRegister(4096)
                                    : p.pd.register(arena, arena.allocate(4096, 4096));
                            src.segment().asSlice(0, 64).fill(pattern);
                            SendRequest write = new SendRequest(1).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(src, 0, 64)
                                    .rdma(p.mrB.address(), p.mrB.rkey());
                            int[] outstanding = {0};
                            long[] ok = {0};
                            boolean[] failed = {false};
                            Runnable poll = () -> {
                                int n = p.cqA.poll(wc);
                                for (int j = 0; j < n; j++) {
                                    WcStatus s = wc.status(j);
                                    completions.add(s.name());
                                    ok[0] += s == WcStatus.SUCCESS ? 1 : 0;
                                    failed[0] |= s != WcStatus.SUCCESS;
                                    // A post that passed the check just before the close reaches the device with
                                    // a dead lkey: a local error (rxe says LOC_QP_OP_ERR), and flushes after it.
                                    assertTrue(s == WcStatus.SUCCESS || s == WcStatus.LOC_PROT_ERR || s == WcStatus.LOC_QP_OP_ERR
                                            || s == WcStatus.WR_FLUSH_ERR, () -> "completion " + s);
                                }
                                outstanding[0] -= n;
                            };
                            Throwable t = race(user, rnd, () -> {
                                if (outstanding[0] < 8) {
                                    p.a.postSend(write);
                                    outstanding[0]++;
                                }
                                poll.run();
                                userCalls.incrementAndGet();
                            }, target == Target.MEMORY_REGION ? src::close : arena::close);
                            userEnds.add(documented(t));
                            assertTrue(t instanceof IllegalStateException && (t.getMessage().contains("closed")
                                    || t.getMessage().contains("freed")), () -> "the poster ended with " + t);
                            if (target == Target.ARENA_OF_REGISTERED_MEMORY) {
                                src.close(); // deregistered with its arena: closing it still works
                            } else {
                                arena.close();
                            }
                            long deadline = System.nanoTime() + 10_000_000_000L;
                            while (outstanding[0] > 0 && !failed[0] && System.nanoTime() < deadline) {
                                poll.run();
                            }
                            if (ok[0] > 0) {
                                assertEquals(-1L, p.mrB.segment().asSlice(0, 64).mismatch(
                                        MemorySegment.ofArray(new byte[64]).fill(pattern)), "round " + i + ": the written bytes");
                            }
                            if (failed[0]) {
                                // A post that passed the checks just before the close reached the device with
                                // a dead key: an error completion, and the queue pair in ERR. Reconnect.
                                refusals.incrementAndGet();
                                while (p.cqA.poll(wc) > 0) {
                                    Thread.onSpinWait();
                                }
                                p.a.reset();
                                p.b.reset();
                                p.a.connect(p.b.localEndpoint(p.how), p.how);
                                p.b.connect(p.a.localEndpoint(p.how), p.how);
                            }
                        }
                    }
                }
                case CONTEXT -> {
                    for (int i = 0; i < rounds; i++) {
                        Context ctx = dev.open();
                        boolean children = i % 2 == 0; // creates and closes domains, or queries
                        // After 20 refused closes in a round the other thread only queries, so that the
                        // close finds its gap: on one vCPU it can take thousands of tries otherwise.
                        AtomicBoolean calm = new AtomicBoolean();
                        Throwable t = race(user, rnd, () -> {
                            if (children && !calm.get()) {
                                ctx.allocateProtectionDomain().close();
                            } else {
                                ctx.queryPort(dev.port());
                                ctx.numCompVectors();
                            }
                            userCalls.incrementAndGet();
                        }, () -> {
                            for (int refused = 1; ; refused++) {
                                try {
                                    ctx.close();
                                    return;
                                } catch (IllegalStateException e) {
                                    assertMessage(e, "still in use by"); // the other thread's domain, for a moment
                                    assertMessage(e, "ProtectionDomain");
                                    refusals.incrementAndGet();
                                    if (refused == 20) {
                                        calm.set(true);
                                        calmed.incrementAndGet();
                                    }
                                    Thread.yield();
                                }
                            }
                        });
                        userEnds.add(documented(t));
                        assertTrue(t instanceof IllegalStateException, () -> "the other thread ended with " + t);
                        assertMessage(t, "is closed");
                        assertTrue(ctx.isClosed());
                    }
                }
                default -> throw new AssertionError(target);
            }
        } finally {
            user.shutdownNow();
        }
        Map<String, Integer> after = Footprint.rdma(dev.name());
        report(String.format("concurrency %s: %d rounds, %d calls by the other thread, which ended on %s; %s%s; "
                + "device objects %s; %.1f s", target.name().toLowerCase(Locale.ROOT).replace('_', ' '), rounds, userCalls.get(),
                userEnds, completions.counts.isEmpty() ? "" : "completions " + completions + "; ",
                refusals.get() == 0 ? "no close refused" : target == Target.CONTEXT ? refusals + " closes refused while a domain was open"
                        + " (" + calmed + " rounds calmed after 20)" : refusals + " rounds with an error completion",
                after.equals(before) ? "as before" : "CHANGED", seconds(t0)));
        assertEquals(before, after, "the device's objects after all rounds");
    }

    // ---------------------------------------------------------------------------------------------
    // Leaks

    /**
     * 2,000 cycles of open, create, connect, write 64 bytes (checked), close: the device's objects and
     * the open file descriptors are back to their baseline, and RSS within a bound of it.
     */
    @Test
    void createConnectWriteCloseCyclesLeakNothing(TestDevice dev) throws Exception {
        int cycles = Integer.getInteger("reliability.leak.cycles", 2000);
        long boundKiB = Integer.getInteger("reliability.leak.rssBoundMiB", 32) * 1024L;
        int warmUp = Math.min(100, cycles / 10);
        Map<String, Integer> rdmaBefore = Footprint.rdma(dev.name());
        for (int i = 0; i < warmUp; i++) {
            cycle(dev, i);
        }
        // as at the end: descriptors that the GC closes (a finished child process's pipes, an earlier
        // test's) are closed before the baseline is taken, not during the cycles
        System.gc();
        Thread.sleep(200);
        System.gc();
        Footprint base = Footprint.of(dev.name());
        long t0 = System.nanoTime();
        for (int i = 0; i < cycles; i++) {
            cycle(dev, i);
        }
        double took = seconds(t0);
        System.gc();
        Thread.sleep(200);
        System.gc();
        Footprint end = Footprint.of(dev.name());
        long growth = end.rssKiB() - base.rssKiB();
        report(String.format("leaks: %d create-connect-write-close cycles (after %d to warm up): device objects %s -> %s, "
                + "fds %d -> %d, RSS %d -> %d KiB (%+d KiB, bound %d KiB); %.1f s (%.1f ms per cycle)", cycles, warmUp,
                Footprint.format(rdmaBefore), Footprint.format(end.rdma()), base.fds(), end.fds(), base.rssKiB(), end.rssKiB(),
                growth, boundKiB, took, took * 1000 / cycles));
        assertEquals(rdmaBefore, end.rdma(), "rdma resource show");
        assertTrue(end.fds() <= base.fds(), () -> "open file descriptors: " + base.fds() + " -> " + end.fds());
        assertTrue(growth <= boundKiB, () -> "RSS grew by " + growth + " KiB over " + cycles + " cycles");
    }

    private static void cycle(TestDevice dev, int i) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC, 4096, c -> c.maxSendWr(4).maxRecvWr(4))) {
            MemorySegment src = p.mrA.segment().asSlice(0, 64);
            for (int j = 0; j < 8; j++) {
                src.set(JAVA_LONG, j * 8L, i * 31L + j);
            }
            p.a.postSend(new SendRequest(1).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(p.mrA, 0, 64)
                    .rdma(p.mrB.address(), p.mrB.rkey()));
            p.expectOne(p.cqA, WcOpcode.RDMA_WRITE);
            assertEquals(-1L, p.mrB.segment().asSlice(0, 64).mismatch(src), "cycle " + i + ": the written bytes");
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Access rights

    enum Access { WRITE, WRITE_WITH_IMM, READ, FETCH_ADD, CMP_SWAP }

    enum Fault { NONE, MR_LACKS_RIGHT, QP_LACKS_RIGHT, WRONG_RKEY, PAST_THE_END, BEFORE_THE_START }

    static List<Arguments> accessMatrix() {
        List<Arguments> cases = new ArrayList<>();
        for (Access a : Access.values()) {
            for (Fault f : Fault.values()) {
                cases.add(Arguments.of(a, f));
            }
        }
        return cases;
    }

    private static AccessFlag right(Access a) {
        return switch (a) {
            case WRITE, WRITE_WITH_IMM -> AccessFlag.REMOTE_WRITE;
            case READ -> AccessFlag.REMOTE_READ;
            case FETCH_ADD, CMP_SWAP -> AccessFlag.REMOTE_ATOMIC;
        };
    }

    /**
     * What each side sees, as measured on Soft-RoCE (the IB spec's NAK codes): the requester's
     * completion status, and the responder's — its posted receive flushed when its queue pair went to
     * ERR, consumed by a write with immediate, or left alone.
     */
    private static String expected(Access a, Fault f) {
        if (f == Fault.NONE) {
            return "requester SUCCESS, responder " + (a == Access.WRITE_WITH_IMM ? "SUCCESS RECV_RDMA_WITH_IMM, RTS" : "none, RTS");
        }
        if (f == Fault.QP_LACKS_RIGHT) {
            // The responder refuses the opcode (NAK invalid request) before it takes a receive.
            return "requester REM_INV_REQ_ERR, responder WR_FLUSH_ERR, ERR";
        }
        // NAK remote access error; a write with immediate had taken the receive, which completes with the error.
        return "requester REM_ACCESS_ERR, responder " + (a == Access.WRITE_WITH_IMM ? "REM_ACCESS_ERR" : "WR_FLUSH_ERR") + ", ERR";
    }

    /**
     * An RDMA operation without the right (on the region, or on the responder's queue pair), with a
     * wrong rkey, or outside the region: the exact completion status on each side, and not a byte of
     * the target region, of the pages around it, or of the requester's landing buffer changed. The
     * fault-free case of each operation checks that the same request does move the bytes.
     */
    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("accessMatrix")
    void accessViolations(Access op, Fault fault, TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.RC, 65536, c -> c);
             Arena arena = Arena.ofShared()) {
            EnumSet<AccessFlag> rights = EnumSet.of(AccessFlag.REMOTE_WRITE, AccessFlag.REMOTE_READ, AccessFlag.REMOTE_ATOMIC);
            if (fault == Fault.MR_LACKS_RIGHT) {
                rights.remove(right(op));
            }
            if (fault == Fault.QP_LACKS_RIGHT) {
                EnumSet<AccessFlag> qpRights = EnumSet.copyOf(rights);
                qpRights.remove(right(op));
                p.b.reset();
                p.b.connect(p.a.localEndpoint(p.how), p.how.copy().access(qpRights));
            }
            // The target is the middle page of three: the pages around it show a write outside the region.
            MemorySegment pages = arena.allocate(3 * 4096, 4096);
            pages.fill((byte) 0xA5);
            MemoryRegion target = p.keep(p.pd.register(arena, pages.asSlice(4096, 4096), rights));
            MemorySegment local = p.mrA.segment();
            local.fill((byte) 0x3C);
            for (int i = 0; i < 64; i++) {
                local.set(JAVA_BYTE, i, (byte) (i * 7 + 1));
            }
            pages.set(JAVA_LONG, 4096 + 64, 1000L); // the atomics' word
            byte[] pagesBefore = pages.toArray(JAVA_BYTE);
            byte[] localBefore = local.toArray(JAVA_BYTE);

            long atomicOffset = 64;
            long address = switch (fault) {
                case PAST_THE_END -> target.address() + (op.ordinal() >= Access.FETCH_ADD.ordinal() ? 4096 : 4096 - 32);
                case BEFORE_THE_START -> target.address() - (op.ordinal() >= Access.FETCH_ADD.ordinal() ? 8 : 32);
                default -> target.address() + (op.ordinal() >= Access.FETCH_ADD.ordinal() ? atomicOffset : 128);
            };
            int rkey = fault == Fault.WRONG_RKEY ? target.rkey() ^ 0x5a : target.rkey();
            p.b.postReceive(new ReceiveRequest(1).id(77).sge(p.mrB, 0, 64));
            SendRequest r = new SendRequest(1).id(5).signaled(true);
            switch (op) {
                case WRITE -> r.opcode(SendOpcode.RDMA_WRITE).sge(p.mrA, 0, 64).rdma(address, rkey);
                case WRITE_WITH_IMM -> r.opcode(SendOpcode.RDMA_WRITE_WITH_IMM).immediate(0x1234).sge(p.mrA, 0, 64).rdma(address, rkey);
                case READ -> r.opcode(SendOpcode.RDMA_READ).sge(p.mrA, 1024, 64).rdma(address, rkey);
                case FETCH_ADD -> r.opcode(SendOpcode.ATOMIC_FETCH_AND_ADD).sge(p.mrA, 2048, 8).atomic(address, rkey, 5, 0);
                case CMP_SWAP -> r.opcode(SendOpcode.ATOMIC_CMP_AND_SWP).sge(p.mrA, 2048, 8).atomic(address, rkey, 1000L, 77L);
                default -> throw new AssertionError(op);
            }
            p.a.postSend(r);
            WorkCompletions req = p.await(p.cqA, 1);
            WcStatus requester = req.status(0);
            String responder = "none";
            WorkCompletions wc = new WorkCompletions(4);
            long deadline = System.nanoTime() + (requester == WcStatus.SUCCESS && op != Access.WRITE_WITH_IMM ? 300 : 3000) * 1_000_000L;
            while (System.nanoTime() < deadline) {
                if (p.cqB.poll(wc) > 0) {
                    assertEquals(77, wc.wrId(0));
                    responder = wc.status(0) + (wc.status(0) == WcStatus.SUCCESS ? " " + wc.opcode(0) : "");
                    break;
                }
            }
            String observed = "requester " + requester + ", responder " + responder + ", " + p.b.query().state();
            report("access: " + op + " " + fault + ": " + observed);
            assertEquals(expected(op, fault), observed);
            assertEquals(5, req.wrId(0));

            byte[] pagesAfter = pages.toArray(JAVA_BYTE);
            byte[] localAfter = local.toArray(JAVA_BYTE);
            if (fault != Fault.NONE) {
                assertEquals(-1, java.util.Arrays.mismatch(pagesBefore, pagesAfter), "a byte of the target or around it changed");
                assertEquals(-1, java.util.Arrays.mismatch(localBefore, localAfter), "a byte of the requester's buffer changed");
                return;
            }
            // The same request without the fault moves the bytes.
            switch (op) {
                case WRITE, WRITE_WITH_IMM -> {
                    assertEquals(-1L, pages.asSlice(4096 + 128, 64).mismatch(local.asSlice(0, 64)));
                    if (op == Access.WRITE_WITH_IMM) {
                        assertEquals(0x1234, wc.immediate(0));
                    }
                }
                case READ -> assertEquals(-1L, local.asSlice(1024, 64).mismatch(pages.asSlice(4096 + 128, 64)));
                case FETCH_ADD -> {
                    assertEquals(1000L, local.get(JAVA_LONG, 2048));
                    assertEquals(1005L, pages.get(JAVA_LONG, 4096 + 64));
                }
                case CMP_SWAP -> {
                    assertEquals(1000L, local.get(JAVA_LONG, 2048));
                    assertEquals(77L, pages.get(JAVA_LONG, 4096 + 64));
                }
                default -> throw new AssertionError(op);
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Soak

    private static final int SLOT = 64 * 1024;
    private static final int WINDOW = 16;

    /** What one soak thread counted. */
    private record SoakCount(long messages, long received, long lost, long duplicated, long corrupted, long reordered, long bytes) {
    }

    /**
     * Four threads, each with its own RC pair, send messages of random sizes (1 to 64 KiB) as SEND or
     * RDMA WRITE_WITH_IMM, each carrying its sequence number, length and a CRC-32: the receiver checks
     * every one. 0 lost, 0 duplicated, 0 corrupted, 0 out of order.
     */
    @Test
    void soak(TestDevice dev) throws Exception {
        int threads = Integer.getInteger("reliability.soak.threads", 4);
        int total = Integer.getInteger("reliability.soak.messages", 20000);
        int each = (total + threads - 1) / threads;
        long t0 = System.nanoTime();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<SoakCount>> results = new ArrayList<>();
        try {
            for (int t = 0; t < threads; t++) {
                long seed = 0x50A4L * (t + 1);
                results.add(pool.submit(() -> soakOne(dev, each, seed)));
            }
            long messages = 0;
            long received = 0;
            long lost = 0;
            long dup = 0;
            long corrupt = 0;
            long reordered = 0;
            long bytes = 0;
            for (Future<SoakCount> f : results) {
                SoakCount c = f.get(30, TimeUnit.MINUTES);
                messages += c.messages();
                received += c.received();
                lost += c.lost();
                dup += c.duplicated();
                corrupt += c.corrupted();
                reordered += c.reordered();
                bytes += c.bytes();
            }
            double s = seconds(t0);
            report(String.format("soak: %d threads, %d messages (%.0f MiB, 1-64 KiB, SEND and WRITE_WITH_IMM), %d lost, %d dup, "
                    + "%d corrupt, %d reordered, %.1f s", threads, messages, bytes / 1048576.0, lost, dup, corrupt, reordered, s));
            assertEquals(messages, received, "received");
            assertEquals(0, lost, "lost");
            assertEquals(0, dup, "duplicated");
            assertEquals(0, corrupt, "corrupted");
            assertEquals(0, reordered, "out of order");
            assertTrue(messages >= total);
        } finally {
            pool.shutdownNow();
        }
    }

    private static int crc(MemorySegment message, int length) {
        CRC32 crc = new CRC32();
        crc.update(message.asSlice(0, 12).asByteBuffer());
        crc.update(message.asSlice(16, length - 16).asByteBuffer());
        return (int) crc.getValue();
    }

    /**
     * One pair: A posts up to {@link #WINDOW} messages ahead, message {@code seq} in slot
     * {@code seq % WINDOW} of A's buffer and of B's (B's receives are posted in slot order, so the k-th
     * message consumes the receive of slot k % WINDOW); a slot is reused only once B has checked the
     * message in it and A's send of it has completed.
     */
    private static SoakCount soakOne(TestDevice dev, int n, long seed) throws Exception {
        SplittableRandom rnd = new SplittableRandom(seed);
        try (Pair p = new Pair(dev, QpType.RC, (long) SLOT * WINDOW, c -> c.maxSendWr(2 * WINDOW).maxRecvWr(2 * WINDOW));
             Arena arena = Arena.ofConfined()) {
            MemorySegment noise = arena.allocate(2 * SLOT);
            for (long i = 0; i < noise.byteSize(); i += 8) {
                noise.set(JAVA_LONG, i, rnd.nextLong());
            }
            ReceiveRequest[] recvs = new ReceiveRequest[WINDOW];
            for (int s = 0; s < WINDOW; s++) {
                recvs[s] = new ReceiveRequest(1).id(s).sge(p.mrB, (long) s * SLOT, SLOT);
                p.b.postReceive(recvs[s]);
            }
            SendRequest send = new SendRequest(1).signaled(true);
            int[] sizes = new int[WINDOW];
            int[] crcs = new int[WINDOW];
            BitSet seen = new BitSet(n);
            WorkCompletions wcA = new WorkCompletions(32);
            WorkCompletions wcB = new WorkCompletions(32);
            long posted = 0;
            long sent = 0;
            long verified = 0;
            long expectedNext = 0;
            long dup = 0;
            long corrupt = 0;
            long reordered = 0;
            long bytes = 0;
            long lastProgress = System.nanoTime();
            while (verified < n) {
                while (posted < n && posted - verified < WINDOW && posted - sent < WINDOW) {
                    int slot = (int) (posted % WINDOW);
                    int size = 1024 + rnd.nextInt(SLOT - 1024 + 1);
                    MemorySegment msg = p.mrA.segment().asSlice((long) slot * SLOT, size);
                    MemorySegment.copy(noise, rnd.nextInt(SLOT), msg, 16, size - 16);
                    msg.set(JAVA_LONG, 0, posted);
                    msg.set(JAVA_INT, 8, size);
                    int c = crc(msg, size);
                    msg.set(JAVA_INT, 12, c);
                    sizes[slot] = size;
                    crcs[slot] = c;
                    send.id(posted).sge(p.mrA, (long) slot * SLOT, size);
                    if (rnd.nextBoolean()) {
                        send.opcode(SendOpcode.SEND);
                    } else {
                        send.opcode(SendOpcode.RDMA_WRITE_WITH_IMM).immediate((int) posted)
                                .rdma(p.mrB.address() + (long) slot * SLOT, p.mrB.rkey());
                    }
                    p.a.postSend(send);
                    posted++;
                }
                int na = p.cqA.poll(wcA);
                for (int i = 0; i < na; i++) {
                    assertEquals(WcStatus.SUCCESS, wcA.status(i), () -> "send completion: " + wcA);
                    assertEquals(sent, wcA.wrId(i), "sends complete in order");
                    sent++;
                }
                int nb = p.cqB.poll(wcB);
                for (int i = 0; i < nb; i++) {
                    assertEquals(WcStatus.SUCCESS, wcB.status(i), () -> "receive completion: " + wcB);
                    int slot = (int) wcB.wrId(i);
                    assertEquals(verified % WINDOW, slot, "receives complete in the order posted");
                    MemorySegment msg = p.mrB.segment().asSlice((long) slot * SLOT, SLOT);
                    long seq = msg.get(JAVA_LONG, 0);
                    int size = msg.get(JAVA_INT, 8);
                    boolean write = wcB.opcode(i) == WcOpcode.RECV_RDMA_WITH_IMM;
                    boolean ok = size == sizes[slot] && wcB.byteLength(i) == size && msg.get(JAVA_INT, 12) == crcs[slot]
                            && size >= 16 && size <= SLOT && crc(msg, size) == crcs[slot]
                            && (write ? wcB.hasImmediate(i) && wcB.immediate(i) == (int) seq : !wcB.hasImmediate(i)
                                    && wcB.opcode(i) == WcOpcode.RECV);
                    if (!ok) {
                        corrupt++;
                    }
                    if (seq >= 0 && seq < n && seen.get((int) seq)) {
                        dup++;
                    } else if (seq >= 0 && seq < n) {
                        seen.set((int) seq);
                    }
                    if (seq != expectedNext) {
                        reordered++;
                    }
                    expectedNext = seq + 1;
                    bytes += size;
                    p.b.postReceive(recvs[slot]);
                    verified++;
                }
                if (na + nb > 0) {
                    lastProgress = System.nanoTime();
                } else if (System.nanoTime() - lastProgress > 30_000_000_000L) {
                    break; // stalled: the rest counts as lost
                } else {
                    Thread.yield();
                }
            }
            long received = seen.cardinality();
            return new SoakCount(n, received, n - received, dup, corrupt, reordered, bytes);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Constructors that fail after creating the native object

    /** A resource whose constructor has work left after its native object exists. */
    enum Created {
        QUEUE_PAIR(QueuePair.class, "qp"), COMPLETION_QUEUE(CompletionQueue.class, "cq"),
        SHARED_RECEIVE_QUEUE(SharedReceiveQueue.class, "srq"), MEMORY_REGION_OWNED(MemoryRegion.class, "mr"),
        MEMORY_REGION_OF_AN_ARENA(MemoryRegion.class, "mr"), COMPLETION_CHANNEL(CompletionChannel.class, null),
        CONTEXT(Context.class, "ctx");

        final Class<? extends Resource> type;
        /** Its name in {@code rdma resource show}; null for a channel, which is a file descriptor. */
        final String counted;

        Created(Class<? extends Resource> type, String counted) {
            this.type = type;
            this.counted = counted;
        }
    }

    /**
     * The constructor fails (through the package-private {@link Resource#afterCreateHook}) after the
     * native object exists: the exception reaches the caller, the native object is destroyed at once
     * (its count in {@code rdma resource show}, or the file descriptors, back to before while the
     * parents are still open), and the parents close.
     */
    @ParameterizedTest
    @EnumSource(Created.class)
    void aConstructorThatFailsAfterCreatingDestroysWhatItCreated(Created kind, TestDevice dev) throws Exception {
        Map<String, Integer> before = Footprint.rdma(dev.name());
        RuntimeException injected = new IllegalStateException("injected: the constructor failed after creating its object");
        Context ctx = kind == Created.CONTEXT ? null : dev.open();
        ProtectionDomain pd = ctx == null ? null : ctx.allocateProtectionDomain();
        CompletionQueue cq = ctx == null ? null : ctx.createCompletionQueue(4);
        Arena arena = Arena.ofShared();
        MemorySegment memory = arena.allocate(8192, 4096);
        Supplier<Resource> create = switch (kind) {
            case QUEUE_PAIR -> () -> pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq));
            case COMPLETION_QUEUE -> () -> ctx.createCompletionQueue(8);
            case SHARED_RECEIVE_QUEUE -> () -> pd.createSharedReceiveQueue(8, 1);
            case MEMORY_REGION_OWNED -> () -> pd.allocateAndRegister(8192, AccessFlag.REMOTE_WRITE);
            case MEMORY_REGION_OF_AN_ARENA -> () -> pd.register(arena, memory, AccessFlag.REMOTE_WRITE);
            case COMPLETION_CHANNEL -> ctx::createCompletionChannel;
            case CONTEXT -> dev::open;
        };
        create.get().close(); // once without failing: every class is loaded (and every jar open) before counting
        Map<String, Integer> parents = Footprint.rdma(dev.name());
        int fds = Footprint.openRdmaFds();
        Resource.afterCreateHook = r -> {
            if (kind.type.isInstance(r)) {
                throw injected;
            }
        };
        Throwable thrown;
        try {
            thrown = assertThrows(RuntimeException.class, create::get);
        } finally {
            Resource.afterCreateHook = null;
        }
        assertSame(injected, thrown, "the constructor's own exception reaches the caller");
        Map<String, Integer> during = Footprint.rdma(dev.name());
        int fdsDuring = Footprint.openRdmaFds();
        // The same call works once nothing fails, and its object closes.
        create.get().close();
        if (cq != null) {
            cq.close();
        }
        if (pd != null) {
            pd.close();
        }
        if (ctx != null) {
            ctx.close();
        }
        arena.close();
        Map<String, Integer> after = Footprint.rdma(dev.name());
        report("constructor failure: " + kind + ": the object was destroyed (" + (kind.counted == null ? "fds " + fds + " -> " + fdsDuring
                : kind.counted + " " + parents.get(kind.counted) + " -> " + during.get(kind.counted)) + ") and its parents closed");
        assertEquals(parents, during, "the device's objects right after the failed constructor");
        if (kind == Created.CONTEXT || kind == Created.COMPLETION_CHANNEL) { // each has file descriptors of its own
            assertEquals(fds, fdsDuring, "open RDMA file descriptors right after the failed constructor");
        }
        assertEquals(before, after, "the device's objects at the end");
    }
}
