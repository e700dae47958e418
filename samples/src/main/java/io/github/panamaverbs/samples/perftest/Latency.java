package io.github.panamaverbs.samples.perftest;

import io.github.panamaverbs.samples.common.Common;
import io.github.panamaverbs.samples.common.Options;
import io.github.panamaverbs.samples.common.Resources;
import io.github.panamaverbs.samples.common.SampleException;
import io.github.panamaverbs.verbs.AccessFlag;
import io.github.panamaverbs.verbs.AddressHandle;
import io.github.panamaverbs.verbs.CompletionQueue;
import io.github.panamaverbs.verbs.ConnectOptions;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.MemoryRegion;
import io.github.panamaverbs.verbs.Mtu;
import io.github.panamaverbs.verbs.PortAttributes;
import io.github.panamaverbs.verbs.ProtectionDomain;
import io.github.panamaverbs.verbs.QpType;
import io.github.panamaverbs.verbs.QpInitAttributes;
import io.github.panamaverbs.verbs.QueuePair;
import io.github.panamaverbs.verbs.ReceiveRequest;
import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.TransportType;
import io.github.panamaverbs.verbs.VerbsException;
import io.github.panamaverbs.verbs.WcStatus;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Locale;
import java.util.function.Function;

/**
 * {@code write-lat}, {@code read-lat}, {@code atomic-lat}, {@code send-lat}: perftest's
 * {@code ib_write_lat}, {@code ib_read_lat}, {@code ib_atomic_lat} and {@code ib_send_lat} on one RC
 * queue pair (UC too for writes and sends, UD for sends), with perftest's flags that matter, its
 * banner and result table, and its statistics: one sample per iteration, the time between two
 * successive posts (a full round trip), divided by 2 for writes and sends and by 1 for reads and
 * atomics; the top 2 samples dropped; t_typical the median; percentiles at {@code ceil(n * 0.99)}
 * of the sorted samples.
 *
 * <p>{@code write-lat} is a ping-pong of RDMA writes: each side writes {@code -s} bytes into the
 * peer's buffer, whose last byte carries the iteration number, and spins on the last byte of its
 * own receive buffer (an acquire read) until the peer's next write lands. {@code read-lat} and
 * {@code atomic-lat} have the client read from (or fetch-and-add 1 on) the server's buffer and wait
 * for each completion; the server only waits; atomic-lat checks that each fetch returns the
 * previous one plus 1. {@code send-lat} is a ping-pong of sends: both sides keep receives posted,
 * the client sends, the server answers each receive with a send, and the client waits for that
 * answer's receive completion before its next send; each receive must hold the size sent. Over UD
 * ({@code -c UD}) the sends go through an address handle made from the peer's LID and GID, with
 * perftest's Q_Key 0x11111111, every receive has 40 bytes more for the GRH, and a message may not
 * exceed the MTU: {@code -s} above it is an error, the default size and {@code -a} stop at it.
 *
 * <p>The two sides talk over {@link PerftestLink} exactly as perftest 4.5-0.17 (version "6.06")
 * does, so either side may be perftest's own binary: the version strings, page and cache line
 * sizes and MTUs (the smaller MTU wins; the default is the port's active MTU), then perftest's
 * per-QP message ({@code KEY_PRINT_FMT_GID}: LID, outstanding reads, QPN, PSN, rkey, address, GID,
 * SRQN) as many times and in the same places as the C tool sends it, a hand-shake before each size
 * of send-lat, and perftest's close (a last hand-shake and "done"; write-lat has none). The Java
 * tools have no data path of their own beyond perftest's: a Java side and a C side measure the same
 * thing.
 *
 * <p>With {@code -R} ({@code --rdma_cm}) the queue pair is connected with rdma_cm, and the
 * control channel is an rdma_cm connection too ({@link PerftestCm}), as perftest's {@code -R}:
 * the same messages, then a hand-shake of zeros before and after the test queue pair's connection,
 * which replaces the QPN/PSN connect; the only way on iWARP (SoftiWARP). RC only (perftest refuses
 * UC with -R; UD over rdma_cm is not done here).
 */
