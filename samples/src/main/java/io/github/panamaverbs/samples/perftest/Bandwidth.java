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
import java.nio.ByteBuffer;
import java.util.EnumSet;
import java.util.Locale;

/**
 * {@code write-bw} and {@code send-bw}: perftest's {@code ib_write_bw} and {@code ib_send_bw} on one
 * queue pair (RC or UC for writes; RC, UC or UD for sends), with perftest's flags that matter, its
 * banner, its result table and its arithmetic.
 *
 * <p>The client keeps up to {@code -t} (tx depth) work requests outstanding, posted one at a time or
 * in chains of {@code -l} (post list), and asks for a completion on every {@code -Q}th one (CQ
 * moderation: each completion stands for that many requests). Each post and each completion is
 * time-stamped ({@link System#nanoTime}); as in perftest's {@code print_report_bw}, the average
 * bandwidth is {@code size * iters} over the time from the first post to the last completion, the
 * message rate {@code iters} over that time, and the peak the best, over every pair of a post
 * {@code i} and a later completion {@code j}, of {@code (j - i + 1)} messages in that interval
 * (none above 20000 iterations, or with {@code -N}). MB are 2^20 bytes; with {@code --report_gbits}
 * the unit is 10^9 bits. Small messages go round a 4 KiB "cycle buffer" in cache-line steps, as
 * perftest's do.
 *
 * <p>{@code write-bw}'s server only waits; at the end it receives the client's figures and prints
 * them, as perftest's does. {@code send-bw}'s server keeps {@code -r} receives posted (for UC and UD
 * as many as the iterations, so that nothing is dropped), reposts one per completion, and prints its
 * own figures: from its first receive to its last, with no peak (0.00), as perftest's does.
 *
 * <p>Data check: the client fills each buffer slot with a pattern that names the slot. The
 * {@code write-bw} server checks, after the client's last hand-shake, that every slot of its buffer
 * was written with exactly the client's bytes (slot 0 at least); the {@code send-bw} server checks
 * the length of every receive and the bytes of the last one. Bytes that are not this pattern at
 * all come from perftest's own binary (it sends random bytes): the check then says it was skipped.
 *
 * <p>The TCP side is {@link PerftestLink}, in perftest's byte sequence so that either side may be
 * perftest's binary: the preamble (versions, system data, MTU), the per-QP message at each of
 * perftest's hand-shakes, {@code write-bw}'s report exchange ({@code xchg_bw_reports}: size,
 * iterations, peak, average, message rate, each 8 bytes in network order) and the close.
 */
public final class Bandwidth extends PerftestTool<Bandwidth.Verb> {
    /** The tools: {@code write-bw} (ib_write_bw) and {@code send-bw}; their title and default iterations. */
    enum Verb {
        WRITE("RDMA_Write", 5000), SEND("Send", 1000);

        final String title;
        final int defaultIters;

        Verb(String title, int defaultIters) {
            this.title = title;
            this.defaultIters = defaultIters;
        }
    }

    /** A result line: perftest's {@code struct bw_report_data} as printed. */
    record Report(long size, long iters, double peak, double average, double msgRate) {
    }

