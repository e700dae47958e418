package io.github.panamaverbs.jmh;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.github.panamaverbs.verbs.ReceiveRequest;
import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * RC ping-pong between two queue pairs, one thread playing both sides: one operation is a round
 * trip (half of it is what {@code ib_write_lat} / {@code ib_send_lat} report).
 * <ul>
 * <li>{@code write}: a writes {@code size} bytes into b's buffer, b spins on the last byte, then b
 *     writes back and a spins, as {@code ib_write_lat} does; each side's send completion is polled
 *     after the spin.</li>
 * <li>{@code send}: a sends, b polls its receive and reposts it, b sends back, a polls.</li>
 * </ul>
 * The typed API in {@code SampleTime} (percentiles of single round trips). The same loops in C
 * ({@code pvb_pingpong_*}) are timed per round trip in C by {@link BenchMain} through
 * {@link C#pingPongTimes} (no JMH fork per size: a fork costs ~30 s in the TCG VM).
 */
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 8, time = 1)     // 4 sizes x 2 kinds: shorter than the others, so a full run fits 20 min
@Measurement(iterations = 4, time = 1)
@Fork(1)
public class PingPong {
    static final long DATA = 4096;
    static final long RECV = 8192;
    private static final VarHandle BYTE = JAVA_BYTE.varHandle();

    @State(Scope.Thread)
    public static class Api {
        @Param({"2", "64", "512", "4096"})
        int size;

        ApiPair p;
        SendRequest writeA;
        SendRequest writeB;
        SendRequest sendA;
        SendRequest sendB;
        ReceiveRequest recvA;
        ReceiveRequest recvB;
        WorkCompletions wc;
        MemorySegment bufA;
        MemorySegment bufB;
        byte seq;

        @Setup(Level.Trial)
        public void open() {
            p = new ApiPair(1 << 16);
            Arena auto = Arena.ofAuto();
            writeA = new SendRequest(1, auto).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(p.mrA, 0, size)
                    .rdma(p.mrB.address() + DATA, p.mrB.rkey());
            writeB = new SendRequest(1, auto).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(p.mrB, 0, size)
                    .rdma(p.mrA.address() + DATA, p.mrA.rkey());
            sendA = new SendRequest(1, auto).opcode(SendOpcode.SEND).signaled(true).sge(p.mrA, 0, size);
            sendB = new SendRequest(1, auto).opcode(SendOpcode.SEND).signaled(true).sge(p.mrB, 0, size);
            recvA = new ReceiveRequest(1, auto).id(2).sge(p.mrA, RECV, size);
            recvB = new ReceiveRequest(1, auto).id(2).sge(p.mrB, RECV, size);
            wc = new WorkCompletions(4);
            bufA = p.mrA.segment();
            bufB = p.mrB.segment();
            // one receive always posted on each side (the send benchmark consumes and reposts it;
            // the write benchmark leaves it alone)
            p.a.postReceive(recvA);
            p.b.postReceive(recvB);
        }

        @TearDown(Level.Trial)
        public void close() {
            p.close();
        }
    }

    private static void writeHalf(Api s, SendRequest write, io.github.panamaverbs.verbs.QueuePair qp,
                                  io.github.panamaverbs.verbs.CompletionQueue cq, MemorySegment src,
                                  MemorySegment dst) {
        byte seq = ++s.seq;
        int last = s.size - 1;
        src.set(JAVA_BYTE, last, seq);
        qp.postSend(write);
        while ((byte) BYTE.getAcquire(dst, DATA + last) != seq) {
            Thread.onSpinWait();
        }
        ApiPair.awaitAny(cq, s.wc);
    }

    @Benchmark
    @BenchmarkMode(Mode.SampleTime)
    public void write(Api s) {
        writeHalf(s, s.writeA, s.p.a, s.p.cqA, s.bufA, s.bufB);
        writeHalf(s, s.writeB, s.p.b, s.p.cqB, s.bufB, s.bufA);
    }

    private static void awaitReceive(io.github.panamaverbs.verbs.CompletionQueue cq, WorkCompletions wc) {
        while (!ApiPair.sawReceive(wc, cq.poll(wc))) {
            Thread.onSpinWait();
        }
    }

    @Benchmark
    @BenchmarkMode(Mode.SampleTime)
    public void send(Api s) {
        s.p.a.postSend(s.sendA);
        awaitReceive(s.p.cqB, s.wc);
        s.p.b.postReceive(s.recvB);
        s.p.b.postSend(s.sendB);
        awaitReceive(s.p.cqA, s.wc);
        s.p.a.postReceive(s.recvA);
    }
}