public final class Latency extends PerftestTool<Latency.Verb> {
    /** The tools: {@code write-lat} (ib_write_lat) and so on; their title; the RTT divisor; the default size. */
    enum Verb {
        WRITE("RDMA_Write", 2, 2), READ("RDMA_Read", 1, 2), ATOMIC("Atomic", 1, 8), SEND("Send", 2, 2);

        final String title;
        final int rttFactor;
        final int defaultSize;

        Verb(String title, int rttFactor, int defaultSize) {
            this.title = title;
            this.rttFactor = rttFactor;
            this.defaultSize = defaultSize;
        }
    }

    private static final int LAT_MEASURE_TAIL = 2;
    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();

    /** Receives each side of send-lat keeps posted (each completion posts one again). */
    private static final int RX_DEPTH = 16;
    /** Outstanding reads and atomics each way, for read-lat and atomic-lat. */
    private static final int READ_DEPTH = 16;
    /** perftest's ATOMIC_ADD_VALUE. */
    private static final long ATOMIC_ADD = 1;

    /** {@code write-lat}: runs it with {@code args}, printing on {@code out}; returns the exit status. */
    public static int write(String[] args, PrintStream out) {
        return new Latency(Verb.WRITE).run(args, out);
    }

    /** {@code read-lat}: runs it with {@code args}, printing on {@code out}; returns the exit status. */
    public static int read(String[] args, PrintStream out) {
        return new Latency(Verb.READ).run(args, out);
    }

    /** {@code atomic-lat}: runs it with {@code args}, printing on {@code out}; returns the exit status. */
    public static int atomic(String[] args, PrintStream out) {
        return new Latency(Verb.ATOMIC).run(args, out);
    }

    /** {@code send-lat}: runs it with {@code args}, printing on {@code out}; returns the exit status. */
    public static int send(String[] args, PrintStream out) {
        return new Latency(Verb.SEND).run(args, out);
    }

    /** A fresh tool for each run: it keeps its flags. */
    private Latency(Verb verb) {
        super(verb, "-lat");
    }

    @Override
    boolean parse(String[] args, PrintStream out) {
        Options o = options("path MTU (default: the port's active MTU; the smaller of both sides' is used)")
                .value('s', "size", "size", "size of message to exchange (default " + verb.defaultSize + ")")
                .flag('a', "all", "run sizes from 2 till 2^23")
                .value('n', "iters", "iters", "number of exchanges (at least 5, default 1000)")
                .flag('R', "rdma_cm", "connect QPs with rdma_cm and run test on those QPs (the control channel too)");
        if (verb == Verb.WRITE || verb == Verb.SEND) {
            o.value('I', "inline_size", "size", "max size of message to be sent inline (default " + defaultInline()
                    + (verb == Verb.SEND ? ", 188 on UD" : "") + ")")
                    .value('c', "connection", "type", verb == Verb.SEND ? "connection type RC, UC or UD (default RC)"
                            : "connection type RC or UC (default RC)");
        }
        if (!parseCommon(lastOptions(o), args, out, verb.defaultSize, 1000)) {
            return false;
        }
        if (verb == Verb.ATOMIC && size != 8) {
            throw new Options.UsageException("atomic operations are 8 bytes: --size must be 8");
        }
        if (verb == Verb.ATOMIC && all) {
            throw new Options.UsageException("--all is not available for atomics");
        }
        type = connection(o, verb == Verb.SEND, "UD is for send-lat only", "RC, UC or UD");
        inline = o.integer("inline_size", defaultInline(), 0, type == QpType.UD ? MAX_INLINE_UD : 4096);
        inlineGiven = o.has("inline_size");
        rdmaCm = o.has("rdma_cm");
        if (rdmaCm && type == QpType.UC) {
            throw new Options.UsageException("UC is not supported in librdmacm (-R)");
        }
        if (rdmaCm && type == QpType.UD) {
            throw new Options.UsageException("-R with UD is not supported here: use RC");
        }
        return true;
    }

    /** Whether -I was given: if not, a device that refuses the default inline size gets 0 (perftest's default on devices it does not know, rxe and siw among them). */
    private boolean inlineGiven;

    /** perftest's MAX_INLINE_UD. */
    private static final int MAX_INLINE_UD = 884;

