package io.github.panamaverbs.verbs;

import io.github.panamaverbs.verbs.testing.TestDevice;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.function.Consumer;

/**
 * A seeded generator of API misuse, with a model that says what each call must do.
 *
 * <p>A run is a list of {@link Op}s, each a kind and a seed of its own, generated from one seed
 * ({@link #plan}). Every op picks its targets among the objects created so far (open or closed,
 * sometimes null, sometimes of another context or protection domain), its arguments among valid and
 * invalid values (negative, zero, huge, out of range), and calls the API. The model — which object is
 * open, which resources use which, whose memory has been freed, what each request holds — gives for
 * each call the documented exceptions it must or may throw:
 * <ul>
 *   <li>a call with a violation the API checks in Java (a closed resource, a freed segment, a null,
 *       an out-of-range argument, a parent still in use) must throw one of the exceptions for it
 *       ({@link IllegalStateException}, {@link IllegalArgumentException},
 *       {@link IndexOutOfBoundsException}, {@link NullPointerException},
 *       {@link UnsupportedOperationException}) with a message saying so;</li>
 *   <li>a call without one succeeds, or fails with {@link VerbsException} where the device decides
 *       (a capacity above its limits, a transition it refuses, a post in the wrong state).</li>
 * </ul>
 * Any other outcome — another exception type, one without a message, a success where Java must
 * refuse, a request whose scatter/gather count differs from the model's — is a failure, reported
 * with the seed, the op and the exception. After the last op every object is closed in a valid
 * order (each close must succeed) and {@code rdma resource show} must count what it counted before.
 *
 * <p>A list of ops replays exactly: an op's choices depend only on its own seed and on the objects
 * that exist, so a failing run can be shrunk ({@link #shrink}) to a short sequence that still fails,
 * and that sequence kept as a regression test.
 */
final class MisuseGenerator {

    /** What an op does; the weight is how often {@link #plan} chooses it. */
    enum Kind {
        OPEN_CONTEXT(2), CLOSE(9), CONTEXT_QUERY(3), ALLOC_PD(2), CREATE_CHANNEL(1), CHANNEL_AWAIT(1),
        CREATE_CQ(3), POLL(6), CQ_OTHER(2), CREATE_SRQ(1), SRQ_OP(2), CREATE_QP(3), QP_OP(7), POST_SEND(8),
        POST_RECEIVE(5), REGISTER(3), REREGISTER(1), CREATE_AH(1), NEW_ARENA(1), CLOSE_ARENA(1), NEW_SEND(3),
        EDIT_SEND(10), NEW_RECEIVE(2), EDIT_RECEIVE(5), NEW_BATCH(1), READ_BATCH(2);

        final int weight;

        Kind(int weight) {
            this.weight = weight;
        }
    }

    /** One step of a run: its kind, and the seed of every choice it makes. */
    record Op(Kind kind, long seed) {
        @Override
        public String toString() {
            return "op(" + kind + ", 0x" + Long.toHexString(seed) + "L)";
        }
    }

