package io.github.panamaverbs.jmh;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The benchmarks' C library, {@code libpvbench.so} (jmh/src/main/c/pvbench.c), and the JNI one: the C
 * twins of the Java benchmarks and the set-up of two connected RC queue pairs.
 *
 * <p>The libraries are looked for in the directory that system property {@code pvbench.dir} names
 * (scripts/bench sets it), else in {@code jmh/target/native} or {@code target/native}.
 */
public final class C {
    static final Linker LINKER = Linker.nativeLinker();
    static final Path DIR = dir();
    static final SymbolLookup LIB = SymbolLookup.libraryLookup(DIR.resolve("libpvbench.so"), Arena.global());

    static final MethodHandle NOOP = LINKER.downcallHandle(find("pvb_noop"), FunctionDescriptor.ofVoid());
    static final MethodHandle NOOP_CRITICAL = LINKER.downcallHandle(find("pvb_noop"), FunctionDescriptor.ofVoid(),
            Linker.Option.critical(false));

    static final MethodHandle PAIR_OPEN = LINKER.downcallHandle(find("pvb_pair_open"),
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_INT));
    static final MethodHandle PAIR_OPEN_EX = LINKER.downcallHandle(find("pvb_pair_open_ex"),
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_INT));
    static final MethodHandle PAIR_OPEN_EVENTS = LINKER.downcallHandle(find("pvb_pair_open_events"),
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_INT));
    static final MethodHandle PAIR_CLOSE = LINKER.downcallHandle(find("pvb_pair_close"),
            FunctionDescriptor.ofVoid(ADDRESS));
    static final MethodHandle PAIR_GET = LINKER.downcallHandle(find("pvb_pair_get"),
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_INT));
    static final MethodHandle LAST_ERROR = LINKER.downcallHandle(find("pvb_last_error"),
            FunctionDescriptor.of(ADDRESS));

    // The C loops: called once per JMH invocation with n iterations. Plain downcalls: they run long.
    static final MethodHandle POLL_EMPTY = LINKER.downcallHandle(find("pvb_poll_empty"),
            FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG));
    static final MethodHandle WRITE_POLL = LINKER.downcallHandle(find("pvb_write_poll"),
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_INT));
    static final MethodHandle WRITE_BATCH = LINKER.downcallHandle(find("pvb_write_batch"),
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT));
    static final MethodHandle EX_POLL_EMPTY = LINKER.downcallHandle(find("pvb_ex_poll_empty"),
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG));
    static final MethodHandle EX_WRITE_POLL = LINKER.downcallHandle(find("pvb_ex_write_poll"),
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_INT));
    static final MethodHandle PINGPONG_WRITE = LINKER.downcallHandle(find("pvb_pingpong_write"),
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_INT));
    static final MethodHandle PINGPONG_SEND = LINKER.downcallHandle(find("pvb_pingpong_send"),
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_INT));
    static final MethodHandle ECHO_START = LINKER.downcallHandle(find("pvb_event_echo_start"),
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT));
    static final MethodHandle PINGPONG_EVENT = LINKER.downcallHandle(find("pvb_pingpong_event"),
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG));
    static final MethodHandle ECHO_STOP = LINKER.downcallHandle(find("pvb_event_echo_stop"),
            FunctionDescriptor.of(JAVA_INT, ADDRESS));

    private C() {
    }

    static final MethodHandle PINGPONG_TIMED = LINKER.downcallHandle(find("pvb_pingpong_timed"),
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_INT, JAVA_LONG, JAVA_INT, ADDRESS));

    /**
     * {@code n} round trips of the C ping-pong ({@code send} or RDMA write) of {@code size} bytes after
     * {@code warmup} untimed ones, each timed in C; returns the round trips' times in ns, sorted.
     */
    static long[] pingPongTimes(Rdma device, boolean send, int size, int warmup, int n) {
        try (Pair pair = new Pair(device, 1 << 16, 0); Arena a = Arena.ofConfined()) {
            MemorySegment ns = a.allocate(JAVA_LONG, Math.max(warmup, n));
            check("pvb_pingpong_timed", (long) PINGPONG_TIMED.invokeExact(pair.pair, send ? 1 : 0, (long) warmup, size, ns));
            check("pvb_pingpong_timed", (long) PINGPONG_TIMED.invokeExact(pair.pair, send ? 1 : 0, (long) n, size, ns));
            long[] t = ns.asSlice(0, 8L * n).toArray(JAVA_LONG);
            java.util.Arrays.sort(t);
            return t;
        } catch (RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static Path dir() {
        String d = System.getProperty("pvbench.dir");
        if (d != null) {
            return Path.of(d);
        }
        for (String candidate : new String[] {"jmh/target/native", "target/native"}) {
            if (Files.exists(Path.of(candidate, "libpvbench.so"))) {
                return Path.of(candidate).toAbsolutePath();
            }
        }
        throw new IllegalStateException("libpvbench.so not found: build it (scripts/bench does) and set -Dpvbench.dir");
    }

    static MemorySegment find(String name) {
        return LIB.find(name).orElseThrow(() -> new IllegalStateException(name + " not in libpvbench.so"));
    }

    /** Checks the result of a C loop: negative means a verb failed. */
    static long check(String what, long result) {
        if (result < 0) {
            throw new IllegalStateException(what + " failed in C");
        }
        return result;
    }

    /**
     * Two connected RC queue pairs opened by C ({@code pvb_pair_open}), each with its own CQ and
     * registered buffer: what the C loops and the raw-bindings benchmarks use; extended ones
     * ({@code pvb_pair_open_ex}: {@code ibv_create_cq_ex} and {@code ibv_create_qp_ex}) for the
     * {@code pvb_ex_*} loops; or each completion queue with a completion channel of its own
     * ({@code pvb_pair_open_events}) for {@code pvb_pingpong_event}.
     */
    static final class Pair implements AutoCloseable {
        final MemorySegment pair;
        final long ctx;
        final long[] cq = new long[2];
        final long[] qp = new long[2];
        final long[] buf = new long[2];
        final int[] lkey = new int[2];
        final int[] rkey = new int[2];

        Pair(Rdma device, long size, int maxInline) {
            this(device, size, maxInline, false);
        }

        Pair(Rdma device, long size, int maxInline, boolean extended) {
            this(device, size, maxInline, extended ? PAIR_OPEN_EX : PAIR_OPEN);
        }

        /** The pair of {@code pvb_pair_open_events}: each completion queue with its own channel. */
        static Pair withEvents(Rdma device, long size) {
            return new Pair(device, size, 0, PAIR_OPEN_EVENTS);
        }

        private Pair(Rdma device, long size, int maxInline, MethodHandle open) {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment name = a.allocateFrom(device.name());
                pair = (MemorySegment) open.invokeExact(name, device.port(), device.gidIndex(), size, maxInline);
                if (pair.address() == 0) {
                    MemorySegment msg = (MemorySegment) LAST_ERROR.invokeExact();
                    throw new IllegalStateException("pvb_pair_open: " + msg.reinterpret(256).getString(0));
                }
                ctx = get(0);
                for (int i = 0; i < 2; i++) {
                    cq[i] = get(1 + i);
                    qp[i] = get(3 + i);
                    buf[i] = get(5 + i);
                    lkey[i] = (int) get(7 + i);
                    rkey[i] = (int) get(9 + i);
                }
            } catch (RuntimeException e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        private long get(int what) throws Throwable {
            return (long) PAIR_GET.invokeExact(pair, what);
        }

        @Override
        public void close() {
            try {
                PAIR_CLOSE.invokeExact(pair);
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }
    }
}