    /** perftest's DEF_INLINE_WRITE (220), DEF_INLINE_SEND_RC_UC (236) and DEF_INLINE_SEND_UD (188). */
    private int defaultInline() {
        return switch (verb) {
            case WRITE -> 220;
            case SEND -> type == QpType.UD ? 188 : 236;
            default -> 0;
        };
    }

    /**
     * Everything after the MTU is agreed, in perftest's order (ctx_init, set_up_connection, the
     * hand-shakes around ctx_connect, the runs, ctx_close_connection), so that either side can be
     * perftest's binary: the hand-shakes are the same in number and place as in perftest's
     * write_lat.c, read_lat.c, atomic_lat.c and send_lat.c.
     */
    @Override
    int measureAll(Resources res, Context ctx, PortAttributes port, PerftestLink link, Mtu mtu, PrintStream out) {
        ConnectOptions co = options(mtu);
        int maxSize = maxSize(mtu);
        int lastExponent = type == QpType.UD ? Integer.numberOfTrailingZeros(mtu.bytes()) : 23;
        int outReads = verb == Verb.READ || verb == Verb.ATOMIC ? READ_DEPTH : 1;
        PerftestCm.Test cm = rdmaCm ? startRdmaCm(res, link) : null;
        Context qpContext = cm != null ? cm.arrive() : ctx;   // with -R, librdmacm's context: the QP's resources go there
        ProtectionDomain pd = res.add(qpContext.allocateProtectionDomain());
        EnumSet<AccessFlag> access = EnumSet.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_WRITE, AccessFlag.REMOTE_READ);
        if (verb == Verb.ATOMIC) {
            access.add(AccessFlag.REMOTE_ATOMIC);
        }
        Buffers b = buffers(res, qpContext, pd, maxSize, access, 0);
        MemoryRegion mr = b.mr();
        CompletionQueue cq = b.cq();
        CompletionQueue rcq = b.rcq();
        ReceiveRequest recv = b.recv();
        QueuePair qp;
        if (rdmaCm) {
            PerftestCm.Test test = cm;
            res.add((AutoCloseable) test::disconnect);   // before the resources above close: it closes the QP
            qp = test.connect(verb == Verb.READ || verb == Verb.ATOMIC ? READ_DEPTH : 0, id -> {
                drain(cq);   // a refused attempt's flushed receives
                drain(rcq);
                QueuePair q = createQueuePair(cq, rcq, init -> id.createQueuePair(pd, init));
                postReceives(q, recv);
                return q;
            });
            link.handShake(PerftestLink.Key.NONE);
        } else {
            qp = res.add(createQueuePair(cq, rcq, pd::createQueuePair));
            activate(qp, co);
            postReceives(qp, recv);
        }
        warmUp(qpContext, pd, mtu, access, all ? 2 : size);
        printBanner(out, ctx, port, mtu);
        PerftestLink.Key me = new PerftestLink.Key(qp.localEndpoint(co), outReads, mr.rkey(),
                mr.address() + maxSize);
        PerftestLink.Key p = link.handShake(me);
        if (verb != Verb.SEND) {
            p = link.handShake(me);   // perftest: once for all QPs, then once per QP
        }
        SendRequest udSend = null;
        AddressHandle ah = rdmaCm ? null : connect(res, pd, qp, co, p);   // rdma_cm connected it
        if (ah != null) {
            udSend = new SendRequest(1).datagram(ah, p.qpn(), Common.QKEY);
        }
        if (verb == Verb.SEND) {
            link.handShake(me);
        }
        printAddress(out, "local", me);
        p = link.handShake(me);
        printAddress(out, "remote", p);
        if (verb != Verb.SEND) {
            link.handShake(me);   // "an additional handshake is required after moving qp to RTR"
        }
        boolean passive = server == null && (verb == Verb.READ || verb == Verb.ATOMIC);
        if (passive) {
            // The client reads (or adds) for as long as it measures; its ctx_close_connection is
            // what ends the wait, or its death, which closes the socket.
            link.untimed();
            link.closeConnection(me);
            if (cm != null) {
                cm.disconnect();
            }
            out.println(LINE);
            out.flush();
            return 0;
        }
        out.println(LINE);
        out.println(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ");
        out.flush();
        StringBuilder json = new StringBuilder();
        for (int e = all ? 1 : -1; e < (all ? lastExponent + 1 : 0); e++) {
            int n = all ? 1 << e : size;
            long[] posted;
            if (verb == Verb.SEND) {
                link.handShake(me);   // the peer's receives for this size are posted
                posted = measureSend(qp, cq, rcq, recv, udSend, mr, n, server == null, iters);
            } else {
                posted = measure(qp, cq, mr, maxSize, n, p, server == null, iters);
            }
            report(out, json, n, posted);
            out.flush();
        }
        out.println(LINE);
        out.flush();
        if (verb != Verb.WRITE) {
            link.closeConnection(me);   // write_lat has none: each side's last write was acknowledged
        }
        if (cm != null) {
            cm.disconnect();   // as perftest: the test connection ends before the control connection
        }
        writeJson(verb.title + " Latency", json);
        return 0;
    }