    private static final String HEADER_MB = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
    private static final String HEADER_GB = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]";
    private static final int CYCLE_BUFFER = 4096;
    /** The work request ID of the server's credit writes (receives are numbered by slot from 0). */
    private static final long CREDIT_ID = -1L;
    private static final java.lang.invoke.VarHandle CREDIT_WORD = ValueLayout.JAVA_INT.varHandle();
    private static final int CACHE_LINE = 64;
    /** perftest's CTX_POLL_BATCH. */
    private static final int POLL_BATCH = 16;
    /** perftest's MSG_SIZE_CQ_MOD_LIMIT: above it, CQ moderation is off unless asked for. */
    private static final int CQ_MOD_SIZE_LIMIT = 8192;
    /** perftest's UC_MAX_RX: UC and UD keep at most this many receives posted by default. */
    private static final int UC_MAX_RX = 16000;
    /** Above this many iterations perftest computes no peak. */
    private static final int PEAK_ITERS_LIMIT = 20000;

    private int txDepth;
    private int rxDepth;
    private int cqMod;
    private boolean cqModAsked;
    private int postList;
    private boolean noPeak;
    private boolean gbits;

    /** {@code write-bw}: runs it with {@code args}, printing on {@code out}; returns the exit status. */
    public static int write(String[] args, PrintStream out) {
        return new Bandwidth(Verb.WRITE).run(args, out);
    }

    /** {@code send-bw}: runs it with {@code args}, printing on {@code out}; returns the exit status. */
    public static int send(String[] args, PrintStream out) {
        return new Bandwidth(Verb.SEND).run(args, out);
    }

    /** A fresh tool for each run: it keeps its flags. */
    private Bandwidth(Verb verb) {
        super(verb, "-bw");
    }

    @Override
    boolean parse(String[] args, PrintStream out) {
        Options o = options("path MTU: 256 - 4096 (default port MTU)")
                .value('c', "connection", "type", "connection type " + (verb == Verb.SEND ? "RC, UC or UD" : "RC or UC") + " (default RC)")
                .value('s', "size", "size", "size of message to exchange (default 65536; at most the MTU on UD)")
                .flag('a', "all", "run sizes from 2 till 2^23 (till the MTU on UD)")
                .value('n', "iters", "iters", "number of exchanges (at least 5, default " + verb.defaultIters + ")")
                .value('t', "tx-depth", "dep", "size of tx queue (default 128)")
                .flag('R', "rdma_cm", "connect QPs with rdma_cm and run test on those QPs (the control channel too)");
        if (verb == Verb.SEND) {
            o.value('r', "rx-depth", "dep", "rx queue size (default 512; the iterations, up to 16000, on UC and UD)");
        }
        o.value('Q', "cq-mod", "n", "generate a completion every <n> work requests (default 100; 1 above 8192 bytes)")
                .value('l', "post_list", "size", "post lists of <size> send work requests (instead of single posts)")
                .value('I', "inline_size", "size", "max size of message to be sent inline (default 0)")
                .flag('N', "noPeak", "cancel the peak bandwidth calculation (default with peak up to iters=20000)")
                .flag('\0', "report_gbits", "report bandwidth in Gb/s instead of MB/s");
        if (!parseCommon(lastOptions(o), args, out, 65536, verb.defaultIters)) {
            return false;
        }
        type = connection(o, verb == Verb.SEND, "UD connection only possible in SEND verb",
                verb == Verb.SEND ? "RC, UC or UD" : "RC or UC");
        txDepth = o.integer("tx-depth", 128, 1, 1 << 16);
        rxDepth = o.integer("rx-depth", 512, 1, 1 << 16);
        cqModAsked = o.has("cq-mod");
        cqMod = o.integer("cq-mod", 100, 1, 1024);
        postList = o.integer("post_list", 1, 1, 1 << 12);
        inline = o.integer("inline_size", 0, 0, 4096);
        noPeak = o.has("noPeak");
        gbits = o.has("report_gbits");
        rdmaCm = o.has("rdma_cm");
        if (rdmaCm && type == QpType.UC) {
            throw new Options.UsageException("UC is not supported in librdmacm (-R)");
        }
        if (rdmaCm && type == QpType.UD) {
            throw new Options.UsageException("-R with UD is not supported here: use RC");
        }
        return true;
    }

    /** perftest's force_dependecies, as far as these flags go; prints what perftest prints. */
    @Override
    void settle(PrintStream out) {
        if (txDepth > iters) {
            txDepth = iters;
        }
        if (verb == Verb.SEND && rxDepth > iters) {
            rxDepth = iters;
        }
        if (type != QpType.RC && verb == Verb.SEND && rxDepth == 512) {
            rxDepth = Math.min(iters, UC_MAX_RX);
        }
        if (size > CQ_MOD_SIZE_LIMIT && type != QpType.UD && !all) {
            if (!cqModAsked) {
                cqMod = 1;
            } else if (cqMod > 1) {
                out.println(LINE);
                out.println("Warning: Large message requested and CQ moderation enabled");
                out.println("Warning: It can lead to inaccurate results");
            }
        }
        if (cqMod > txDepth) {
            cqMod = txDepth;
        }
        if (postList > 1) {
            if (iters % postList != 0) {
                throw new Options.UsageException("Number of iterations must be a multiple of post list size");
            }
            if (!cqModAsked) {
                cqMod = postList;
                out.println(LINE);
                out.println("Post List requested - CQ moderation will be the size of the post list");
            } else if (postList % cqMod != 0) {
                throw new Options.UsageException("Post list size must be a multiple of CQ moderation");
            }
            if (postList > txDepth) {
                throw new Options.UsageException("the post list (" + postList + ") is longer than the tx depth (" + txDepth + ")");
            }
        }
        if (verb == Verb.SEND && rxDepth % 2 == 1 && !all) {
            rxDepth++;   // perftest's "WA for a bug when rx_depth is odd in SEND"
        }
        if (iters > PEAK_ITERS_LIMIT) {
            noPeak = true;
        }
    }

    /**
     * Everything after the MTU is agreed, in perftest's order (ctx_init, ctx_print_test_info, the
     * hand-shakes around ctx_connect, the runs, xchg_bw_reports, ctx_close_connection), so that either
     * side can be perftest's binary: the hand-shakes are the same in number and place as in
     * write_bw.c and send_bw.c.
     */
    @Override
    int measureAll(Resources res, Context ctx, PortAttributes port, PerftestLink link, Mtu mtu, PrintStream out) {
        boolean isServer = server == null;
        int maxSize = maxSize(mtu);
        ConnectOptions co = connectOptions(mtu);
        PerftestCm.Test cm = rdmaCm ? startRdmaCm(res, link) : null;
        Context qpContext = cm != null ? cm.arrive() : ctx;   // with -R, librdmacm's context: the QP's resources go there
        ProtectionDomain pd = res.add(qpContext.allocateProtectionDomain());
        // [0, half): what the client sends; [half, 2 half): where the server's data lands (page-aligned,
        // with room for UD's GRH in front of the last slot)
        long half = roundUp(Math.max(CYCLE_BUFFER, inc(maxSize)) + (type == QpType.UD ? CACHE_LINE : 0), 4096);
        Arena arena = res.add(Arena.ofShared());
        EnumSet<AccessFlag> access = verb == Verb.WRITE ? EnumSet.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_WRITE)
                : EnumSet.of(AccessFlag.LOCAL_WRITE);
        MemoryRegion mr = res.add(pd.register(arena, arena.allocate(2 * half, 4096), access));
        boolean receives = verb == Verb.SEND && isServer;
        // perftest's send_rcredit: iWARP has no receiver-not-ready retry, so a send-bw server tells the
        // client, with an RDMA write of its receive count every rx depth / 3 receives, how far it may send.
        boolean credits = verb == Verb.SEND && qpContext.device().transport() == TransportType.IWARP;
        CompletionQueue cq = res.add(qpContext.createCompletionQueue(receives ? rxDepth : txDepth));
        CompletionQueue creditCq = credits && receives ? res.add(qpContext.createCompletionQueue(txDepth)) : cq;
        QpInitAttributes init = new QpInitAttributes(type, creditCq, cq).maxSendWr(txDepth).maxRecvWr(receives ? rxDepth : 1)
                .maxInlineData(inline);
        QueuePair qp;
        try {
            if (rdmaCm) {
                PerftestCm.Test test = cm;
                res.add((AutoCloseable) test::disconnect);   // before the resources above close: it closes the QP
                qp = test.connect(0, id -> {
                    drain(cq);   // a refused attempt's flushed completions
                    drain(creditCq);
                    return id.createQueuePair(pd, init);
                });
                link.handShake(PerftestLink.Key.NONE);
            } else {
                qp = res.add(pd.createQueuePair(init));
                activate(qp, co);
            }
        } catch (VerbsException e) {
            throw new SampleException("Couldn't create QP (tx depth " + txDepth + ", rx depth " + rxDepth + ", "
                    + inline + " bytes of inline data): " + e.getMessage());
        }
        if (!isServer && verb == Verb.WRITE) {
            warmUp(qpContext, pd, mtu, half, access, all ? 2 : size);
        }
        printBanner(out, ctx, port, mtu, isServer);
        // ctx_alloc_credit: [0] what the server writes from, [1] where the client's credit lands
        MemoryRegion credit = credits ? res.add(pd.allocateAndRegister(8, AccessFlag.REMOTE_WRITE)) : null;
        PerftestLink.Key me = credits ? new PerftestLink.Key(qp.localEndpoint(co), 1, credit.rkey(), credit.address() + 4)
                : new PerftestLink.Key(qp.localEndpoint(co), 1, mr.rkey(), mr.address() + half);
        PerftestLink.Key peer = link.handShake(me);
        AddressHandle ah = rdmaCm ? null : connect(res, pd, qp, co, peer);   // rdma_cm connected it
        if (verb == Verb.SEND) {
            link.handShake(me);
        }
        printAddress(out, "local", me);
        peer = link.handShake(me);
        printAddress(out, "remote", peer);
        if (verb == Verb.WRITE) {
            link.handShake(me);   // "an additional handshake is required after moving qp to RTR"
        }
        out.println(LINE);
        out.println(gbits ? HEADER_GB : HEADER_MB);
        out.flush();
        Run run = new Run(qp, cq, mr, half, peer, ah, credit, creditCq, iters);
        StringBuilder json = new StringBuilder();
        if (verb == Verb.WRITE && isServer) {
            // The client writes for as long as it measures; its hand-shake ends the wait (or its death,
            // which closes the socket).
            link.untimed();
            link.handShake(me);
            Report client = exchangeReports(link, new Report(0, 0, 0, 0, 0));
            print(out, json, client);
            link.closeConnection(me);
            out.println(LINE);
            out.println(" data check: " + run.checkWrites(client));
        } else {
            Report last = null;
            String check = null;
            int lastExp = all ? Integer.numberOfTrailingZeros(maxSize) : 0;
            for (int e = all ? 1 : 0; e <= lastExp; e++) {
                int n = all ? 1 << e : size;
                if (verb == Verb.SEND) {
                    if (isServer) {
                        run.postReceives(n);
                    }
                    link.handShake(me);   // the receives for this size are posted
                }
                if (!isServer) {
                    last = run.client(n);
                } else {
                    last = run.server(n);
                    check = run.checkLastReceive(n);
                }
                print(out, json, last);
                if (verb == Verb.SEND && all) {
                    link.handShake(me);
                }
            }
            out.println(LINE);
            out.flush();
            link.untimed();
            if (verb == Verb.WRITE) {
                link.handShake(me);
                exchangeReports(link, last);
            }
            link.closeConnection(me);
            if (check != null) {
                out.println(" data check: " + check);
            }
        }
        writeJson(verb.title + (postList > 1 ? " Post List" : "") + " BW", json);
        return 0;
    }

    /** Messages of one warm-up round. */
    private static final int WARM_UP_ROUND = 2000;

    /**
     * The client's own loop ({@link Run#send}) on a second queue pair of the same device connected
     * to itself, writing into the other half of its own buffer, in rounds of {@link #WARM_UP_ROUND}
     * messages until the JIT has compiled it ({@link Common#untilCompiled}), before this side's first
     * hand-shake: the server waits for it as for any slower start, and its clock starts on compiled
     * code. Only the write-bw client (send-bw's server measures too, and a send to itself needs its
     * receives); not on iWARP, whose queue pairs connect only through rdma_cm.
     */
    private void warmUp(Context ctx, ProtectionDomain pd, Mtu mtu, long half, EnumSet<AccessFlag> access, int n) {
        if (!Common.warmUp() || ctx.device().transport() == TransportType.IWARP) {
            return;
        }
        ConnectOptions co = connectOptions(mtu);
        int gid = Common.loopbackGidIndex(ctx, ibPort, co.gidIndex());   // -R on RoCE: no -x, rdma_cm chose the GID
        if (gid >= 0) {
            co.gidIndex(gid);
        }
        try (Resources w = new Resources(); Arena arena = Arena.ofConfined()) {
            MemoryRegion mr = w.add(pd.register(arena, arena.allocate(2 * half, 4096), access));
            CompletionQueue cq = w.add(ctx.createCompletionQueue(txDepth));
            QueuePair qp = w.add(pd.createQueuePair(new QpInitAttributes(type, cq, cq).maxSendWr(txDepth).maxRecvWr(1)
                    .maxInlineData(inline)));
            activate(qp, co);
            PerftestLink.Key self = new PerftestLink.Key(qp.localEndpoint(co), 1, mr.rkey(), mr.address() + half);
            qp.connect(self.endpoint(), co);
            Run twin = new Run(qp, cq, mr, half, self, null, null, cq, Math.min(iters, WARM_UP_ROUND));
            Common.untilCompiled(() -> twin.send(n), timeout);
        } catch (RuntimeException e) {
            // Only a warm-up: the measurement runs without it, and says so.
            System.err.println(tool + ": warning: the warm-up on a queue pair connected to itself failed, measuring without it: "
                    + e.getMessage());
        }
    }

    /** perftest's INC: a message's step in the cycle buffer, whole cache lines. */
    private static int inc(int n) {
        return n > CACHE_LINE ? (n + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE : CACHE_LINE;
    }

    /** How many messages of {@code step} bytes go round the cycle buffer before it starts over (1 for large ones). */
    private static int slots(int n, int step) {
        return n <= CYCLE_BUFFER / 2 ? Math.max(1, CYCLE_BUFFER / step) : 1;
    }

    /** The client's byte {@code i} of slot {@code k}: never 0, different for each slot. */
    private static byte pattern(int k, long i) {
        return (byte) ((k * 37L + i) % 251 + 1);
    }

    /** The measurement of one size, with its reusable requests (built per size, posted without allocation). */
    private final class Run {
        final QueuePair qp;
        final CompletionQueue cq;
        final MemoryRegion mr;
        final long half;
        final PerftestLink.Key peer;
        final AddressHandle ah;
        final WorkCompletions wc = new WorkCompletions(POLL_BATCH);
        /** Messages per size: the tool's {@code -n}, or a warm-up round's. */
        final int iters;
        final long[] posted;
        final long[] completed;
        int lastSlot = -1;
        /** iWARP's receive credits (perftest's send_rcredit), or null. */
        final MemoryRegion credit;
        /** The server's credit write: its receive count, from credit[0] to the client's credit[1]. */
        final SendRequest creditWrite;
        /** Where the credit writes' completions are polled into. */
        private final WorkCompletions swc = new WorkCompletions(POLL_BATCH);
        /** Credit writes posted and not yet completed (the server's scredit). */
        int creditsOutstanding;

        /** The server's send completion queue, where its credit writes complete. */
        final CompletionQueue creditCq;

        Run(QueuePair qp, CompletionQueue cq, MemoryRegion mr, long half, PerftestLink.Key peer, AddressHandle ah,
                MemoryRegion credit, CompletionQueue creditCq, int iters) {
            this.iters = iters;
            this.posted = new long[iters];
            this.completed = new long[iters];
            this.creditCq = creditCq;
            this.qp = qp;
            this.cq = cq;
            this.mr = mr;
            this.half = half;
            this.peer = peer;
            this.ah = ah;
            this.credit = credit;
            this.creditWrite = credit == null ? null : new SendRequest(1).id(CREDIT_ID).opcode(SendOpcode.RDMA_WRITE)
                    .signaled(true).sge(credit, 0, 4).rdma(peer.vaddr(), peer.rkey());
        }

        /** The receive count the server last wrote into this client's credit word. */
        private int creditSeen() {
            return (int) CREDIT_WORD.getVolatile(credit.segment(), 4L);
        }

        /** perftest's run_iter_bw_server credit: every rx depth / 3 receives, write the count to the client. */
        private void sendCredit(long rcnt) {
            if ((rcnt % rxDepth) % Math.max(1, rxDepth / 3) != 0) {
                return;
            }
            credit.segment().set(ValueLayout.JAVA_INT, 0, (int) rcnt);
            while (creditsOutstanding == txDepth) {
                reapCreditWrites(true);
            }
            qp.postSend(creditWrite);
            creditsOutstanding++;
        }

        /** Polls the credit writes' completions (once, or until all completed); fails on an error. */
        private void reapCreditWrites(boolean once) {
            do {
                int ne = creditCq.poll(swc);
                for (int i = 0; i < ne; i++) {
                    if (swc.status(i) != WcStatus.SUCCESS) {
                        throw new SampleException(String.format("Poll send CQ error status=%d credit=%d scredit=%d",
                                swc.status(i).value(), swc.wrId(i), creditsOutstanding));
                    }
                    creditsOutstanding--;
                }
            } while (!once && creditsOutstanding > 0);
        }

        /** A send request for message slot {@code k} of size {@code n}. */
        private SendRequest request(int k, int n) {
            int step = inc(n);
            SendRequest wr = new SendRequest(1).id(0).sge(mr, (long) k * step, n).inline(n <= inline);
            if (verb == Verb.WRITE) {
                wr.opcode(SendOpcode.RDMA_WRITE).rdma(peer.vaddr() + (long) k * step, peer.rkey());
            } else {
                wr.opcode(SendOpcode.SEND);
                if (ah != null) {
                    wr.datagram(ah, peer.qpn(), Common.QKEY);
                }
            }
            return wr;
        }

        /** perftest's run_iter_bw: returns this side's figures. */
        Report client(int n) {
            long[] startEnd = send(n);
            if (noPeak) {
                return report(n, startEnd[0], startEnd[1], null, null);
            }
            return report(n, posted[0], completed[iters - 1], posted, completed);
        }

        /**
         * The client's loop: {@link #iters} messages of {@code n} bytes, posted as the send queue
         * allows and their completions polled; returns the start and end without the peak stamps.
         */
        long[] send(int n) {
            if (credit != null) {
                CREDIT_WORD.setVolatile(credit.segment(), 4L, 0);   // the server counts this size's receives from 0
            }
            int slots = slots(n, inc(n));
            MemorySegment buf = mr.segment();
            for (int k = 0; k < slots; k++) {
                long base = (long) k * inc(n);
                for (int i = 0; i < n; i++) {
                    buf.set(ValueLayout.JAVA_BYTE, base + i, pattern(k, i));
                }
            }
            SendRequest[] single = null;
            SendRequest chain = null;
            if (postList == 1) {
                single = new SendRequest[Math.min(slots, iters)];
                for (int k = 0; k < single.length; k++) {
                    single[k] = request(k, n);
                }
            } else {
                SendRequest next = null;
                for (int j = postList - 1; j >= 0; j--) {
                    SendRequest wr = request(j % slots, n).signaled((j + 1) % cqMod == 0).next(next);
                    next = wr;
                }
                chain = next;
            }
            try (QueuePair.Confined post = qp.confined(); CompletionQueue.Confined poller = cq.confined()) {   // the fast form
                long timeoutNanos = timeout.toNanos();
                long scnt = 0;
                long ccnt = 0;
                long start = noPeak ? System.nanoTime() : 0;
                long since = System.nanoTime();
                int idle = 0;
                while (scnt < iters || ccnt < iters) {
                    while (scnt < iters && scnt - ccnt + postList <= txDepth) {
                        if (credit != null && Integer.compareUnsigned((int) scnt + postList - creditSeen(), rxDepth) >= 0) {
                            break;   // the server has not posted receives that far yet
                        }
                        SendRequest wr;
                        if (single != null) {
                            wr = single[(int) (scnt % single.length)];
                            wr.signaled(cqMod == 1 || scnt % cqMod == cqMod - 1 || scnt == iters - 1);
                        } else {
                            wr = chain;
                        }
                        if (!noPeak) {
                            posted[(int) scnt] = System.nanoTime();
                        }
                        post.postSend(wr);
                        scnt += postList;
                    }
                    if (ccnt < iters) {
                        int ne = poller.poll(wc);
                        if (ne > 0) {
                            for (int i = 0; i < ne; i++) {
                                if (wc.status(i) != WcStatus.SUCCESS) {
                                    throw new SampleException(String.format(" Completion with error at client: status %s (%d), "
                                            + "vendor error 0x%x, scnt=%d, ccnt=%d", wc.status(i).description(),
                                            wc.status(i).value(), wc.vendorError(i), scnt, ccnt));
                                }
                                ccnt += cqMod;
                                if (!noPeak) {
                                    completed[(int) Math.min(ccnt, iters) - 1] = System.nanoTime();
                                }
                            }
                            idle = 0;
                            since = System.nanoTime();
                        } else if (++idle == 1 << 12) {
                            idle = 0;
                            if (System.nanoTime() - since > timeoutNanos) {
                                throw silent("completions", scnt, ccnt);
                            }
                        }
                    }
                }
                return new long[] {start, System.nanoTime()};
            }
        }

        /** The server's receives for size {@code n}, in slot order round the cycle buffer. */
        private ReceiveRequest[] recvs;
        private int recvPosted;

        /** perftest's ctx_set_recv_wqes: posts rx depth receives. */
        void postReceives(int n) {
            int len = type == QpType.UD ? n + Common.GRH_BYTES : n;
            int step = type == QpType.UD ? inc(n) + CACHE_LINE : inc(n);
            int slots = Math.min(slots(n, step), iters);
            // UD: the GRH lands in the 40 bytes before a cache line, the data on it
            int lead = type == QpType.UD ? CACHE_LINE - Common.GRH_BYTES : 0;
            recvs = new ReceiveRequest[slots];
            for (int k = 0; k < slots; k++) {
                recvs[k] = new ReceiveRequest(1).id(k).sge(mr, half + (long) k * step + lead, len);
            }
            mr.segment().asSlice(half, half).fill((byte) 0);
            for (recvPosted = 0; recvPosted < rxDepth; recvPosted++) {
                qp.postReceive(recvs[recvPosted % slots]);
            }
        }

        /** perftest's run_iter_bw_server: from the first receive to the last, no peak. */
        Report server(int n) {
            int expected = type == QpType.UD ? n + Common.GRH_BYTES : n;
            long timeoutNanos = timeout.toNanos();
            long rcnt = 0;
            long start = 0;
            long since = System.nanoTime();
            int idle = 0;
            try (QueuePair.Confined post = qp.confined(); CompletionQueue.Confined poller = cq.confined()) {   // the fast form
                while (rcnt < iters) {
                    int ne = poller.poll(wc);
                    if (ne > 0) {
                        if (rcnt == 0) {
                            start = System.nanoTime();
                        }
                        for (int i = 0; i < ne; i++) {
                            if (wc.status(i) != WcStatus.SUCCESS) {
                                throw new SampleException(String.format(" Completion with error at server: status %s (%d), "
                                        + "vendor error 0x%x, rcnt=%d", wc.status(i).description(), wc.status(i).value(),
                                        wc.vendorError(i), rcnt));
                            }
                            if (wc.byteLength(i) != expected) {
                                throw new SampleException("data check: receive " + rcnt + " holds " + wc.byteLength(i)
                                        + " bytes, not " + expected);
                            }
                            rcnt++;
                            lastSlot = (int) wc.wrId(i);
                            if (recvPosted < iters) {
                                post.postReceive(recvs[recvPosted % recvs.length]);
                                recvPosted++;
                            }
                            if (credit != null) {
                                sendCredit(rcnt);
                            }
                        }
                        idle = 0;
                        since = System.nanoTime();
                    } else if (++idle == 1 << 12) {
                        idle = 0;
                        if (System.nanoTime() - since > timeoutNanos) {
                            throw silent("receives", rcnt, rcnt);
                        }
                    }
                }
            }
            long end = System.nanoTime();
            if (credit != null) {
                reapCreditWrites(false);   // clean_scq_credit
            }
            return report(n, start, end, null, null);
        }

        /** The bytes of the last receive: one of the client's slots, whole. */
        String checkLastReceive(int n) {
            int step = type == QpType.UD ? inc(n) + CACHE_LINE : inc(n);
            long at = half + (long) lastSlot * step + (type == QpType.UD ? CACHE_LINE : 0);
            int k = patternSlot(mr.segment(), at, n, slots(n, inc(n)));
            if (k < 0) {
                return FOREIGN;
            }
            String bad = checkSlot(mr.segment(), at, n, k);
            if (bad != null) {
                throw new SampleException("data check: the last message (" + n + " bytes) is wrong: " + bad);
            }
            return "the last of " + iters + " messages holds the client's " + n + " bytes";
        }

        /**
         * After the end barrier: every slot of the server's buffer the client wrote holds exactly the
         * client's bytes for that slot, and slot 0 was written. UC writes may land a little after
         * the client's completions: a failing check is retried for a second.
         */
        String checkWrites(Report client) {
            if (client.size() < 1 || client.size() > half) {
                throw new SampleException("data check: the client reports " + client.size() + "-byte messages; this buffer holds "
                        + half + " (run both sides with the same -s or -a)");
            }
            int n = (int) client.size();
            int step = inc(n);
            int slots = slots(n, step);
            long deadline = System.nanoTime() + 1_000_000_000L;
            while (!isZero(mr.segment().asSlice(half, n)) && patternSlot(mr.segment(), half, n, 1) != 0) {
                if (System.nanoTime() > deadline) {
                    return FOREIGN;
                }
                Thread.onSpinWait();
            }
            while (true) {
                String bad = null;
                int written = 0;
                for (int k = 0; k < slots && bad == null; k++) {
                    long at = half + (long) k * step;
                    MemorySegment s = mr.segment().asSlice(at, n);
                    if (k > 0 && isZero(s)) {
                        continue;
                    }
                    written++;
                    String wrong = checkSlot(mr.segment(), at, n, k);
                    if (wrong != null) {
                        bad = "slot " + k + ": " + wrong;
                    }
                }
                if (bad == null) {
                    return written + " of " + slots + " buffer slots hold the client's " + n + "-byte messages";
                }
                if (System.nanoTime() > deadline) {
                    throw new SampleException("data check: the written buffer is wrong at " + bad);
                }
                Thread.onSpinWait();
            }
        }
    }

    /** What the data check says when the peer's bytes are not this tool's pattern. */
    private static final String FOREIGN = "skipped: the client's bytes are not this tool's pattern (perftest's own binary sends random bytes)";

    /**
     * The slot {@code k < slots} whose pattern the first bytes (up to 8) at {@code at} start, or -1:
     * a client that is not this tool (perftest's binary fills its buffer with random bytes).
     */
    private static int patternSlot(MemorySegment buf, long at, int n, int slots) {
        for (int k = 0; k < slots; k++) {
            boolean same = true;
            for (int i = 0; i < Math.min(n, 8) && same; i++) {
                same = buf.get(ValueLayout.JAVA_BYTE, at + i) == pattern(k, i);
            }
            if (same) {
                return k;
            }
        }
        return -1;
    }

    private static boolean isZero(MemorySegment s) {
        for (long i = 0; i < s.byteSize(); i++) {
            if (s.get(ValueLayout.JAVA_BYTE, i) != 0) {
                return false;
            }
        }
        return true;
    }

    /** Null when the {@code n} bytes at {@code at} are the client's slot {@code k}; else what is wrong. */
    private static String checkSlot(MemorySegment buf, long at, int n, int k) {
        for (int i = 0; i < n; i++) {
            byte b = buf.get(ValueLayout.JAVA_BYTE, at + i);
            if (b != pattern(k, i)) {
                return String.format("byte %d is 0x%02x, not 0x%02x", i, b & 0xff, pattern(k, i) & 0xff);
            }
        }
        return null;
    }

    private SampleException silent(String what, long done, long got) {
        return new SampleException("nothing from the peer for " + timeout.toSeconds() + " s (no " + what + ") after "
                + done + " posts and " + got + " completions of " + iters + ": the peer is gone (see --timeout)");
    }

    /**
     * print_report_bw: with nanosecond stamps (perftest's cycles at 1 GHz). The peak is perftest's:
     * for every post {@code i} (a multiple of the post list) and every signalled completion
     * {@code j >= i}, the integer time per message {@code (t_completed[j] - t_posted[i]) / (j - i + 1)};
     * the smallest wins. No peak (0) without the stamps {@code tp} and {@code tc}.
     */
    private Report report(int n, long start, long end, long[] tp, long[] tc) {
        double formatFactor = gbits ? 125_000_000.0 : 0x100000;
        double units = 1e9;
        double sum = end - start;
        double avg = (double) n * iters * units / (sum * formatFactor);
        double rate = iters * units / (sum * 1_000_000);
        double peak = 0;
        if (tp != null) {
            long opt = Long.MAX_VALUE;
            for (int i = 0; i < iters; i += postList) {
                for (long j = roundUp(i + 1, cqMod) - 1; j < iters; j += cqMod) {
                    long t = (tc[(int) j] - tp[i]) / (j - i + 1);
                    opt = Math.min(opt, t);
                }
                if (iters % cqMod != 0) {
                    int j = iters - 1;
                    long t = (tc[j] - tp[i]) / (j - i + 1);
                    opt = Math.min(opt, t);
                }
            }
            peak = (double) ((long) n * (long) units) / (opt * (long) formatFactor);
        }
        return new Report(n, iters, peak, avg, rate);
    }

    private static long roundUp(long v, long a) {
        return v % a == 0 ? v : a * (v / a + 1);
    }

    /** REPORT_FMT (REPORT_FMT_EXT below 0.1 Gb/s), and the JSON record. */
    private void print(PrintStream out, StringBuilder json, Report r) {
        boolean accurate = gbits && r.average() < 0.1;
        out.printf(Locale.ROOT, accurate ? " %-7d    %d           %-7.6f            %-7.6f            %-7.6f%n"
                : " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f%n",
                r.size(), r.iters(), r.peak(), r.average(), r.msgRate());
        out.flush();
        json.append(json.isEmpty() ? "" : ",\n").append(String.format(Locale.ROOT,
                "{\"MsgSize\": %d, \"n_iterations\": %d, \"BW_peak\": %." + (accurate ? 6 : 2) + "f, \"BW_average\": %."
                        + (accurate ? 6 : 2) + "f, \"MsgRate\": %.6f}", r.size(), r.iters(), r.peak(), r.average(), r.msgRate()));
    }

    /** perftest's xchg_bw_reports: five exchanges of 8 bytes in network order (perftest 5.33 and later). */
    private static Report exchangeReports(PerftestLink link, Report mine) {
        long size = ByteBuffer.wrap(link.exchange(ByteBuffer.allocate(8).putLong(mine.size()).array())).getLong();
        long iters = ByteBuffer.wrap(link.exchange(ByteBuffer.allocate(8).putLong(mine.iters()).array())).getLong();
        double peak = ByteBuffer.wrap(link.exchange(ByteBuffer.allocate(8).putDouble(mine.peak()).array())).getDouble();
        double avg = ByteBuffer.wrap(link.exchange(ByteBuffer.allocate(8).putDouble(mine.average()).array())).getDouble();
        double rate = ByteBuffer.wrap(link.exchange(ByteBuffer.allocate(8).putDouble(mine.msgRate()).array())).getDouble();
        return new Report(size, iters, peak, avg, rate);
    }

    /** ctx_print_test_info for these tests. */
    private void printBanner(PrintStream out, Context ctx, PortAttributes port, Mtu mtu, boolean isServer) {
        printBannerHead(out, ctx, verb.title + " " + (postList > 1 ? "Post List " : "") + "BW Test");
        if (!isServer) {
            out.println(" TX depth        : " + txDepth);
        }
        if (postList > 1) {
            out.println(" Post List       : " + postList);
        }
        if (verb == Verb.SEND && isServer) {
            out.println(" RX depth        : " + rxDepth);
        }
        out.println(" CQ Moderation   : " + cqMod);
        printBannerLink(out, port, mtu);
        out.printf(" Max inline data : %d[B]%n", inline);
        printBannerTail(out, rdmaCm);
    }


    /** ctx_print_pingpong_data: RKey and VAddr for write-bw. */
    private void printAddress(PrintStream out, String side, PerftestLink.Key k) {
        printAddress(out, side, k, false, !rdmaCm && verb == Verb.WRITE);   // (with -R as the control channel's SEND wants)
    }
}