    /** {@code n} ops from {@code seed}. */
    static List<Op> plan(long seed, int n) {
        SplittableRandom r = new SplittableRandom(seed);
        int total = 0;
        for (Kind k : Kind.values()) {
            total += k.weight;
        }
        List<Op> ops = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int w = r.nextInt(total);
            Kind chosen = null;
            for (Kind k : Kind.values()) {
                w -= k.weight;
                if (w < 0) {
                    chosen = k;
                    break;
                }
            }
            ops.add(new Op(chosen, r.nextLong()));
        }
        return ops;
    }

    /** Op {@code kind} with seed {@code seed}: for regression tests that replay a shrunk sequence. */
    static Op op(Kind kind, long seed) {
        return new Op(kind, seed);
    }

    /**
     * A failure: at op {@code index} ({@code -1}: while closing everything afterwards, or in the final
     * resource count), what was called, what the model allowed, and what happened.
     */
    record Failure(int index, Kind kind, String call, String reason, Throwable thrown) {
        /** What must stay the same for a shrunk sequence to count as the same failure. */
        String signature() {
            return (kind == null ? "after" : kind.name()) + "/" + (thrown == null ? "-" : thrown.getClass().getName())
                    + "/" + reason.replaceAll("[0-9a-fx#]+", "");
        }

        @Override
        public String toString() {
            return (index < 0 ? "after the last op" : "op #" + index + " (" + kind + ")") + ": " + call + ": " + reason
                    + (thrown == null ? "" : "\n      thrown: " + thrown);
        }
    }

    /** What a run did: calls made, ops skipped (no target), successes, and exceptions by type. */
    static final class Stats {
        int executed;
        int skipped;
        int ok;
        final Map<String, Integer> exceptions = new TreeMap<>();
        /** Time spent in ops of each kind, and in the resource counts before and after. */
        final long[] nanos = new long[Kind.values().length];
        long countNanos;

        void add(Stats s) {
            executed += s.executed;
            skipped += s.skipped;
            ok += s.ok;
            s.exceptions.forEach((k, v) -> exceptions.merge(k, v, Integer::sum));
            for (int i = 0; i < nanos.length; i++) {
                nanos[i] += s.nanos[i];
            }
            countNanos += s.countNanos;
        }

        /** The kinds of op that took the most time, with their seconds. */
        String slowest() {
            List<Kind> kinds = new ArrayList<>(List.of(Kind.values()));
            kinds.sort((a, b) -> Long.compare(nanos[b.ordinal()], nanos[a.ordinal()]));
            StringBuilder sb = new StringBuilder();
            for (Kind k : kinds.subList(0, 5)) {
                sb.append(sb.isEmpty() ? "" : ", ").append(k).append(String.format(" %.1f s", nanos[k.ordinal()] / 1e9));
            }
            return sb + String.format(", resource counts %.1f s", countNanos / 1e9);
        }

        int thrown() {
            return exceptions.values().stream().mapToInt(Integer::intValue).sum();
        }

        @Override
        public String toString() {
            StringBuilder sb = new StringBuilder();
            exceptions.forEach((k, v) -> sb.append(sb.isEmpty() ? "" : ", ").append(k).append(' ').append(v));
            return executed + " calls: " + ok + " succeeded, " + thrown() + " documented exceptions (" + sb + "), "
                    + skipped + " ops without a target";
        }
    }

    /** The result of {@link #run}: the failure, or null, the stats, the calls (if traced) and the ops that ran. */
    record Result(Failure failure, Stats stats, List<String> trace, List<Op> ran) {
    }

    private static final Set<Class<? extends Throwable>> DOCUMENTED = Set.of(IllegalStateException.class,
            IllegalArgumentException.class, IndexOutOfBoundsException.class, NullPointerException.class,
            UnsupportedOperationException.class, VerbsException.class);

    private final TestDevice dev;
    private final Gid gid;
    private final long hangNanos;

    /**
     * @param dev         the device; null for none: then only the ops that need no device run (requests,
     *                    arenas, batches, the argument checks before a device is reached)
     * @param hangSeconds how long one op may take before the run counts as hung
     */
    MisuseGenerator(TestDevice dev, int hangSeconds) {
        this.dev = dev;
        this.hangNanos = hangSeconds * 1_000_000_000L;
        if (dev == null) {
            this.gid = Gid.ZERO;
            return;
        }
        try (Context ctx = dev.open()) {
            this.gid = ctx.queryGid(dev.port(), dev.gidIndex());
        }
    }

    private Map<String, Integer> counts() {
        return dev == null ? Map.of() : Footprint.rdma(dev.name());
    }

    /** Runs all of {@code ops}; see {@link #run(List, boolean, int)}. */
    Result run(List<Op> ops, boolean trace) {
        return run(ops, trace, Integer.MAX_VALUE);
    }

    /**
     * Runs {@code ops} on a fresh world in a thread of its own, until they end or {@code calls} API
     * calls have been made (an op without a target makes none), then closes everything and compares
     * the device's resource counts with those before. A hang (an op running longer than the limit)
     * is a failure too; the hung thread is left behind (a daemon). The ops that ran are
     * {@link Result#ran()}: the list that replays the run.
     *
     * @param trace whether to keep the description of every call (for printing a shrunk sequence)
     */
    Result run(List<Op> ops, boolean trace, int calls) {
        World w = new World(trace, calls);
        long c0 = System.nanoTime();
        Map<String, Integer> before = counts();
        w.stats.countNanos += System.nanoTime() - c0;
        Thread t = Thread.ofPlatform().daemon().name("misuse").start(() -> w.runAll(ops));
        try {
            while (t.isAlive()) {
                t.join(200);
                long started = w.opStarted;
                if (t.isAlive() && started != 0 && System.nanoTime() - started > hangNanos) {
                    Failure f = new Failure(w.index, w.index >= 0 && w.index < ops.size() ? ops.get(w.index).kind() : null,
                            w.call, "hung: no return after " + hangNanos / 1_000_000_000 + " s; the calls before it:\n        "
                            + String.join("\n        ", w.recent), null);
                    return new Result(f, w.stats, w.trace, ops.subList(0, w.ran));
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        Failure f = w.failure;
        if (f == null) {
            long c1 = System.nanoTime();
            Map<String, Integer> after = counts();
            w.stats.countNanos += System.nanoTime() - c1;
            if (!after.equals(before)) {
                f = new Failure(-1, null, "rdma resource show", "the device's objects differ after everything was closed: "
                        + "before " + Footprint.format(before) + ", after " + Footprint.format(after), null);
            }
        }
        return new Result(f, w.stats, w.trace, ops.subList(0, w.ran));
    }

    /**
     * Shrinks {@code ops}, which fail with {@code failure}, to a shorter list that fails the same way
     * (delta debugging), for at most {@code budgetNanos}.
     */
    List<Op> shrink(List<Op> ops, Failure failure, long budgetNanos) {
        long deadline = System.nanoTime() + budgetNanos;
        String signature = failure.signature();
        List<Op> current = failure.index() >= 0 ? new ArrayList<>(ops.subList(0, failure.index() + 1)) : new ArrayList<>(ops);
        int n = 2;
        while (current.size() >= 2 && System.nanoTime() < deadline) {
            int chunk = (current.size() + n - 1) / n;
            boolean reduced = false;
            for (int start = 0; start < current.size() && System.nanoTime() < deadline; start += chunk) {
                List<Op> candidate = new ArrayList<>(current.subList(0, start));
                candidate.addAll(current.subList(Math.min(current.size(), start + chunk), current.size()));
                Failure f = run(candidate, false).failure();
                if (f != null && f.signature().equals(signature)) {
                    current = f.index() >= 0 ? new ArrayList<>(candidate.subList(0, f.index() + 1)) : candidate;
                    n = Math.max(n - 1, 2);
                    reduced = true;
                    break;
                }
            }
            if (!reduced) {
                if (n >= current.size()) {
                    break;
                }
                n = Math.min(current.size(), n * 2);
            }
        }
        return current;
    }

    // ---------------------------------------------------------------------------------------------
    // The model

    /** An object of the run: a resource, an arena, a request or a batch. */
    abstract static class Node {
        final String name;
        boolean open = true;

        Node(String name) {
            this.name = name;
        }

        @Override
        public String toString() {
            return name + (open ? "" : "(closed)");
        }
    }

    /** A resource, with the resources it uses (the closing rule) and its context. */
    static class Res extends Node {
        final Resource r;
        final Res[] uses;
        final Res ctx;

        Res(String name, Resource r, Res ctx, Res... uses) {
            super(name);
            this.r = r;
            this.ctx = ctx == null ? this : ctx;
            this.uses = uses;
        }
    }

    static final class Qp extends Res {
        final QpType type;
        final boolean hasSrq;

        Qp(String name, QueuePair r, Res ctx, QpType type, boolean hasSrq, Res... uses) {
            super(name, r, ctx, uses);
            this.type = type;
            this.hasSrq = hasSrq;
        }

        QueuePair qp() {
            return (QueuePair) r;
        }
    }

    static final class Mr extends Res {
        /** The arena of its memory; null while it is the region's own (allocateAndRegister). */
        Ar ar;
        long size;

        Mr(String name, MemoryRegion r, Res ctx, Ar ar, long size, Res pd) {
            super(name, r, ctx, pd);
            this.ar = ar;
            this.size = size;
        }

        MemoryRegion mr() {
            return (MemoryRegion) r;
        }

        boolean memoryAlive() {
            return ar == null ? open : ar.open;
        }
    }

    /** An arena of the test; {@link #AUTO} stands for memory the GC frees (always alive). */
    static final class Ar extends Node {
        final Arena arena;
        final List<MemorySegment> segments = new ArrayList<>();

        Ar(String name, Arena arena) {
            super(name);
            this.arena = arena;
        }
    }

    static final Ar AUTO = new Ar("auto", null);

    /** A request and what the model knows of it. */
    abstract static class Req extends Node {
        final Ar ar;
        final int capacity;
        /** Each entry: the {@link Mr} of a scatter/gather entry, or the {@link Ar} of inline data. */
        final List<Node> sges = new ArrayList<>();
        Req next;

        Req(String name, Ar ar, int capacity) {
            super(name);
            this.ar = ar;
            this.capacity = capacity;
        }

        abstract WorkRequest<?> request();
    }

    static final class Snd extends Req {
        final SendRequest req;
        Res ah;

        Snd(String name, SendRequest req, Ar ar, int capacity) {
            super(name, ar, capacity);
            this.req = req;
        }

        @Override
        WorkRequest<?> request() {
            return req;
        }
    }

    static final class Rcv extends Req {
        final ReceiveRequest req;

        Rcv(String name, ReceiveRequest req, Ar ar, int capacity) {
            super(name, ar, capacity);
            this.req = req;
        }

        @Override
        WorkRequest<?> request() {
            return req;
        }
    }

    static final class Batch extends Node {
        final WorkCompletions wc;
        final Ar ar;

        Batch(String name, WorkCompletions wc, Ar ar) {
            super(name);
            this.wc = wc;
            this.ar = ar;
        }
    }

    /** What a call must or may throw; a call with no "must" must succeed unless a "may" happens. */
    static final class Expect {
        private final List<Class<? extends Throwable>> types = new ArrayList<>();
        private final List<String> fragments = new ArrayList<>();
        private boolean certain;

        /**
         * If {@code cond}, the call must fail, and may do so with {@code type} whose message contains one of
         * {@code fragment}'s |-separated words (null: any message).
         */
        Expect must(boolean cond, Class<? extends Throwable> type, String fragment) {
            if (cond) {
                certain = true;
                types.add(type);
                fragments.add(fragment);
            }
            return this;
        }

        /** If {@code cond}, the call may fail with {@code type}. */
        Expect may(boolean cond, Class<? extends Throwable> type, String fragment) {
            if (cond) {
                types.add(type);
                fragments.add(fragment);
            }
            return this;
        }

        /** The device decides: the call may fail with {@link VerbsException}. */
        Expect device() {
            return may(true, VerbsException.class, null);
        }

        /** Null if {@code thrown} (null: success) is allowed, else why not. */
        String judge(Throwable thrown) {
            if (thrown == null) {
                return certain ? "succeeded, but must throw one of " + this : null;
            }
            if (!DOCUMENTED.contains(thrown.getClass())) {
                return "threw " + thrown.getClass().getName() + ", which is not a documented exception";
            }
            String message = thrown.getMessage();
            if (message == null || message.isBlank()) {
                return "threw " + thrown.getClass().getSimpleName() + " without a message";
            }
            if (message.equals("Already closed")) {
                return "threw FFM's bare \"Already closed\", which names no object";
            }
            for (int i = 0; i < types.size(); i++) {
                if (types.get(i) == thrown.getClass() && matches(fragments.get(i), message)) {
                    return null;
                }
            }
            return "threw " + thrown.getClass().getSimpleName() + " (\"" + message + "\"), but the model allows "
                    + (types.isEmpty() ? "only success" : (certain ? "" : "success or ") + this);
        }

        private static boolean matches(String fragment, String message) {
            if (fragment == null) {
                return true;
            }
            String m = message.toLowerCase(java.util.Locale.ROOT);
            for (String f : fragment.split("\\|")) {
                if (m.contains(f.toLowerCase(java.util.Locale.ROOT))) {
                    return true;
                }
            }
            return false;
        }

        @Override
        public String toString() {
            List<String> s = new ArrayList<>();
            for (int i = 0; i < types.size(); i++) {
                s.add(types.get(i).getSimpleName() + (fragments.get(i) == null ? "" : "(" + fragments.get(i) + ")"));
            }
            return String.join(", ", s);
        }
    }

    /** Thrown inside the world when a call's outcome is not allowed. */
    private static final class Found extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final transient Failure failure;

        Found(Failure failure) {
            super(failure.reason(), null, false, false);
            this.failure = failure;
        }
    }

    private static final int MAX_OPEN_CONTEXTS = 3;
    private static final int MAX_OPEN_QPS = 16;
    private static final int MAX_OPEN_MRS = 24;
    private static final int MAX_OPEN_CQS = 12;
    private static final int MAX_OPEN_ARENAS = 8;

    /** The objects of one run, and the ops acting on them. */
    final class World {
        final List<Res> resources = new ArrayList<>();
        final List<Res> contexts = new ArrayList<>();
        final List<Res> pds = new ArrayList<>();
        final List<Res> channels = new ArrayList<>();
        final List<Res> cqs = new ArrayList<>();
        final List<Res> srqs = new ArrayList<>();
        final List<Qp> qps = new ArrayList<>();
        final List<Mr> mrs = new ArrayList<>();
        final List<Res> ahs = new ArrayList<>();
        final List<Ar> arenas = new ArrayList<>();
        final List<Snd> sends = new ArrayList<>();
        final List<Rcv> receives = new ArrayList<>();
        final List<Batch> batches = new ArrayList<>();
        final Stats stats = new Stats();
        final List<String> trace;
        final Deque<String> recent = new ArrayDeque<>();
        volatile long opStarted;
        volatile int index = -1;
        volatile String call = "";
        Failure failure;
        private Kind kind;
        private boolean lastOk;
        private int names;
        private final int calls;
        /** How many ops have run (started, for a failure). */
        volatile int ran;

        World(boolean trace, int calls) {
            this.trace = trace ? new ArrayList<>() : null;
            this.calls = calls;
        }

        void runAll(List<Op> ops) {
            try {
                for (int i = 0; i < ops.size() && stats.executed < calls; i++) {
                    ran = i + 1;
                    index = i;
                    kind = ops.get(i).kind();
                    long t0 = System.nanoTime();
                    opStarted = t0;
                    step(ops.get(i).kind(), new SplittableRandom(ops.get(i).seed()));
                    stats.nanos[kind.ordinal()] += System.nanoTime() - t0;
                }
                index = -1;
                kind = null;
                closeEverything();
            } catch (Found f) {
                failure = f.failure;
                try {
                    closeQuietly();
                } catch (RuntimeException | Error ignored) {
                    // the failure is what is reported
                }
            } catch (RuntimeException | Error e) {
                e.printStackTrace(System.out);
                failure = new Failure(index, kind, call, "the test itself threw", e);
            } finally {
                opStarted = 0;
            }
        }

        private String name(String prefix) {
            return prefix + "#" + names++;
        }

        /** Runs one call, judges its outcome against {@code e}, and records it. */
        private <T> T call(Expect e, String description, Callable<T> body) {
            call = description;
            opStarted = System.nanoTime();
            if (trace != null) {
                trace.add("#" + index + " " + description);
            }
            recent.addLast("#" + index + " " + description);
            if (recent.size() > 20) {
                recent.removeFirst();
            }
            T result = null;
            Throwable thrown = null;
            try {
                result = body.call();
            } catch (Found f) {
                throw f;
            } catch (Throwable t) {
                thrown = t;
            }
            stats.executed++;
            String why = e.judge(thrown);
            if (why != null) {
                throw new Found(new Failure(index, kind, description, why, thrown));
            }
            if (thrown == null) {
                stats.ok++;
            } else {
                stats.exceptions.merge(thrown.getClass().getSimpleName(), 1, Integer::sum);
                if (trace != null) {
                    trace.set(trace.size() - 1, trace.getLast() + "  -> " + thrown.getClass().getSimpleName() + ": "
                            + thrown.getMessage());
                }
            }
            lastOk = thrown == null;
            return result;
        }

        private void callVoid(Expect e, String description, ThrowingRunnable body) {
            call(e, description, () -> {
                body.run();
                return null;
            });
        }

        /** The model disagrees with the object about something other than a call's outcome. */
        private void invariant(boolean holds, String what) {
            if (!holds) {
                throw new Found(new Failure(index, kind, call, what, null));
            }
        }

        private <N extends Node> N pick(SplittableRandom r, List<N> list) {
            if (list.isEmpty()) {
                return null;
            }
            if (r.nextInt(10) < 8) {
                List<N> open = list.stream().filter(n -> n.open).toList();
                if (!open.isEmpty()) {
                    return open.get(r.nextInt(open.size()));
                }
            }
            return list.get(r.nextInt(list.size()));
        }

        private long openCount(List<? extends Node> list) {
            return list.stream().filter(n -> n.open).count();
        }

        private boolean inUse(Res n) {
            for (Res r : resources) {
                if (r.open && r != n) {
                    for (Res u : r.uses) {
                        if (u == n) {
                            return true;
                        }
                    }
                }
            }
            return false;
        }

        private void skip() {
            stats.skipped++;
        }

        // ---- choices

        private int pickInt(SplittableRandom r, int lo, int hi, int... edges) {
            return r.nextInt(10) < 8 || edges.length == 0 ? lo + r.nextInt(hi - lo + 1) : edges[r.nextInt(edges.length)];
        }

        private Set<AccessFlag> access(SplittableRandom r) {
            EnumSet<AccessFlag> s = EnumSet.noneOf(AccessFlag.class);
            AccessFlag[] common = {AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_WRITE, AccessFlag.REMOTE_READ, AccessFlag.REMOTE_ATOMIC};
            for (AccessFlag f : common) {
                if (r.nextBoolean()) {
                    s.add(f);
                }
            }
            if (r.nextInt(10) == 0) {
                s.add(AccessFlag.values()[r.nextInt(AccessFlag.values().length)]);
            }
            return s;
        }

        // ---- the ops

        void step(Kind k, SplittableRandom r) {
            switch (k) {
                case OPEN_CONTEXT -> openContext(r);
                case CLOSE -> close(r);
                case CONTEXT_QUERY -> contextQuery(r);
                case ALLOC_PD -> allocPd(r);
                case CREATE_CHANNEL -> createChannel(r);
                case CHANNEL_AWAIT -> channelAwait(r);
                case CREATE_CQ -> createCq(r);
                case POLL -> poll(r);
                case CQ_OTHER -> cqOther(r);
                case CREATE_SRQ -> createSrq(r);
                case SRQ_OP -> srqOp(r);
                case CREATE_QP -> createQp(r);
                case QP_OP -> qpOp(r);
                case POST_SEND -> postSend(r);
                case POST_RECEIVE -> postReceive(r);
                case REGISTER -> register(r);
                case REREGISTER -> reregister(r);
                case CREATE_AH -> createAh(r);
                case NEW_ARENA -> newArena(r);
                case CLOSE_ARENA -> closeArena(r);
                case NEW_SEND -> newRequest(r, true);
                case EDIT_SEND -> editSend(r);
                case NEW_RECEIVE -> newRequest(r, false);
                case EDIT_RECEIVE -> editReceive(r);
                case NEW_BATCH -> newBatch(r);
                case READ_BATCH -> readBatch(r);
                default -> throw new AssertionError(k);
            }
        }

        private void openContext(SplittableRandom r) {
            int v = r.nextInt(20);
            if (v == 0) {
                call(new Expect().must(true, IllegalArgumentException.class, "empty"), "Device.open(\"\")", () -> Device.open(""));
                return;
            }
            if (v == 1) {
                call(new Expect().must(true, VerbsException.class, "no RDMA device named"), "Device.open(\"nosuch0\")",
                        () -> Device.open("nosuch0"));
                return;
            }
            if (dev == null || openCount(contexts) >= MAX_OPEN_CONTEXTS) {
                skip();
                return;
            }
            String n = name("ctx");
            Context c = call(new Expect(), n + " = Device.open(" + dev.name() + ")", () -> Device.open(dev.name()));
            Res node = new Res(n, c, null);
            contexts.add(node);
            resources.add(node);
        }

        private void close(SplittableRandom r) {
            Res n = pick(r, resources);
            if (n == null) {
                skip();
                return;
            }
            boolean wasOpen = n.open;
            callVoid(new Expect().must(!n.open, IllegalStateException.class, "already closed")
                    .must(n.open && inUse(n), IllegalStateException.class, "still in use"), n + ".close()", n.r::close);
            if (lastOk) {
                n.open = false;
                invariant(wasOpen && n.r.isClosed(), n.name + ".isClosed() is false after close()");
            } else {
                invariant(n.r.isClosed() == !n.open, n.name + ".isClosed() disagrees with the model after a failed close()");
            }
        }

        private void contextQuery(SplittableRandom r) {
            Res c = pick(r, contexts);
            if (c == null) {
                skip();
                return;
            }
            Context ctx = (Context) c.r;
            switch (r.nextInt(7)) {
                case 0 -> {
                    int port = pickInt(r, dev.port(), dev.port(), 0, -1, 2, 255, 256, Integer.MIN_VALUE);
                    call(new Expect().must(port < 1 || port > 255, IllegalArgumentException.class, "port")
                            .must(!c.open, IllegalStateException.class, "closed").may(port != dev.port(), VerbsException.class, null),
                            c + ".queryPort(" + port + ")", () -> ctx.queryPort(port).state());
                }
                case 1 -> {
                    int port = pickInt(r, dev.port(), dev.port(), 0, 2, 300);
                    int index = pickInt(r, 0, 3, -1, 255, 1000, Integer.MAX_VALUE);
                    call(new Expect().must(port < 1 || port > 255, IllegalArgumentException.class, "port")
                            .must(!c.open, IllegalStateException.class, "closed").device(),
                            c + ".queryGid(" + port + ", " + index + ")", () -> ctx.queryGid(port, index));
                }
                case 2 -> call(new Expect().must(!c.open, IllegalStateException.class, "closed"), c + ".queryDevice()",
                        () -> ctx.queryDevice().maxQp());
                case 3 -> call(new Expect().must(!c.open, IllegalStateException.class, "closed").device(), c + ".gidTable()",
                        ctx::gidTable);
                case 4 -> call(new Expect().must(!c.open, IllegalStateException.class, "closed"), c + ".numCompVectors()",
                        ctx::numCompVectors);
                case 5 -> {
                    Duration d = r.nextInt(10) == 0 ? null : r.nextBoolean() ? Duration.ZERO : Duration.ofMillis(1);
                    call(new Expect().must(d == null, NullPointerException.class, "timeout")
                            .must(!c.open, IllegalStateException.class, "closed"),
                            c + ".nextAsyncEvent(" + d + ")", () -> ctx.nextAsyncEvent(d));
                }
                default -> call(new Expect(), c + ".device()", () -> ctx.device().name());
            }
        }

        private void allocPd(SplittableRandom r) {
            Res c = pick(r, contexts);
            if (c == null) {
                skip();
                return;
            }
            String n = name("pd");
            ProtectionDomain pd = call(new Expect().must(!c.open, IllegalStateException.class, "closed"),
                    n + " = " + c + ".allocateProtectionDomain()", ((Context) c.r)::allocateProtectionDomain);
            if (lastOk) {
                Res node = new Res(n, pd, c, c);
                pds.add(node);
                resources.add(node);
            }
        }

        private void createChannel(SplittableRandom r) {
            Res c = pick(r, contexts);
            if (c == null) {
                skip();
                return;
            }
            String n = name("chan");
            CompletionChannel ch = call(new Expect().must(!c.open, IllegalStateException.class, "closed").device(),
                    n + " = " + c + ".createCompletionChannel()", ((Context) c.r)::createCompletionChannel);
            if (lastOk) {
                Res node = new Res(n, ch, c, c);
                channels.add(node);
                resources.add(node);
            }
        }

        private void channelAwait(SplittableRandom r) {
            Res ch = pick(r, channels);
            if (ch == null) {
                skip();
                return;
            }
            Duration d = r.nextInt(10) == 0 ? null : r.nextBoolean() ? Duration.ZERO : Duration.ofMillis(1);
            call(new Expect().must(d == null, NullPointerException.class, "timeout").must(!ch.open, IllegalStateException.class, "closed"),
                    ch + ".awaitEvent(" + d + ")", () -> ((CompletionChannel) ch.r).awaitEvent(d));
        }

        private void createCq(SplittableRandom r) {
            Res c = pick(r, contexts);
            if (c == null || openCount(cqs) >= MAX_OPEN_CQS) {
                skip();
                return;
            }
            int entries = pickInt(r, 1, 64, 0, -1, Integer.MIN_VALUE, Integer.MAX_VALUE, 1 << 20, 1 << 30);
            Res ch = r.nextInt(3) == 0 ? pick(r, channels) : null;
            boolean nullChannel = ch == null && r.nextInt(20) == 0;
            int vector = pickInt(r, 0, 0, -1, 1, 100);
            String n = name("cq");
            Expect e = new Expect().must(entries <= 0, IllegalArgumentException.class, "entr")
                    .must(!c.open, IllegalStateException.class, "closed");
            CompletionQueue cq;
            Context ctx = (Context) c.r;
            if (ch == null && !nullChannel) {
                cq = call(e.device(), n + " = " + c + ".createCompletionQueue(" + entries + ")", () -> ctx.createCompletionQueue(entries));
            } else {
                e.must(nullChannel, NullPointerException.class, "channel");
                if (ch != null) {
                    e.must(!ch.open, IllegalStateException.class, "closed")
                            .must(ch.ctx != c, IllegalArgumentException.class, "another context")
                            .must(vector < 0, IllegalArgumentException.class, "vector")
                            .may(vector > 0, IllegalArgumentException.class, "vector");
                }
                CompletionChannel channel = ch == null ? null : (CompletionChannel) ch.r;
                cq = call(e.device(), n + " = " + c + ".createCompletionQueue(" + entries + ", " + ch + ", " + vector + ")",
                        () -> ctx.createCompletionQueue(entries, channel, vector));
            }
            if (lastOk) {
                Res node = ch == null ? new Res(n, cq, c, c) : new Res(n, cq, c, c, ch);
                cqs.add(node);
                resources.add(node);
            }
        }

        private void poll(SplittableRandom r) {
            Res cq = pick(r, cqs);
            Batch b = r.nextInt(30) == 0 ? null : pick(r, batches);
            if (cq == null || (b == null && batches.size() > 0 && r.nextBoolean())) {
                skip();
                return;
            }
            WorkCompletions wc = b == null ? null : b.wc;
            Integer n = call(new Expect().must(b == null, NullPointerException.class, "batch")
                    .must(!cq.open, IllegalStateException.class, "closed")
                    .must(b != null && !b.ar.open, IllegalStateException.class, "freed").device(),
                    cq + ".poll(" + b + ")", () -> ((CompletionQueue) cq.r).poll(wc));
            if (lastOk) {
                invariant(n >= 0 && n <= wc.capacity() && wc.count() == n, "poll returned " + n + " but the batch holds " + wc.count());
            }
        }

        private void cqOther(SplittableRandom r) {
            Res cq = pick(r, cqs);
            if (cq == null) {
                skip();
                return;
            }
            CompletionQueue q = (CompletionQueue) cq.r;
            switch (r.nextInt(3)) {
                case 0 -> {
                    boolean solicited = r.nextBoolean();
                    boolean hasChannel = cq.uses.length > 1;
                    callVoid(new Expect().must(!hasChannel, IllegalStateException.class, "no completion channel")
                            .must(!cq.open, IllegalStateException.class, "closed").device(),
                            cq + ".requestNotification(" + solicited + ")", () -> q.requestNotification(solicited));
                }
                case 1 -> {
                    int entries = pickInt(r, 1, 128, 0, -1, Integer.MAX_VALUE, 1 << 20);
                    callVoid(new Expect().must(entries <= 0, IllegalArgumentException.class, "entr")
                            .must(!cq.open, IllegalStateException.class, "closed").device(),
                            cq + ".resize(" + entries + ")", () -> q.resize(entries));
                }
                default -> call(new Expect().must(!cq.open, IllegalStateException.class, "closed"), cq + ".capacity()", q::capacity);
            }
        }

        private void createSrq(SplittableRandom r) {
            Res pd = pick(r, pds);
            if (pd == null) {
                skip();
                return;
            }
            int maxWr = pickInt(r, 1, 64, 0, -1, 1 << 20, Integer.MAX_VALUE);
            int maxSge = pickInt(r, 1, 4, 0, -1, 1000);
            String n = name("srq");
            SharedReceiveQueue s = call(new Expect().must(maxWr < 1 || maxSge < 1, IllegalArgumentException.class, "positive")
                    .must(!pd.open, IllegalStateException.class, "closed").device(),
                    n + " = " + pd + ".createSharedReceiveQueue(" + maxWr + ", " + maxSge + ")",
                    () -> ((ProtectionDomain) pd.r).createSharedReceiveQueue(maxWr, maxSge));
            if (lastOk) {
                Res node = new Res(n, s, pd.ctx, pd);
                srqs.add(node);
                resources.add(node);
            }
        }

        private void srqOp(SplittableRandom r) {
            Res s = pick(r, srqs);
            if (s == null) {
                skip();
                return;
            }
            SharedReceiveQueue srq = (SharedReceiveQueue) s.r;
            switch (r.nextInt(3)) {
                case 0 -> {
                    int limit = pickInt(r, 0, 64, -1, 1 << 20, Integer.MAX_VALUE);
                    callVoid(new Expect().must(!s.open, IllegalStateException.class, "closed").device(), s + ".arm(" + limit + ")",
                            () -> srq.arm(limit));
                }
                case 1 -> call(new Expect().must(!s.open, IllegalStateException.class, "closed").device(), s + ".query()", srq::query);
                default -> {
                    Rcv q = r.nextInt(20) == 0 ? null : pick(r, receives);
                    if (q == null && receives.size() > 0 && r.nextInt(20) != 0) {
                        skip();
                        return;
                    }
                    Expect e = new Expect().must(q == null, NullPointerException.class, "request")
                            .must(!s.open, IllegalStateException.class, "closed").device();
                    chain(e, q, null);
                    callVoid(e, s + ".postReceive(" + describeChain(q) + ")", () -> srq.postReceive(q == null ? null : q.req));
                }
            }
        }

        private void createQp(SplittableRandom r) {
            Res pd = pick(r, pds);
            if (pd == null || openCount(qps) >= MAX_OPEN_QPS) {
                skip();
                return;
            }
            QpType[] common = {QpType.RC, QpType.RC, QpType.RC, QpType.UD, QpType.UD, QpType.UC};
            QpType type = r.nextInt(10) == 0 ? QpType.values()[r.nextInt(QpType.values().length)] : common[r.nextInt(common.length)];
            Res scq = r.nextInt(40) == 0 ? null : pick(r, cqs);
            Res rcq = r.nextInt(3) == 0 ? scq : r.nextInt(40) == 0 ? null : pick(r, cqs);
            if ((scq == null || rcq == null) && r.nextInt(10) != 0) {
                skip();
                return;
            }
            Res srq = r.nextInt(6) == 0 ? pick(r, srqs) : null;
            int sendWr = pickInt(r, 1, 64, 0, -1, 1 << 20, Integer.MAX_VALUE);
            int recvWr = pickInt(r, 1, 64, 0, -1, 1 << 20);
            int sendSge = pickInt(r, 1, 4, 0, -1, 1000);
            int recvSge = pickInt(r, 1, 4, 0, -1, 1000);
            int inline = pickInt(r, 0, 128, -1, 1 << 20);
            boolean nullInit = r.nextInt(50) == 0;
            boolean sigAll = r.nextBoolean();
            String n = name("qp");
            Expect e = new Expect().must(scq == null, NullPointerException.class, "sendCq")
                    .must(rcq == null, NullPointerException.class, "recvCq")
                    .must(sendWr < 0, IllegalArgumentException.class, "maxSendWr")
                    .must(recvWr < 0, IllegalArgumentException.class, "maxRecvWr")
                    .must(sendSge < 0, IllegalArgumentException.class, "maxSendSge")
                    .must(recvSge < 0, IllegalArgumentException.class, "maxRecvSge")
                    .must(inline < 0, IllegalArgumentException.class, "maxInlineData").must(nullInit, NullPointerException.class, "init")
                    .must(!pd.open, IllegalStateException.class, "closed");
            for (Res cq : new Res[] {scq, rcq}) {
                if (cq != null) {
                    e.must(!cq.open, IllegalStateException.class, "closed")
                            .must(cq.ctx != pd.ctx, IllegalArgumentException.class, "own context");
                }
            }
            if (srq != null) {
                e.must(!srq.open, IllegalStateException.class, "closed")
                        .must(srq.ctx != pd.ctx, IllegalArgumentException.class, "another context");
            }
            e.device();
            String d = n + " = " + pd + ".createQueuePair(" + (nullInit ? "null" : type + ", " + scq + ", " + rcq + ", srq " + srq + ", wr "
                    + sendWr + "/" + recvWr + ", sge " + sendSge + "/" + recvSge + ", inline " + inline) + ")";
            QueuePair qp = call(e, d, () -> {
                QpInitAttributes init = new QpInitAttributes(type, scq == null ? null : (CompletionQueue) scq.r,
                        rcq == null ? null : (CompletionQueue) rcq.r).maxSendWr(sendWr).maxRecvWr(recvWr).maxSendSge(sendSge)
                        .maxRecvSge(recvSge).maxInlineData(inline).signalAll(sigAll)
                        .sharedReceiveQueue(srq == null ? null : (SharedReceiveQueue) srq.r);
                return ((ProtectionDomain) pd.r).createQueuePair(nullInit ? null : init);
            });
            if (lastOk) {
                List<Res> uses = new ArrayList<>(List.of(pd, scq, rcq));
                if (srq != null) {
                    uses.add(srq);
                }
                Qp node = new Qp(n, qp, pd.ctx, type, srq != null, uses.toArray(Res[]::new));
                qps.add(node);
                resources.add(node);
                invariant(qp.state() == QpState.RESET && qp.type() == type, n + " is not a " + type + " in RESET");
            }
        }

        /** Connect options as chosen: built inside the judged call, where a value out of range throws. */
        private record Options(int port, int gidIndex, int timeout, int retry, int depth, int rnr, Mtu mtu, Set<AccessFlag> access) {
            ConnectOptions build() {
                ConnectOptions o = ConnectOptions.port(port).gidIndex(gidIndex).timeout(timeout).retryCount(retry)
                        .readAtomicDepth(depth).mtu(mtu).rnrRetry(rnr);
                return access == null ? o : o.access(access);
            }

            boolean valid() {
                return port >= 1 && port <= 255 && gidIndex >= -1 && gidIndex <= 255 && timeout <= 31 && retry <= 7 && depth <= 255;
            }
        }

        /** Connect options: mostly right for the device, sometimes out of range (IllegalArgumentException) or wrong; null sometimes. */
        private Options options(SplittableRandom r, Expect e) {
            if (r.nextInt(20) == 0) {
                return null;
            }
            int port = r.nextInt(8) == 0 ? new int[] {0, 2, 256}[r.nextInt(3)] : dev.port();
            int gidIndex = r.nextInt(8) == 0 ? new int[] {-2, -1, 0, 5, 256}[r.nextInt(5)] : dev.gidIndex();
            int timeout = r.nextInt(8) == 0 ? new int[] {0, 1, 31, 32}[r.nextInt(4)] : 14;
            int retry = r.nextInt(8) == 0 ? r.nextInt(9) : 6;
            int depth = r.nextInt(8) == 0 ? new int[] {0, 16, 256}[r.nextInt(3)] : 1;
            // Few RNR retries: a queue pair that sends to a peer without receives would retry forever with 7.
            int rnr = r.nextInt(20) == 0 ? 7 : r.nextInt(4);
            Mtu mtu = r.nextInt(8) == 0 ? Mtu.values()[r.nextInt(Mtu.values().length)] : Mtu.MTU_1024;
            Options o = new Options(port, gidIndex, timeout, retry, depth, rnr, mtu, r.nextInt(6) == 0 ? access(r) : null);
            e.must(port < 1 || port > 255, IllegalArgumentException.class, "port").must(gidIndex < -1 || gidIndex > 255,
                    IllegalArgumentException.class, "gidIndex").must(timeout > 31, IllegalArgumentException.class, "timeout")
                    .must(retry > 7, IllegalArgumentException.class, "retryCount")
                    // Soft-RoCE retries for ever with 7: refused at the move to RTS
                    .may(retry == 7 && softRoce(), IllegalArgumentException.class, "for ever")
                    .must(depth > 255, IllegalArgumentException.class, "readAtomicDepth");
            return o;
        }

        /** Whether the device is Soft-RoCE, which the API spares a retry count of 7 ("for ever" there). */
        private boolean softRoce() {
            return dev != null && dev.name().startsWith("rxe");
        }

        private static ConnectOptions real(Options o) {
            return o == null ? null : o.build();
        }

        private RemoteEndpoint remote(SplittableRandom r) {
            int v = r.nextInt(20);
            if (v == 0) {
                return null;
            }
            Qp peer = pick(r, qps);
            if (v < 13 && peer != null && peer.ctx.open) {
                return peer.qp().localEndpoint(ConnectOptions.port(dev.port()).gidIndex(dev.gidIndex()));
            }
            int lid = r.nextInt(4) == 0 ? r.nextInt(0x10000) : 0;
            Gid g = r.nextBoolean() ? gid : Gid.ZERO;
            return new RemoteEndpoint(lid, r.nextInt(0x1000000), r.nextInt(0x1000000), g);
        }

        private void qpOp(SplittableRandom r) {
            Qp q = pick(r, qps);
            if (q == null) {
                skip();
                return;
            }
            QueuePair qp = q.qp();
            boolean known = q.type == QpType.RC || q.type == QpType.UC || q.type == QpType.UD;
            Expect e = new Expect();
            switch (r.nextInt(12)) {
                case 0 -> {
                    Options o = options(r, e);
                    e.must(o == null, NullPointerException.class, "options").must(!known, UnsupportedOperationException.class, "toInit")
                            .must(!q.open, IllegalStateException.class, "closed").device();
                    callVoid(e, q + ".toInit(" + o + ")", () -> qp.toInit(real(o)));
                }
                case 1 -> {
                    Options o = options(r, e);
                    RemoteEndpoint remote = remote(r);
                    e.must(o == null, NullPointerException.class, "options")
                            .must(q.type != QpType.UD && remote == null, NullPointerException.class, "remote")
                            .must(q.type != QpType.UD && remote != null && o != null && o.valid() && o.gidIndex() < 0
                                    && remote.lid() == 0, IllegalArgumentException.class, "LID")
                            .must(!q.open, IllegalStateException.class, "closed").device();
                    callVoid(e, q + ".toRtr(" + remote + ", " + o + ")", () -> qp.toRtr(remote, real(o)));
                }
                case 2 -> {
                    Options o = options(r, e);
                    e.must(o == null, NullPointerException.class, "options").must(!q.open, IllegalStateException.class, "closed").device();
                    callVoid(e, q + ".toRts(" + o + ")", () -> qp.toRts(real(o)));
                }
                case 3, 4 -> {
                    Options o = options(r, e);
                    RemoteEndpoint remote = remote(r);
                    e.must(o == null, NullPointerException.class, "options").must(!known, UnsupportedOperationException.class, "connect")
                            .must(known && q.type != QpType.UD && remote == null, NullPointerException.class, "remote")
                            .may(known && q.type != QpType.UD && remote != null && o != null && o.valid() && o.gidIndex() < 0
                                    && remote.lid() == 0, IllegalArgumentException.class, "LID")
                            .must(!q.open, IllegalStateException.class, "closed").device();
                    callVoid(e, q + ".connect(" + remote + ", " + o + ")", () -> qp.connect(remote, real(o)));
                }
                case 5 -> {
                    Options o = options(r, e);
                    int qkey = r.nextInt();
                    e.must(q.type != QpType.UD, IllegalStateException.class, "UD").must(o == null, NullPointerException.class, "options")
                            .must(!q.open, IllegalStateException.class, "closed").device();
                    callVoid(e, q + ".activateDatagram(" + o + ", " + qkey + ")", () -> qp.activateDatagram(real(o), qkey));
                }
                case 6 -> callVoid(e.must(!q.open, IllegalStateException.class, "closed").device(), q + ".toError()", qp::toError);
                case 7 -> callVoid(e.must(!q.open, IllegalStateException.class, "closed").device(), q + ".reset()", qp::reset);
                case 8 -> {
                    QpAttributes a = r.nextInt(20) == 0 ? null : new QpAttributes();
                    int fields = 0;
                    if (a != null) {
                        if (r.nextBoolean()) {
                            a.state(QpState.values()[r.nextInt(QpState.values().length)]);
                            fields++;
                        }
                        if (r.nextInt(3) == 0) {
                            a.port(pickInt(r, 1, 1, 0, 2, 255));
                            fields++;
                        }
                        if (r.nextInt(3) == 0) {
                            a.pkeyIndex(pickInt(r, 0, 0, 1, 0xffff));
                            fields++;
                        }
                        if (r.nextInt(3) == 0) {
                            a.accessFlags(access(r));
                            fields++;
                        }
                        if (r.nextInt(4) == 0) {
                            a.pathMtu(Mtu.values()[r.nextInt(Mtu.values().length)]).destQpNum(r.nextInt(0x1000000))
                                    .rqPsn(r.nextInt(0x1000000))
                                    .addressVector(AddressVector.global(1, gid, dev.gidIndex(), 64));
                            fields++;
                        }
                        if (r.nextInt(4) == 0) {
                            int retry = r.nextInt(8);
                            e.may(retry == 7 && softRoce(), IllegalArgumentException.class, "for ever");
                            a.sqPsn(r.nextInt(0x1000000)).timeout(r.nextInt(32)).retryCount(retry).rnrRetry(r.nextInt(8))
                                    .maxRdAtomic(r.nextInt(4)).maxDestRdAtomic(r.nextInt(4)).minRnrTimer(r.nextInt(32));
                            fields++;
                        }
                        if (r.nextInt(5) == 0) {
                            a.qkey(r.nextInt());
                            fields++;
                        }
                    }
                    e.must(a == null, NullPointerException.class, "attributes")
                            .must(a != null && fields == 0, IllegalArgumentException.class, "no attribute")
                            .must(!q.open, IllegalStateException.class, "closed").device();
                    callVoid(e, q + ".modify(" + a + ")", () -> qp.modify(a));
                }
                case 9 -> {
                    QpAttributes got = call(e.must(!q.open, IllegalStateException.class, "closed").device(), q + ".query()", qp::query);
                    if (lastOk) {
                        invariant(got.state() == qp.state(), q.name + ".query() says " + got.state() + ", state() says " + qp.state());
                        call(new Expect(), q + ".query().addressVector()", got::addressVector);
                    }
                }
                case 10 -> {
                    Options o = options(r, e);
                    e.must(o == null, NullPointerException.class, "options")
                            .may(!q.ctx.open, IllegalStateException.class, "closed").device();
                    call(e, q + ".localEndpoint(" + o + ")", () -> qp.localEndpoint(real(o)));
                }
                default -> call(e, q + ".state()/capabilities()/qpNumber()",
                        () -> qp.state() + " " + qp.capabilities() + " " + qp.qpNumber());
            }
        }

        /** Adds what posting the chain from {@code head} on a queue pair of {@code type} (null: an SRQ) must throw. */
        private void chain(Expect e, Req head, QpType type) {
            Set<Req> seen = new HashSet<>();
            for (Req q = head; q != null && seen.add(q); q = q.next) {
                e.must(!q.ar.open, IllegalStateException.class, "freed");
                for (Node s : q.sges) {
                    if (s instanceof Mr m) {
                        e.must(!m.memoryAlive() || !m.open, IllegalStateException.class, "freed|closed");
                    } else {
                        e.must(!s.open, IllegalStateException.class, "freed");
                    }
                }
                if (q instanceof Snd sd && type == QpType.UD) {
                    e.must(sd.ah == null, IllegalStateException.class, "no destination")
                            .must(sd.ah != null && !sd.ah.open, IllegalStateException.class, "closed");
                }
            }
        }

        private String describeChain(Req head) {
            if (head == null) {
                return "null";
            }
            StringBuilder sb = new StringBuilder();
            Set<Req> seen = new HashSet<>();
            for (Req q = head; q != null && seen.add(q); q = q.next) {
                sb.append(sb.isEmpty() ? "" : " -> ").append(q).append(q.sges)
                        .append(q instanceof Snd sd && sd.ah != null ? " ah " + sd.ah : "");
            }
            return sb.toString();
        }

        private void postSend(SplittableRandom r) {
            Qp q = pick(r, qps);
            Snd s = r.nextInt(40) == 0 ? null : pick(r, sends);
            if (q == null || (s == null && !sends.isEmpty() && r.nextInt(10) != 0)) {
                skip();
                return;
            }
            Expect e = new Expect().must(s == null, NullPointerException.class, "request");
            chain(e, s, q.type);
            e.must(!q.open, IllegalStateException.class, "closed").device();
            callVoid(e, q + ".postSend(" + describeChain(s) + ")", () -> q.qp().postSend(s == null ? null : s.req));
        }

        private void postReceive(SplittableRandom r) {
            Qp q = pick(r, qps);
            Rcv s = r.nextInt(40) == 0 ? null : pick(r, receives);
            if (q == null || (s == null && !receives.isEmpty() && r.nextInt(10) != 0)) {
                skip();
                return;
            }
            Expect e = new Expect().must(q.hasSrq, IllegalStateException.class, "shared receive queue")
                    .must(!q.hasSrq && s == null, NullPointerException.class, "request");
            if (!q.hasSrq) {
                chain(e, s, q.type);
            }
            e.must(!q.open, IllegalStateException.class, "closed").device();
            callVoid(e, q + ".postReceive(" + describeChain(s) + ")", () -> q.qp().postReceive(s == null ? null : s.req));
        }

        /** A segment for registration or inline data, and what registering it must throw. */
        private record Seg(MemorySegment segment, Ar arena, String what) {
        }

        private Seg segment(SplittableRandom r, Ar a) {
            int v = r.nextInt(20);
            if (v == 0) {
                return new Seg(null, null, "null");
            }
            if (v == 1) {
                return new Seg(MemorySegment.ofArray(new byte[64]), null, "heap");
            }
            Ar from = r.nextInt(10) == 0 ? pick(r, arenas) : a;
            if (from == null || from == AUTO) {
                return new Seg(Arena.ofAuto().allocate(pickInt(r, 1, 8192), 64), AUTO, "auto");
            }
            MemorySegment s;
            if (from.open && (from.segments.isEmpty() || r.nextBoolean())) {
                s = from.arena.allocate(pickInt(r, 1, 65536), 4096);
                from.segments.add(s);
            } else if (!from.segments.isEmpty()) {
                s = from.segments.get(r.nextInt(from.segments.size()));
            } else {
                return new Seg(Arena.ofAuto().allocate(64), AUTO, "auto");
            }
            if (v == 2) {
                return new Seg(s.asReadOnly(), from, "read-only");
            }
            if (v == 3) {
                return new Seg(s.asSlice(0, 0), from, "empty");
            }
            return new Seg(s, from, "");
        }

        private void segmentChecks(Expect e, Ar a, Seg s) {
            e.must(a == null, NullPointerException.class, "arena").must(s.segment == null, NullPointerException.class, "segment")
                    .must(s.what.equals("heap"), IllegalArgumentException.class, "heap")
                    .must(s.what.equals("read-only"), IllegalArgumentException.class, "read-only")
                    .must(s.arena != null && !s.arena.open, IllegalStateException.class, "closed")
                    .must(s.arena != null && s.arena != a, IllegalArgumentException.class, "does not belong")
                    .must(s.what.equals("empty"), IllegalArgumentException.class, "empty");
        }

        private void register(SplittableRandom r) {
            Res pd = pick(r, pds);
            if (pd == null || openCount(mrs) >= MAX_OPEN_MRS) {
                skip();
                return;
            }
            Set<AccessFlag> flags = access(r);
            int nulls = r.nextInt(40);
            AccessFlag[] array = nulls == 0 ? null : nulls == 1 ? new AccessFlag[] {AccessFlag.LOCAL_WRITE, null}
                    : flags.toArray(AccessFlag[]::new);
            boolean unusual = flags.stream().anyMatch(f -> f.ordinal() > AccessFlag.REMOTE_ATOMIC.ordinal());
            String n = name("mr");
            ProtectionDomain p = (ProtectionDomain) pd.r;
            if (r.nextBoolean()) {
                long size = r.nextInt(10) < 8 ? 1 + r.nextInt(65536)
                        : new long[] {0, -1, Long.MIN_VALUE, Long.MAX_VALUE, 1L << 50}[r.nextInt(5)];
                Expect e = new Expect().must(size <= 0, IllegalArgumentException.class, "size")
                        .must(size > (1L << 40), IllegalArgumentException.class, null)
                        .must(array == null, NullPointerException.class, "access")
                        .must(nulls == 1, NullPointerException.class, "access flag")
                        .must(!pd.open, IllegalStateException.class, "closed").may(unusual, VerbsException.class, null);
                MemoryRegion mr = call(e, n + " = " + pd + ".allocateAndRegister(" + size + ", " + java.util.Arrays.toString(array) + ")",
                        () -> p.allocateAndRegister(size, array));
                if (lastOk) {
                    invariant(mr.length() == size, n + " has " + mr.length() + " bytes, not " + size);
                    Mr node = new Mr(n, mr, pd.ctx, null, size, pd);
                    mrs.add(node);
                    resources.add(node);
                }
                return;
            }
            Ar a = r.nextInt(30) == 0 ? null : pick(r, arenas);
            if (a == null && !arenas.isEmpty() && r.nextInt(10) != 0) {
                skip();
                return;
            }
            Seg s = segment(r, a == null ? AUTO : a);
            Expect e = new Expect();
            segmentChecks(e, a, s);
            e.must(array == null, NullPointerException.class, "access").must(nulls == 1, NullPointerException.class, "access flag")
                    .must(!pd.open, IllegalStateException.class, "closed").may(unusual, VerbsException.class, null);
            Arena arena = a == null ? null : a.arena;
            MemoryRegion mr = call(e, n + " = " + pd + ".register(" + a + ", " + s.what + " segment of " + s.arena + ", "
                    + java.util.Arrays.toString(array) + ")", () -> p.register(arena, s.segment, array));
            if (lastOk) {
                Mr node = new Mr(n, mr, pd.ctx, a, s.segment.byteSize(), pd);
                mrs.add(node);
                resources.add(node);
            }
        }

        private void reregister(SplittableRandom r) {
            Mr m = pick(r, mrs);
            Ar a = pick(r, arenas);
            if (m == null || a == null) {
                skip();
                return;
            }
            Seg s = segment(r, a);
            Set<AccessFlag> flags = r.nextInt(20) == 0 ? null : access(r);
            Expect e = new Expect();
            segmentChecks(e, a, s);
            e.must(flags == null, NullPointerException.class, "newAccess").must(!m.open, IllegalStateException.class, "closed")
                    .must(m.ar != null && !m.ar.open, IllegalStateException.class, "deregistered").device();
            callVoid(e, m + ".reregister(" + a + ", " + s.what + " segment of " + s.arena + ", " + flags + ")",
                    () -> m.mr().reregister(a.arena, s.segment, flags));
            if (lastOk) {
                m.ar = a;
                m.size = s.segment.byteSize();
            }
        }

        private void createAh(SplittableRandom r) {
            Res pd = pick(r, pds);
            if (pd == null) {
                skip();
                return;
            }
            int v = r.nextInt(10);
            int port = v == 0 ? new int[] {0, 2, 256}[r.nextInt(3)] : dev.port();
            int sgid = v == 1 ? new int[] {0, 1, 7, 256}[r.nextInt(4)] : dev.gidIndex();
            boolean ib = v == 2;
            boolean nullGid = v == 3;
            boolean nullDestination = v == 4;
            Expect e = new Expect().must(port < 1 || port > 255, IllegalArgumentException.class, "port")
                    .must(!ib && sgid > 255, IllegalArgumentException.class, "GRH")
                    .must(!ib && nullGid, IllegalArgumentException.class, "GID")
                    .must(nullDestination, NullPointerException.class, "destination")
                    .must(!pd.open, IllegalStateException.class, "closed").device();
            String n = name("ah");
            AddressHandle ah = call(e, n + " = " + pd + ".createAddressHandle(port " + port + ", sgid " + sgid + (ib ? ", IB" : "")
                    + (nullGid ? ", null GID" : "") + (nullDestination ? ", null" : "") + ")", () -> {
                        AddressVector av = ib ? AddressVector.ib(port, r.nextInt(0x10000), 0)
                                : AddressVector.global(port, nullGid ? null : gid, sgid, 64);
                        return ((ProtectionDomain) pd.r).createAddressHandle(nullDestination ? null : av);
                    });
            if (lastOk) {
                Res node = new Res(n, ah, pd.ctx, pd);
                ahs.add(node);
                resources.add(node);
            }
        }

        private void newArena(SplittableRandom r) {
            if (openCount(arenas) >= MAX_OPEN_ARENAS) {
                skip();
                return;
            }
            boolean confined = r.nextInt(3) == 0;
            String n = name("arena");
            Arena arena = call(new Expect(), n + " = Arena." + (confined ? "ofConfined()" : "ofShared()"),
                    () -> confined ? Arena.ofConfined() : Arena.ofShared());
            arenas.add(new Ar(n, arena));
        }

        private void closeArena(SplittableRandom r) {
            List<Ar> open = arenas.stream().filter(a -> a.open).toList();
            if (open.isEmpty()) {
                skip();
                return;
            }
            Ar a = open.get(r.nextInt(open.size()));
            // Closing an arena deregisters the regions of its memory first (a deregistration may fail: the device decides).
            callVoid(new Expect().device(), a + ".close()", a.arena::close);
            a.open = false;
            for (Mr m : mrs) {
                if (m.ar == a && m.open) {
                    invariant(!m.memoryAlive(), "model");
                }
            }
        }

        private Ar requestArena(SplittableRandom r) {
            if (r.nextBoolean() || arenas.isEmpty()) {
                return AUTO;
            }
            return r.nextInt(30) == 0 ? null : pick(r, arenas);
        }

        private void newRequest(SplittableRandom r, boolean send) {
            int sges = pickInt(r, 1, 4, 0, -1, 65536, 65537, Integer.MAX_VALUE, Integer.MIN_VALUE);
            Ar a = requestArena(r);
            String n = name(send ? "send" : "recv");
            Expect e = new Expect().must(a == null, NullPointerException.class, "arena")
                    .must(sges < 1 || sges > 65536, IllegalArgumentException.class, "maxSge")
                    .must(a != null && !a.open, IllegalStateException.class, null);
            Object req = call(e, n + " = new " + (send ? "SendRequest(" : "ReceiveRequest(") + sges + ", " + a + ")", () -> {
                Arena arena = a == null ? null : a == AUTO ? Arena.ofAuto() : a.arena;
                return send ? new SendRequest(sges, arena) : new ReceiveRequest(sges, arena);
            });
            if (lastOk) {
                if (send) {
                    sends.add(new Snd(n, (SendRequest) req, a, sges));
                } else {
                    receives.add(new Rcv(n, (ReceiveRequest) req, a, sges));
                }
            }
        }

        /** An SGE's region, offset and length, mostly inside the region; and what setting it must throw. */
        private record SgeArgs(Mr mr, long offset, int length) {
        }

        private SgeArgs sgeArgs(SplittableRandom r) {
            Mr m = r.nextInt(40) == 0 ? null : pick(r, mrs);
            if (m == null) {
                return new SgeArgs(null, 0, 8);
            }
            long size = m.size;
            long offset;
            int length;
            if (r.nextInt(10) < 8) {
                offset = r.nextLong(size + 1);
                length = (int) r.nextLong(Math.min(size - offset, 1 << 20) + 1);
            } else {
                offset = new long[] {-1, size, size + 1, Long.MAX_VALUE, Long.MIN_VALUE, 0}[r.nextInt(6)];
                length = new int[] {-1, 1, (int) Math.min(size + 1, Integer.MAX_VALUE), Integer.MAX_VALUE, Integer.MIN_VALUE, 0}
                        [r.nextInt(6)];
            }
            return new SgeArgs(m, offset, length);
        }

        private void sgeChecks(Expect e, SgeArgs s) {
            e.must(s.mr == null, NullPointerException.class, "region");
            if (s.mr != null) {
                long len = Integer.toUnsignedLong(s.length);
                boolean outside = s.offset < 0 || s.offset > s.mr.size - len;
                e.must(outside, IndexOutOfBoundsException.class, "outside")
                        .must(!s.mr.memoryAlive() || !s.mr.open, IllegalStateException.class, "freed|closed");
            }
        }

        /** Edits common to both request types; returns false if {@code choice} is not one of them. */
        private boolean editCommon(SplittableRandom r, Req q, int choice) {
            WorkRequest<?> w = q.request();
            Expect e = new Expect().must(!q.ar.open, IllegalStateException.class, null);
            switch (choice) {
                case 0 -> {
                    long id = r.nextLong();
                    callVoid(e, q + ".id(" + id + ")", () -> w.id(id));
                    if (lastOk) {
                        invariant(w.id() == id, "id() is not what id(long) set");
                    }
                }
                case 1 -> {
                    SgeArgs s = sgeArgs(r);
                    sgeChecks(e, s);
                    callVoid(e, q + ".sge(" + s + ")", () -> sge(w, s.mr == null ? null : s.mr.mr(), s.offset, s.length));
                    if (lastOk) {
                        q.sges.clear();
                        q.sges.add(s.mr);
                    }
                }
                case 2 -> {
                    SgeArgs s = sgeArgs(r);
                    sgeChecks(e, s);
                    e.must(q.sges.size() == q.capacity, IllegalStateException.class, "room for");
                    callVoid(e, q + ".addSge(" + s + ")", () -> addSge(w, s.mr == null ? null : s.mr.mr(), s.offset, s.length));
                    if (lastOk) {
                        q.sges.add(s.mr);
                    }
                }
                case 3 -> {
                    SgeArgs s = sgeArgs(r);
                    int index = r.nextInt(4) == 0 ? new int[] {-1, q.sges.size() + 1, q.capacity, Integer.MAX_VALUE}[r.nextInt(4)]
                            : r.nextInt(q.sges.size() + 1);
                    sgeChecks(e, s);
                    e.must(index < 0 || index > q.sges.size() || index >= q.capacity, IndexOutOfBoundsException.class, "SGE index");
                    callVoid(e, q + ".setSge(" + index + ", " + s + ")",
                            () -> setSge(w, index, s.mr == null ? null : s.mr.mr(), s.offset, s.length));
                    if (lastOk) {
                        if (index == q.sges.size()) {
                            q.sges.add(s.mr);
                        } else {
                            q.sges.set(index, s.mr);
                        }
                    }
                }
                case 4 -> {
                    callVoid(e, q + ".clearSges()", w::clearSges);
                    if (lastOk) {
                        q.sges.clear();
                    }
                }
                case 5 -> {
                    List<? extends Req> pool = q instanceof Snd ? sends : receives;
                    Req other = r.nextInt(5) == 0 ? null : pool.get(r.nextInt(pool.size()));
                    boolean cycle = false;
                    Set<Req> seen = new HashSet<>();
                    for (Req x = other; x != null && seen.add(x); x = x.next) {
                        if (x == q) {
                            cycle = true;
                            break;
                        }
                    }
                    e.must(cycle, IllegalArgumentException.class, "cycle")
                            .may(other != null && !other.ar.open, IllegalStateException.class, null);
                    callVoid(e, q + ".next(" + other + ")", () -> next(w, other == null ? null : other.request()));
                    if (lastOk) {
                        q.next = other;
                    }
                }
                default -> {
                    return false;
                }
            }
            // Succeeded or not, the request holds what the model says: a call that throws changes nothing.
            invariant(w.sgeCount() == q.sges.size(), q.name + ".sgeCount() is " + w.sgeCount() + " but the model has "
                    + q.sges.size() + " entries " + q.sges + (lastOk ? "" : " (the call threw)"));
            invariant(w.next() == (q.next == null ? null : q.next.request()), q.name + ".next() is not " + q.next
                    + (lastOk ? "" : " (the call threw)"));
            return true;
        }

        private void editSend(SplittableRandom r) {
            Snd s = pick(r, sends);
            if (s == null) {
                skip();
                return;
            }
            int choice = r.nextInt(14);
            if (editCommon(r, s, choice)) {
                return;
            }
            SendRequest q = s.req;
            Expect e = new Expect().must(!s.ar.open, IllegalStateException.class, null);
            switch (choice) {
                case 6 -> {
                    SendOpcode op = r.nextInt(20) == 0 ? null : SendOpcode.values()[r.nextInt(SendOpcode.values().length)];
                    e.must(op == null, NullPointerException.class, "opcode").must(op == SendOpcode.BIND_MW || op == SendOpcode.TSO
                            || op == SendOpcode.DRIVER1, UnsupportedOperationException.class, "not supported");
                    callVoid(e, s + ".opcode(" + op + ")", () -> q.opcode(op));
                    if (lastOk) {
                        invariant(q.opcode() == op, "opcode() is not what opcode(op) set");
                    }
                }
                case 7 -> {
                    Set<SendFlag> flags = r.nextInt(20) == 0 ? null : EnumSet.noneOf(SendFlag.class);
                    if (flags != null) {
                        for (SendFlag f : SendFlag.values()) {
                            if (r.nextInt(3) == 0) {
                                flags.add(f);
                            }
                        }
                    }
                    e.must(flags == null, NullPointerException.class, "flags");
                    callVoid(e, s + ".flags(" + flags + ")", () -> q.flags(flags));
                    if (lastOk) {
                        invariant(q.flags().equals(flags), "flags() is not what flags(set) set");
                    }
                }
                case 8 -> {
                    boolean on = r.nextBoolean();
                    int which = r.nextInt(4);
                    callVoid(e, s + "." + new String[] {"signaled", "solicited", "fence", "inline"}[which] + "(" + on + ")", () -> {
                        switch (which) {
                            case 0 -> q.signaled(on);
                            case 1 -> q.solicited(on);
                            case 2 -> q.fence(on);
                            default -> q.inline(on);
                        }
                    });
                }
                case 9 -> {
                    int v = r.nextInt(20);
                    Ar a = pick(r, arenas);
                    Seg seg = v == 0 ? new Seg(null, null, "null") : v == 1 ? new Seg(MemorySegment.ofArray(new byte[16]), null, "heap")
                            : segment(r, a == null ? AUTO : a);
                    e.must(seg.segment == null, NullPointerException.class, "data")
                            .must(seg.what.equals("heap"), IllegalArgumentException.class, "native");
                    callVoid(e, s + ".inlineData(" + seg.what + " segment of " + seg.arena + ")", () -> q.inlineData(seg.segment));
                    if (lastOk) {
                        s.sges.clear();
                        s.sges.add(seg.arena == null ? AUTO : seg.arena);
                        invariant(q.sgeCount() == 1, "inlineData: sgeCount() is " + q.sgeCount());
                    }
                }
                case 10 -> {
                    Mr m = pick(r, mrs);
                    long address = m != null && r.nextBoolean() ? m.mr().address() + r.nextInt(64) : r.nextLong();
                    int rkey = m != null && r.nextBoolean() ? m.mr().rkey() : r.nextInt();
                    callVoid(e, s + ".rdma(0x" + Long.toHexString(address) + ", 0x" + Integer.toHexString(rkey) + ")",
                            () -> q.rdma(address, rkey));
                    if (lastOk) {
                        s.ah = null;
                    }
                }
                case 11 -> {
                    Mr m = pick(r, mrs);
                    long address = m != null && r.nextInt(4) != 0
                            ? m.mr().address() + 8L * r.nextInt(8) + (r.nextInt(5) == 0 ? 3 : 0) : r.nextLong();
                    int rkey = m != null && r.nextBoolean() ? m.mr().rkey() : r.nextInt();
                    e.must((address & 7) != 0, IllegalArgumentException.class, "aligned");
                    callVoid(e, s + ".atomic(0x" + Long.toHexString(address) + ", 0x" + Integer.toHexString(rkey) + ")",
                            () -> q.atomic(address, rkey, r.nextLong(), r.nextLong()));
                    if (lastOk) {
                        s.ah = null;
                    }
                }
                case 12 -> {
                    Res ah = r.nextInt(20) == 0 ? null : pick(r, ahs);
                    if (ah == null && !ahs.isEmpty() && r.nextInt(10) != 0) {
                        skip();
                        return;
                    }
                    Qp peer = pick(r, qps);
                    int qpn = peer != null && r.nextInt(5) != 0 ? peer.qp().qpNumber() : r.nextInt();
                    int qkey = r.nextBoolean() ? 0 : r.nextInt();
                    e.must(ah == null, NullPointerException.class, "destination");
                    callVoid(e, s + ".datagram(" + ah + ", " + qpn + ", " + qkey + ")",
                            () -> q.datagram(ah == null ? null : (AddressHandle) ah.r, qpn, qkey));
                    if (lastOk) {
                        s.ah = ah;
                    }
                }
                default -> {
                    int v = r.nextInt();
                    boolean imm = r.nextBoolean();
                    callVoid(e, s + (imm ? ".immediate(" : ".invalidateRkey(") + v + ")", () -> {
                        if (imm) {
                            q.immediate(v);
                        } else {
                            q.invalidateRkey(v);
                        }
                    });
                    call(new Expect(), s + ".toString()", q::toString); // never throws: "SendRequest[freed]"
                }
            }
        }

        private void editReceive(SplittableRandom r) {
            Rcv q = pick(r, receives);
            if (q == null) {
                skip();
                return;
            }
            int choice = r.nextInt(7);
            if (!editCommon(r, q, choice)) {
                call(new Expect(), q + ".toString()", q.req::toString); // never throws
            }
        }

        private void newBatch(SplittableRandom r) {
            int capacity = pickInt(r, 1, 64, 0, -1, WorkCompletions.MAX_CAPACITY + 1, Integer.MAX_VALUE, 1 << 16);
            Ar a = requestArena(r);
            String n = name("wc");
            Expect e = new Expect()
                    .must(capacity < 1 || capacity > WorkCompletions.MAX_CAPACITY, IllegalArgumentException.class, "capacity")
                    .must(a == null, NullPointerException.class, "arena").must(a != null && !a.open, IllegalStateException.class, null);
            WorkCompletions wc = call(e, n + " = new WorkCompletions(" + capacity + ", " + a + ")",
                    () -> new WorkCompletions(capacity, a == null ? null : a == AUTO ? Arena.ofAuto() : a.arena));
            if (lastOk) {
                batches.add(new Batch(n, wc, a));
            }
        }

        private void readBatch(SplittableRandom r) {
            Batch b = pick(r, batches);
            if (b == null) {
                skip();
                return;
            }
            WorkCompletions wc = b.wc;
            int count = wc.count();
            int i = r.nextInt(5) == 0 ? new int[] {-1, count, count + 1, Integer.MAX_VALUE}[r.nextInt(4)]
                    : count == 0 ? 0 : r.nextInt(count);
            boolean inRange = i >= 0 && i < count;
            Expect e = new Expect().must(!inRange, IndexOutOfBoundsException.class, null)
                    .must(!b.ar.open, IllegalStateException.class, null);
            switch (r.nextInt(4)) {
                case 0 -> call(e, b + ".status(" + i + ")", () -> wc.status(i));
                case 1 -> call(e, b + ".wrId/byteLength/qpNumber/flags(" + i + ")",
                        () -> wc.wrId(i) + wc.byteLength(i) + wc.qpNumber(i) + wc.flags(i) + wc.immediate(i) + wc.vendorError(i));
                case 2 -> {
                    boolean success = inRange && b.ar.open && wc.status(i) == WcStatus.SUCCESS;
                    // The opcode of a failed completion is undefined: it may not name a WcOpcode.
                    call(e.may(!success, IllegalArgumentException.class, "no WcOpcode"), b + ".opcode(" + i + ")", () -> wc.opcode(i));
                }
                default -> call(new Expect(), b + ".toString()", wc::toString); // never throws: "WorkCompletions[freed]"
            }
        }

        // ---- the end of a run

        /** Closes every open resource, children first, and every open arena; each close must succeed. */
        void closeEverything() {
            boolean progress = true;
            while (progress) {
                progress = false;
                for (int i = resources.size() - 1; i >= 0; i--) {
                    Res n = resources.get(i);
                    if (n.open && !inUse(n)) {
                        callVoid(new Expect(), "cleanup: " + n + ".close()", n.r::close);
                        n.open = false;
                        progress = true;
                    }
                }
            }
            for (Res n : resources) {
                invariant(!n.open && n.r.isClosed(), n.name + " is still open after cleanup");
            }
            for (Ar a : arenas) {
                if (a.open) {
                    callVoid(new Expect(), "cleanup: " + a + ".close()", a.arena::close);
                    a.open = false;
                }
            }
        }

        /** After a failure: closes what can be closed, ignoring errors. */
        void closeQuietly() {
            for (int pass = 0; pass < 8; pass++) {
                for (int i = resources.size() - 1; i >= 0; i--) {
                    Res n = resources.get(i);
                    if (!n.r.isClosed()) {
                        try {
                            n.r.close();
                        } catch (RuntimeException ignored) {
                            // still in use, or broken: left for the process to end
                        }
                    }
                }
            }
            for (Ar a : arenas) {
                if (a.arena.scope().isAlive()) {
                    try {
                        a.arena.close();
                    } catch (RuntimeException ignored) {
                        // a confined arena of the run's thread is closed here, in it
                    }
                }
            }
        }
    }

    // Generic helpers: the request type is known only at run time.
    private static void sge(WorkRequest<?> w, MemoryRegion mr, long offset, int length) {
        w.sge(mr, offset, length);
    }

    private static void addSge(WorkRequest<?> w, MemoryRegion mr, long offset, int length) {
        w.addSge(mr, offset, length);
    }

    private static void setSge(WorkRequest<?> w, int index, MemoryRegion mr, long offset, int length) {
        w.setSge(index, mr, offset, length);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void next(WorkRequest w, WorkRequest other) {
        w.next(other);
    }

    @FunctionalInterface
    private interface ThrowingRunnable {
        void run() throws Exception;
    }

    /** Prints {@code lines} through {@code out}, each indented. */
    static void print(Consumer<String> out, List<String> lines) {
        for (String l : lines) {
            out.accept("    " + l);
        }
    }
}