    /** The connection options of this tool's queue pairs: one outstanding read or atomic unless it reads. */
    private ConnectOptions options(Mtu mtu) {
        return connectOptions(mtu).readAtomicDepth(verb == Verb.WRITE || verb == Verb.SEND ? 1 : READ_DEPTH);
    }

    /** The registered buffer, completion queues and receive request of a run on messages of up to {@code n} bytes. */
    private record Buffers(MemoryRegion mr, CompletionQueue cq, CompletionQueue rcq, ReceiveRequest recv) {
    }

    /**
     * [0, n): what this side sends (and reads into); [n, 2n): what the peer writes, or (send-lat) where
     * receives land, after the GRH on UD; then {@code tail} spare bytes.
     */
    private Buffers buffers(Resources res, Context ctx, ProtectionDomain pd, int n, EnumSet<AccessFlag> access, int tail) {
        int grh = type == QpType.UD ? Common.GRH_BYTES : 0;
        Arena arena = res.add(Arena.ofShared());
        MemoryRegion mr = res.add(pd.register(arena, arena.allocate(2L * n + grh + tail, 4096), access));
        CompletionQueue cq = res.add(ctx.createCompletionQueue(16));
        CompletionQueue rcq = verb == Verb.SEND ? res.add(ctx.createCompletionQueue(RX_DEPTH)) : cq;
        return new Buffers(mr, cq, rcq, new ReceiveRequest(1).id(2).sge(mr, n, n + grh));
    }

    /** Iterations of one warm-up round. */
    private static final int WARM_UP_ROUND = 500;

    /**
     * Runs this tool's own loop ({@link Run#step()}, {@link SendRun#step()}) on a second queue pair
     * of the same device connected to itself, in rounds of {@link #WARM_UP_ROUND} iterations until
     * the JIT has compiled it ({@link Common#untilCompiled}), before this side's first message to
     * the peer, which waits for it as for any slower start: nothing of this reaches the wire. Not on
     * iWARP, whose queue pairs connect only through rdma_cm.
     */
    private void warmUp(Context ctx, ProtectionDomain pd, Mtu mtu, EnumSet<AccessFlag> access, int n) {
        if (!Common.warmUp() || ctx.device().transport() == TransportType.IWARP) {
            return;
        }
        ConnectOptions co = options(mtu);
        int gid = Common.loopbackGidIndex(ctx, ibPort, co.gidIndex());   // -R on RoCE: no -x, rdma_cm chose the GID
        if (gid >= 0) {
            co.gidIndex(gid);
        }
        try (Resources w = new Resources()) {
            Buffers b = buffers(w, ctx, pd, n, access, 8);
            MemoryRegion mr = b.mr();
            CompletionQueue cq = b.cq();
            CompletionQueue rcq = b.rcq();
            ReceiveRequest recv = b.recv();
            QueuePair qp = w.add(createQueuePair(cq, rcq, pd::createQueuePair));
            activate(qp, co);
            postReceives(qp, recv);
            PerftestLink.Key self = new PerftestLink.Key(qp.localEndpoint(co), READ_DEPTH, mr.rkey(), mr.address() + n);
            AddressHandle ah = connect(w, pd, qp, co, self);
            SendRequest udSend = ah != null ? new SendRequest(1).datagram(ah, self.qpn(), Common.QKEY) : null;
            Common.untilCompiled(() -> {
                if (verb == Verb.SEND) {
                    measureSend(qp, cq, rcq, recv, udSend, mr, n, false, WARM_UP_ROUND);
                } else {
                    measure(qp, cq, mr, n, n, self, true, WARM_UP_ROUND);
                }
            }, timeout);
        } catch (RuntimeException e) {
            // Only a warm-up: the measurement runs without it, and says so.
            System.err.println(tool + ": warning: the warm-up on a queue pair connected to itself failed, measuring without it: "
                    + e.getMessage());
        }
    }

