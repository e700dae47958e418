package io.github.panamaverbs.jmh;

import io.github.panamaverbs.verbs.CompletionQueue;
import io.github.panamaverbs.verbs.ReceiveRequest;
import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
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
 * A send/receive ping-pong woken by completion events, as {@code ibv_rc_pingpong -e} runs it: two RC
 * queue pairs of one device, side b answered by an echo thread of its own, so that each side sleeps
 * until the other's message arrives. One operation is a round trip of two {@value #SIZE}-byte sends
 * (the size {@code ibv_rc_pingpong} sends by default); every receive is waited for with
 * {@link CompletionQueue#await} (poll, {@code ibv_req_notify_cq}, poll, wait for the channel's event,
 * poll). (One thread playing both sides would not wait at all on Soft-RoCE: its {@code ibv_post_send}
 * delivers a loopback message before it returns.)
 * <ul>
 * <li>{@code send}: platform threads on both sides (each wait is poll(2) on the channel).</li>
 * <li>{@code sendVirtual}: virtual threads on both sides, whose waits park them while the library's
 *     event loop watches the channels; {@value #ROUNDS} round trips per virtual thread started and
 *     joined (in the time).</li>
 * <li>{@code c}: the same in C ({@code pvb_pingpong_event} against {@code pvb_event_echo_start}'s
 *     pthread), each side blocking in {@code ibv_get_cq_event} as {@code ibv_rc_pingpong -e} does.</li>
 * </ul>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 20, time = 1)  // the wait path's JDK code (poll(2), FFM) takes C2 longer to settle in the TCG VM
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class EventPingPong {
    static final int SIZE = 4096;
    static final long RECV = 8192;
    static final int ROUNDS = 100;
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    /** A pair whose side b is answered by an echo thread (platform or virtual) until {@link #close}. */
    abstract static class Echoed {
        ApiPair p;
        SendRequest sendA;
        SendRequest sendB;
        ReceiveRequest recvA;
        ReceiveRequest recvB;
        WorkCompletions wc;
        volatile boolean running;
        Thread echo;
        volatile Throwable echoFailed;

        void open(boolean virtual) {
            p = ApiPair.withEvents(1 << 16);
            Arena auto = Arena.ofAuto();
            sendA = new SendRequest(1, auto).opcode(SendOpcode.SEND).signaled(true).sge(p.mrA, 0, SIZE);
            sendB = new SendRequest(1, auto).opcode(SendOpcode.SEND).signaled(true).sge(p.mrB, 0, SIZE);
            recvA = new ReceiveRequest(1, auto).id(2).sge(p.mrA, RECV, SIZE);
            recvB = new ReceiveRequest(1, auto).id(2).sge(p.mrB, RECV, SIZE);
            wc = new WorkCompletions(4);
            p.a.postReceive(recvA);
            p.b.postReceive(recvB);
            running = true;
            Runnable loop = () -> {
                WorkCompletions mine = new WorkCompletions(4);
                try {
                    while (true) {
                        awaitReceive(p.cqB, mine, () -> running);
                        if (!running) {
                            return;
                        }
                        p.b.postReceive(recvB);
                        p.b.postSend(sendB);
                    }
                } catch (Throwable e) {
                    echoFailed = e;
                }
            };
            echo = virtual ? Thread.ofVirtual().name("echo").start(loop) : Thread.ofPlatform().name("echo").start(loop);
        }

        void roundTrip() {
            p.a.postSend(sendA);
            awaitReceive(p.cqA, wc);
            p.a.postReceive(recvA);
        }

        @TearDown(Level.Trial)
        public void close() throws InterruptedException {
            running = false;
            p.a.postSend(sendA); // wakes the echo, which answers no more
            echo.join(TIMEOUT.toMillis());
            p.close();
            if (echoFailed != null) {
                throw new IllegalStateException("the echo thread failed", echoFailed);
            }
        }
    }

    @State(Scope.Thread)
    public static class Platform extends Echoed {
        @Setup(Level.Trial)
        public void open() {
            open(false);
        }
    }

    @State(Scope.Thread)
    public static class Virtual extends Echoed {
        @Setup(Level.Trial)
        public void open() {
            open(true);
        }
    }

    @State(Scope.Thread)
    public static class Native {
        C.Pair pair;
        MemorySegment echo;

        @Setup(Level.Trial)
        public void open() throws Throwable {
            pair = C.Pair.withEvents(Rdma.DEVICE, 1 << 16);
            echo = (MemorySegment) C.ECHO_START.invokeExact(pair.pair, SIZE);
            if (echo.address() == 0) {
                throw new IllegalStateException("pvb_event_echo_start failed");
            }
        }

        @TearDown(Level.Trial)
        public void close() throws Throwable {
            int rc = (int) C.ECHO_STOP.invokeExact(echo);
            pair.close();
            C.check("pvb_event_echo_stop", rc);
        }
    }

    /** Waits through {@code cq}'s channel until a receive completes; send completions met on the way are consumed. */
    static void awaitReceive(CompletionQueue cq, WorkCompletions wc) {
        awaitReceive(cq, wc, () -> false);
    }

    /**
     * As {@link #awaitReceive(CompletionQueue, WorkCompletions)}, waiting on past a timeout while
     * {@code patient} says so (the echo between JMH's iterations).
     */
    static void awaitReceive(CompletionQueue cq, WorkCompletions wc, java.util.function.BooleanSupplier patient) {
        int n;
        while (!ApiPair.sawReceive(wc, n = cq.await(wc, TIMEOUT))) {
            if (n == 0 && !patient.getAsBoolean()) {
                throw new IllegalStateException("no completion in " + TIMEOUT);
            }
        }
    }

    @Benchmark
    public void send(Platform s) {
        s.roundTrip();
    }

    @Benchmark
    @OperationsPerInvocation(ROUNDS)
    public void sendVirtual(Virtual s) throws InterruptedException {
        Throwable[] failed = new Throwable[1];
        Thread t = Thread.ofVirtual().start(() -> {
            try {
                for (int i = 0; i < ROUNDS; i++) {
                    s.roundTrip();
                }
            } catch (Throwable e) {
                failed[0] = e;
            }
        });
        t.join();
        if (failed[0] != null) {
            throw new IllegalStateException("the virtual thread's round trips failed", failed[0]);
        }
    }

    @Benchmark
    @OperationsPerInvocation(ROUNDS)
    public long c(Native s) throws Throwable {
        return C.check("pvb_pingpong_event", (long) C.PINGPONG_EVENT.invokeExact(s.echo, (long) ROUNDS));
    }
}