    /**
     * The queue pair ({@code create} given its attributes). If the device refuses the default
     * inline size (SoftiWARP takes less than perftest's 220 and 236), inline sends are off, as
     * perftest has them on devices it does not know.
     */
    private QueuePair createQueuePair(CompletionQueue cq, CompletionQueue rcq, Function<QpInitAttributes, QueuePair> create) {
        try {
            return create.apply(init(cq, rcq));
        } catch (VerbsException e) {
            if (!inlineGiven && inline > 0) {
                inline = 0;
                try {
                    return create.apply(init(cq, rcq));
                } catch (VerbsException again) {
                    e.addSuppressed(again);
                }
            }
            throw new SampleException("Couldn't create QP with " + inline + " bytes of inline data (try -I 0): "
                    + e.getMessage());
        }
    }

    private QpInitAttributes init(CompletionQueue cq, CompletionQueue rcq) {
        return new QpInitAttributes(type, cq, rcq).maxSendWr(16).maxRecvWr(verb == Verb.SEND ? RX_DEPTH : 1)
                .maxInlineData(inline);
    }

    /** send-lat's receives, before the peer learns of this QP: its first send finds one (iWARP has no RNR retry). */
    private void postReceives(QueuePair qp, ReceiveRequest recv) {
        if (verb == Verb.SEND) {
            for (int i = 0; i < RX_DEPTH; i++) {
                qp.postReceive(recv);
            }
        }
    }


    /** One size: returns the post times. */
    private long[] measure(QueuePair qp, CompletionQueue cq, MemoryRegion mr, int maxSize, int n, PerftestLink.Key peer,
            boolean isServer, int iters) {
        try (QueuePair.Confined q = qp.confined(); CompletionQueue.Confined c = cq.confined()) {   // the fast form
            Run run = new Run(q, c, mr, maxSize, n, peer, iters);
            if (isServer) {
                run.postAndPoll();   // perftest's server starts with a post; then both sides wait for the peer first
            }
            while (run.more()) {
                run.step();
            }
            return run.posted;
        }
    }

    /**
     * One size of write-lat, read-lat or atomic-lat, as perftest's run_iter_lat_write and
     * run_iter_lat: the loop's state, and one iteration of it per {@link #step()}. A step is a method
     * of its own so that the JIT compiles it as it compiles any method called often, whichever loop
     * calls it: {@link #warmUp}'s, then the measured one.
     */
    private final class Run {
        final QueuePair.Confined qp;
        final CompletionQueue.Confined cq;
        final MemorySegment buf;
        final SendRequest wr = new SendRequest(1).id(1).signaled(true);
        final WorkCompletions wc = new WorkCompletions(1);
        final long[] posted;
        final int iters;
        final long postAt;
        final long pollAt;
        final long timeoutNanos = timeout.toNanos();
        long lastFetched;
        int scnt;
        int rcnt;
        int ccnt;

        Run(QueuePair.Confined qp, CompletionQueue.Confined cq, MemoryRegion mr, int maxSize, int n, PerftestLink.Key peer, int iters) {
            this.qp = qp;
            this.cq = cq;
            this.buf = mr.segment();
            this.iters = iters;
            this.posted = new long[iters];
            this.postAt = n - 1;
            this.pollAt = maxSize + n - 1L;
            switch (verb) {
                case WRITE -> wr.opcode(SendOpcode.RDMA_WRITE).sge(mr, 0, n).rdma(peer.vaddr(), peer.rkey()).inline(n <= inline);
                case READ -> wr.opcode(SendOpcode.RDMA_READ).sge(mr, 0, n).rdma(peer.vaddr(), peer.rkey());
                case ATOMIC -> wr.opcode(SendOpcode.ATOMIC_FETCH_AND_ADD).sge(mr, 0, 8).atomic(peer.vaddr(), peer.rkey(), 1, 0);
                case SEND -> throw new IllegalStateException("send-lat measures in measureSend");
            }
        }

        boolean more() {
            return scnt < iters || ccnt < iters || (verb == Verb.WRITE && rcnt < iters);
        }

        /**
         * One iteration: the wait for the peer's write (write-lat), then {@link #postAndPoll()}. No
         * branch depends on the side's role, so that the code the warm-up compiled in one role runs
         * unchanged in the other (a branch never taken while compiling makes the JIT throw the code away
         * when it is first taken, and compile again while the peer's clock runs).
         */
        void step() {
            if (verb == Verb.WRITE && rcnt < iters) {
                rcnt++;
                byte want = (byte) rcnt;
                long since = System.nanoTime();
                int spins = 0;
                while ((byte) BYTE.getAcquire(buf, pollAt) != want) {
                    if (++spins == 1 << 8) {   // often enough that the warm-up takes this branch too
                        spins = 0;
                        if (System.nanoTime() - since > timeoutNanos) {
                            throw silent(scnt, rcnt - 1);
                        }
                        Thread.onSpinWait();
                    }
                }
            }
            postAndPoll();
        }

        /** The post of this iteration's request and the wait for its completion. */
        void postAndPoll() {
            if (scnt < iters) {
                posted[scnt] = System.nanoTime();
                if (verb == Verb.WRITE) {
                    buf.set(ValueLayout.JAVA_BYTE, postAt, (byte) ++scnt);
                } else {
                    scnt++;
                }
                qp.postSend(wr);
            }
            if (ccnt < iters) {
                awaitOne(cq, wc, verb.title, scnt, rcnt);
                ccnt++;
                if (verb == Verb.ATOMIC) {
                    // Only this side adds to the peer's word: each fetch returns the previous one plus 1.
                    long fetched = buf.get(ValueLayout.JAVA_LONG, 0);
                    if (ccnt > 1 && fetched != lastFetched + ATOMIC_ADD) {
                        throw new SampleException("fetch-and-add " + ccnt + " returned " + fetched + " after "
                                + lastFetched + ": the peer's word did not grow by " + ATOMIC_ADD);
                    }
                    lastFetched = fetched;
                }
            }
        }
    }

    /**
     * One size of send-lat, as perftest's run_iter_lat_send: the client sends, the server waits for
     * that receive and sends back, the client waits for the answer; every receive completion posts
     * a receive again, and must hold {@code n} bytes (and the GRH on UD). Returns the post times of
     * this side's sends. {@code ud} is the request that carries the peer's address handle, QPN and
     * Q_Key on UD, else null.
     */
    private long[] measureSend(QueuePair qp, CompletionQueue scq, CompletionQueue rcq, ReceiveRequest recv,
            SendRequest ud, MemoryRegion mr, int n, boolean isServer, int iters) {
        try (QueuePair.Confined q = qp.confined(); CompletionQueue.Confined s = scq.confined();   // the fast form
             CompletionQueue.Confined r = rcq.confined()) {
            SendRun run = new SendRun(q, s, r, recv, ud, mr, n, iters);
            if (!isServer) {
                run.sendAndReap();   // perftest's client starts with a send; then both sides wait for a receive first
            }
            while (run.scnt < iters || run.rcnt < iters) {
                run.step();
            }
            long since = System.nanoTime();
            while (run.ccnt < iters) {
                run.ccnt += reapSends(s, run.swc, run.scnt, run.rcnt);
                if (System.nanoTime() - since > timeout.toNanos()) {
                    throw silent(run.scnt, run.rcnt);
                }
            }
            return run.posted;
        }
    }

    /** send-lat's loop state, and one iteration per {@link #step()} (see {@link Run}). */
    private final class SendRun {
        final QueuePair.Confined qp;
        final CompletionQueue.Confined scq;
        final CompletionQueue.Confined rcq;
        final ReceiveRequest recv;
        final SendRequest wr;
        final int expectBytes;
        final int n;
        final boolean ud;
        final WorkCompletions wc = new WorkCompletions(1);
        final WorkCompletions swc = new WorkCompletions(8);
        final long[] posted;
        final int iters;
        int scnt;
        int rcnt;
        int ccnt;

        SendRun(QueuePair.Confined qp, CompletionQueue.Confined scq, CompletionQueue.Confined rcq, ReceiveRequest recv, SendRequest ud,
                MemoryRegion mr, int n, int iters) {
            this.qp = qp;
            this.scq = scq;
            this.rcq = rcq;
            this.recv = recv;
            this.wr = (ud != null ? ud : new SendRequest(1)).id(1).signaled(true).opcode(SendOpcode.SEND)
                    .sge(mr, 0, n).inline(n <= inline);
            this.n = n;
            this.ud = ud != null;
            this.expectBytes = n + (ud != null ? Common.GRH_BYTES : 0);
            this.posted = new long[iters];
            this.iters = iters;
        }

        /** One iteration: the wait for the peer's message, then {@link #sendAndReap()}; as {@link Run#step()}, the same in either role. */
        void step() {
            if (rcnt < iters) {
                awaitOne(rcq, wc, "receive", scnt, rcnt);
                if (wc.byteLength(0) != expectBytes) {
                    throw new SampleException("receive " + (rcnt + 1) + " holds " + wc.byteLength(0) + " bytes, not "
                            + expectBytes + (ud ? " (" + n + " and the GRH)" : "") + ": is the peer's size " + n + "?");
                }
                rcnt++;
                qp.postReceive(recv);
            }
            sendAndReap();
        }

        /** This iteration's send, and the send completions there are. */
        void sendAndReap() {
            if (scnt < iters) {
                while (scnt - ccnt >= 8) {   // the send queue holds 16: reap before it fills
                    ccnt += reapSends(scq, swc, scnt, rcnt);
                }
                posted[scnt++] = System.nanoTime();
                qp.postSend(wr);
            }
            ccnt += reapSends(scq, swc, scnt, rcnt);
        }
    }

    /**
     * Spins until {@code cq} gives a completion into {@code wc} (capacity 1) and checks its status;
     * a peer silent for the timeout is gone.
     */
    private void awaitOne(CompletionQueue.Confined cq, WorkCompletions wc, String what, int scnt, int rcnt) {
        long since = System.nanoTime();
        int spins = 0;
        while (cq.poll(wc) == 0) {
            if (++spins == 1 << 6) {   // often enough that the warm-up takes this branch too
                spins = 0;
                if (System.nanoTime() - since > timeout.toNanos()) {
                    throw silent(scnt, rcnt);
                }
            }
        }
        checkCompletion(wc, what, scnt, rcnt);
    }

    private int reapSends(CompletionQueue.Confined scq, WorkCompletions swc, int scnt, int rcnt) {
        int got = scq.poll(swc);
        for (int i = 0; i < got; i++) {
            if (swc.status(i) != WcStatus.SUCCESS) {
                checkCompletion(swc, "send", scnt, rcnt);
            }
        }
        return got;
    }

    private static void checkCompletion(WorkCompletions wc, String what, int scnt, int rcnt) {
        for (int i = 0; i < wc.count(); i++) {
            if (wc.status(i) != WcStatus.SUCCESS) {
                throw new SampleException(String.format("Completion with error on %s: status %s (%d), vendor error 0x%x, "
                        + "scnt=%d, rcnt=%d", what, wc.status(i).description(), wc.status(i).value(), wc.vendorError(i),
                        scnt, rcnt) + gone(wc.status(i)));
            }
        }
    }

    /** What an error status says about the peer: no acknowledgement (retries exhausted) means it is gone. */
    private static String gone(WcStatus status) {
        return status == WcStatus.RETRY_EXC_ERR || status == WcStatus.RNR_RETRY_EXC_ERR
                ? ": the peer does not answer: the peer is gone (or the path to it is down)" : "";
    }

    private SampleException silent(int scnt, int rcnt) {
        return new SampleException("nothing from the peer for " + timeout.toSeconds() + " s after " + scnt + " posts and "
                + rcnt + " receipts of " + iters + ": the peer is gone (see --timeout)");
    }

    /** print_report_lat: the statistics exactly as perftest computes them, in microseconds. */
    private void report(PrintStream out, StringBuilder json, int n, long[] posted) {
        trace(n, posted);
        Stats s = Stats.of(posted, verb.rttFactor);
        out.printf(Locale.ROOT, " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f%n",
                n, iters, s.min, s.max, s.typical, s.avg, s.stdev, s.p99, s.p999);
        json.append(json.isEmpty() ? "" : ",\n").append(String.format(Locale.ROOT,
                "{\"MsgSize\": %d, \"n_iterations\": %d, \"t_min\": %.2f, \"t_max\": %.2f, \"t_typical\": %.2f, "
                        + "\"t_avg\": %.2f, \"t_stdev\": %.2f, \"percentile_99\": %.2f, \"percentile_99.9\": %.2f}",
                n, iters, s.min, s.max, s.typical, s.avg, s.stdev, s.p99, s.p999));
    }

    /**
     * With {@code -Dpanamaverbs.samples.trace=FILE}: each iteration's size, number, time (ns between
     * successive posts) and post time ({@link System#nanoTime()}, the clock of -Xlog's {@code timenanos}),
     * a line each, in the order they happened, appended to FILE; for finding where a run's
     * time goes (the first iterations against the last), not part of perftest's output.
     */
    private static void trace(int n, long[] posted) {
        String file = System.getProperty("panamaverbs.samples.trace");
        if (file == null) {
            return;
        }
        StringBuilder b = new StringBuilder();
        for (int i = 1; i < posted.length; i++) {
            b.append(n).append(' ').append(i).append(' ').append(posted[i] - posted[i - 1]).append(' ').append(posted[i])
                    .append('\n');
        }
        try {
            java.nio.file.Files.writeString(java.nio.file.Path.of(file), b, java.nio.file.StandardOpenOption.CREATE,
                    java.nio.file.StandardOpenOption.APPEND);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** perftest's latency figures, in microseconds. */
    record Stats(double min, double max, double typical, double avg, double stdev, double p99, double p999) {
        /**
         * From the post times of each iteration (nanoseconds): {@code iters - 1} deltas, sorted, the top
         * {@link #LAT_MEASURE_TAIL} dropped; the median as perftest's get_median (integer mean of the two
         * middle samples for an even count); the standard deviation with perftest's integer truncation.
         */
        static Stats of(long[] posted, int rttFactor) {
            int cnt = posted.length - 1;
            long[] delta = new long[cnt];
            for (int i = 0; i < cnt; i++) {
                delta[i] = posted[i + 1] - posted[i];
            }
            Arrays.sort(delta);
            cnt -= LAT_MEASURE_TAIL;
            double q = 1000.0 * rttFactor;
            long median = (cnt - 1) % 2 != 0 ? (delta[cnt / 2] + delta[cnt / 2 - 1]) / 2 : delta[cnt / 2];
            double sum = 0;
            for (int i = 0; i < cnt; i++) {
                sum += delta[i] / q;
            }
            double avg = sum / cnt;
            double var = 0;
            for (int i = 0; i < cnt; i++) {
                int t = (int) (avg - delta[i] / q);
                var += (int) Math.pow(t, 2);
            }
            int i99 = (int) Math.ceil(cnt * 0.99);
            int i999 = (int) Math.ceil(cnt * 0.999);
            return new Stats(delta[0] / q, delta[cnt] / q, median / q, avg, Math.sqrt(var / cnt), delta[i99] / q, delta[i999] / q);
        }
    }

    private void printBanner(PrintStream out, Context ctx, PortAttributes port, Mtu mtu) {
        printBannerHead(out, ctx, verb.title + " Latency Test");
        if (server != null) {
            out.println(" TX depth        : 1");
        }
        if (verb == Verb.SEND && server == null) {
            out.println(" RX depth        : " + RX_DEPTH);
        }
        printBannerLink(out, port, mtu);
        if (verb == Verb.WRITE || verb == Verb.SEND) {
            out.printf(" Max inline data : %d[B]%n", inline);
        } else {
            out.println(" Outstand reads  : " + READ_DEPTH);
        }
        printBannerTail(out, rdmaCm);
    }

    /**
     * ctx_print_pingpong_data: OUT for read-lat, RKey and VAddr for write-lat and read-lat; neither
     * with -R (perftest prints them as its control connection's verb, SEND, wants).
     */
    private void printAddress(PrintStream out, String side, PerftestLink.Key k) {
        printAddress(out, side, k, !rdmaCm && verb == Verb.READ, !rdmaCm && verb != Verb.ATOMIC && verb != Verb.SEND);
    }
}
