package io.github.panamaverbs.samples.ibverbs;

import io.github.panamaverbs.samples.common.Common;
import io.github.panamaverbs.samples.common.Options;
import io.github.panamaverbs.samples.common.Resources;
import io.github.panamaverbs.samples.common.SampleException;
import io.github.panamaverbs.verbs.AccessFlag;
import io.github.panamaverbs.verbs.AddressHandle;
import io.github.panamaverbs.verbs.AddressVector;
import io.github.panamaverbs.verbs.CompletionChannel;
import io.github.panamaverbs.verbs.CompletionQueue;
import io.github.panamaverbs.verbs.ConnectOptions;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.LinkLayer;
import io.github.panamaverbs.verbs.MemoryRegion;
import io.github.panamaverbs.verbs.PortAttributes;
import io.github.panamaverbs.verbs.ProtectionDomain;
import io.github.panamaverbs.verbs.QpType;
import io.github.panamaverbs.verbs.QpInitAttributes;
import io.github.panamaverbs.verbs.QueuePair;
import io.github.panamaverbs.verbs.ReceiveRequest;
import io.github.panamaverbs.verbs.RemoteEndpoint;
import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.SharedReceiveQueue;
import io.github.panamaverbs.verbs.TransportType;
import io.github.panamaverbs.verbs.WcStatus;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code rc-pingpong}, {@code uc-pingpong}, {@code ud-pingpong} and {@code srq-pingpong}: rdma-core's
 * {@code ibv_*_pingpong} examples, with their flags, output lines and TCP exchange, so that either
 * side can be the C tool. The client sends a message, the server answers it, {@code -n} times; each
 * side keeps {@code -r} receives posted. {@code srq-pingpong} does this on {@code -q} queue pairs at
 * once, all receiving from one shared receive queue; {@code ud-pingpong} sends datagrams, whose
 * receive buffers start with the 40-byte GRH.
 *
 * <p>With {@code -c} the client fills its buffer as the C tools do (0x7b, 0 for srq, and 0 at the start of each
 * 4 KiB page), and each side checks every message it receives against that pattern (the C tools
 * check only the first byte of each page of the last message, on the server).
 */
public final class PingPong {
    private enum Kind {
        RC("rc-pingpong", "ibv_rc_pingpong", QpType.RC, 4096, 0x7b),
        UC("uc-pingpong", "ibv_uc_pingpong", QpType.UC, 4096, 0x7b),
        UD("ud-pingpong", "ibv_ud_pingpong", QpType.UD, 2048, 0x7b),
        SRQ("srq-pingpong", "ibv_srq_pingpong", QpType.RC, 4096, 0);

        final String tool;
        final String cName;
        final QpType type;
        final int defaultSize;
        /** What the C tool fills its buffer with before the data check's zeros. */
        final byte fill;

        Kind(String tool, String cName, QpType type, int defaultSize, int fill) {
            this.tool = tool;
            this.cName = cName;
            this.type = type;
            this.defaultSize = defaultSize;
            this.fill = (byte) fill;
        }
    }

    private static final long RECV_WRID = 1;
    private static final long SEND_WRID = 2;
    private static final int PAGE = 4096;
    /** ibv_srq_pingpong always exchanges this many addresses, zeros for the QPs it does not use. */
    private static final int SRQ_WIRE_QPS = 256;

    /** {@code rc-pingpong}: runs it with {@code args}, printing on {@code out}; returns the exit status. */
    public static int rc(String[] args, PrintStream out) {
        return new PingPong(Kind.RC).run(args, out);
    }

    /** {@code uc-pingpong}: runs it with {@code args}, printing on {@code out}; returns the exit status. */
    public static int uc(String[] args, PrintStream out) {
        return new PingPong(Kind.UC).run(args, out);
    }

    /** {@code ud-pingpong}: runs it with {@code args}, printing on {@code out}; returns the exit status. */
    public static int ud(String[] args, PrintStream out) {
        return new PingPong(Kind.UD).run(args, out);
    }

    /** {@code srq-pingpong}: runs it with {@code args}, printing on {@code out}; returns the exit status. */
    public static int srq(String[] args, PrintStream out) {
        return new PingPong(Kind.SRQ).run(args, out);
    }

    private final Kind kind;
    // Settings.
    private String server;
    private int tcpPort;
    private String deviceName;
    private int ibPort;
    private int size;
    private int rxDepth;
    private int iters;
    private int numQp;
    private boolean events;
    /** --virtual: the loop runs in a virtual thread. */
    private boolean virtual;
    private boolean check;
    private Duration timeout;
    private Duration acceptTimeout;
    private ConnectOptions connectOptions;
    // Run state.
    private final List<QueuePair> qps = new ArrayList<>();
    private final List<SendRequest> sends = new ArrayList<>();
    private SharedReceiveQueue srq;
    private ReceiveRequest recv;
    private int[] pending;
    private int routs;
    private int dataOffset;
    private MemoryRegion mr;
    private MemorySegment expected;
    private long badMessages;
    private long firstBadPage = -1;

    private PingPong(Kind kind) {
        this.kind = kind;
    }

    private boolean parse(String[] args, PrintStream out) {
        Options o = new Options("Usage:\n  samples/run " + kind.tool + "            start a server and wait for connection\n"
                + "  samples/run " + kind.tool + " <host>     connect to server at <host>\n"
                + "As " + kind.cName + ", with which it interoperates either way.")
                .value('p', "port", "port", "listen on/connect to port <port> (default 18515)")
                .value('d', "ib-dev", "dev", "use IB device <dev> (default first device found)")
                .value('i', "ib-port", "port", "use port <port> of IB device (default 1)")
                .value('s', "size", "size", "size of message to exchange (default " + kind.defaultSize + ")");
        if (kind != Kind.UD) {
            o.value('m', "mtu", "size", "path MTU (default 1024)");
        }
        if (kind == Kind.SRQ) {
            o.value('q', "num-qp", "num", "number of QPs to use (default 16)");
        }
        o.value('r', "rx-depth", "dep", "number of receives to post at a time (default 500)")
                .value('n', "iters", "iters", "number of exchanges (default 1000)")
                .value('l', "sl", "sl", "service level value (default 0)")
                .flag('e', "events", "sleep on CQ events (default poll)")
                .flag('\0', "virtual", "run the ping-pong loop in a virtual thread (with -e, its waits park it "
                        + "and free the OS thread)")
                .value('g', "gid-idx", "gid index", "local port gid index (needed on RoCE)")
                .flag('c', "chk", "validate received buffer")
                .value('\0', "timeout", "seconds", "give up when the peer is silent this long (default 20; "
                        + "a server waits for its client forever unless this is given)");
        if (!o.parse(args, out)) {
            return false;
        }
        if (o.positional().size() > 1) {
            throw new Options.UsageException("one server name at most, not " + o.positional());
        }
        server = o.positional().isEmpty() ? null : o.positional().getFirst();
        tcpPort = o.integer("port", 18515, 0, 65535);
        deviceName = o.string("ib-dev", null);
        ibPort = o.integer("ib-port", 1, 1, 255);
        size = o.integer("size", kind.defaultSize, 1, Integer.MAX_VALUE - Common.GRH_BYTES);
        rxDepth = o.integer("rx-depth", 500, 1, 1 << 20);
        iters = o.integer("iters", 1000, 1, Integer.MAX_VALUE);
        numQp = kind == Kind.SRQ ? o.integer("num-qp", 16, 1, SRQ_WIRE_QPS) : 1;
        if (numQp > rxDepth) {
            throw new Options.UsageException("rx_depth " + rxDepth + " is too small for " + numQp + " QPs -- must have at least one receive per QP.");
        }
        events = o.has("events");
        virtual = o.has("virtual");
        check = o.has("chk");
        int seconds = o.integer("timeout", 20, 1, 86_400);
        timeout = Duration.ofSeconds(seconds);
        acceptTimeout = o.has("timeout") ? timeout : null;
        connectOptions = ConnectOptions.port(ibPort)
                .mtu(Common.mtu(o.integer("mtu", 1024, 0, 1 << 20)))
                .serviceLevel(o.integer("sl", 0, 0, 15));
        int gid = o.integer("gid-idx", -1, -1, 255);
        if (gid >= 0) {
            connectOptions.gidIndex(gid);
        }
        return true;
    }

    private int run(String[] args, PrintStream out) {
        if (!parse(args, out)) {
            return 0;
        }
        dataOffset = kind == Kind.UD ? Common.GRH_BYTES : 0;
        try (Resources res = new Resources(); Arena arena = Arena.ofShared()) { // shared: --virtual runs the loop in another thread
            Context ctx = res.add(Common.openDevice(deviceName));
            PortAttributes port = ctx.queryPort(ibPort);
            if (kind == Kind.UD && size > port.activeMtu().bytes()) {
                throw new SampleException("Requested size larger than port MTU (" + port.activeMtu().bytes() + ")");
            }
            CompletionChannel channel = events ? res.add(ctx.createCompletionChannel()) : null;
            ProtectionDomain pd = res.add(ctx.allocateProtectionDomain());
            expected = arena.allocate(size);
            for (int i = 0; i < size; i++) {
                expected.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, i % PAGE == 0 ? 0 : kind.fill);
            }
            // The warm-up runs where the peer waits for this side: a client's before it connects, a
            // server's once it has the client's address, before its answer (a C client does not retry
            // a refused connection, so the server listens first).
            boolean warm = ctx.device().transport() != TransportType.IWARP && Common.warmUp()
                    && Common.loopbackGidIndex(ctx, ibPort, connectOptions.gidIndex()) == connectOptions.gidIndex();
            CompletionQueue cq = build(ctx, pd, res, arena, channel);
            if (events) {
                cq.requestNotification(false);
            }
            if (port.linkLayer() != LinkLayer.ETHERNET && port.lid() == 0) {
                throw new SampleException("Couldn't get local LID");
            }
            List<RemoteEndpoint> mine = new ArrayList<>();
            for (QueuePair qp : qps) {
                RemoteEndpoint e = qp.localEndpoint(connectOptions);
                mine.add(e);
                out.printf("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x%s GID %s%n", e.lid(), e.qpn(), e.psn(),
                        kind == Kind.UD ? ":" : ",", e.gid().toString());
            }
            out.flush();
            List<RemoteEndpoint> wire = new ArrayList<>(mine);
            while (kind == Kind.SRQ && wire.size() < SRQ_WIRE_QPS) {
                wire.add(new RemoteEndpoint(0, 0, 0, null));
            }
            AddressHandle[] ah = new AddressHandle[1];
            Wire.Connector connect = theirs -> {
                if (warm && server == null) {
                    warmUp(ctx, pd);
                }
                for (int i = 0; i < numQp; i++) {
                    RemoteEndpoint r = theirs.get(i);
                    if (kind == Kind.UD) {
                        AddressVector.GlobalRoute grh = r.gid().interfaceId() != 0
                                ? new AddressVector.GlobalRoute(r.gid(), Math.max(0, connectOptions.gidIndex()), 1, 0, 0)
                                : null;
                        ah[0] = res.add(pd.createAddressHandle(new AddressVector(ibPort, r.lid(), 0, 0, 0, grh)));
                        sends.get(i).datagram(ah[0], r.qpn(), Common.QKEY);
                    } else {
                        qps.get(i).connect(r, connectOptions);
                    }
                }
            };
            if (warm && server != null) {
                warmUp(ctx, pd);
            }
            List<RemoteEndpoint> theirs = server != null
                    ? Wire.clientExchange(server, tcpPort, timeout, wire)
                    : Wire.serverExchange(tcpPort, acceptTimeout, timeout, wire, connect);
            for (RemoteEndpoint r : theirs.subList(0, numQp)) {
                out.printf("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s%n", r.lid(), r.qpn(), r.psn(),
                        r.gid().toString());
            }
            out.flush();
            if (server != null) {
                connect.connect(theirs);
            }
            long start = System.nanoTime();
            if (virtual) {
                inVirtualThread(() -> loop(cq, channel));
            } else {
                loop(cq, channel);
            }
            double usec = (System.nanoTime() - start) / 1000.0;
            long bytes = (long) size * iters * 2;
            out.printf("%d bytes in %.2f seconds = %.2f Mbit/sec%n", bytes, usec / 1e6, bytes * 8 / usec);
            out.printf("%d iters in %.2f seconds = %.2f usec/iter%n", iters, usec / 1e6, usec / iters);
            if (check) {
                if (badMessages > 0) {
                    out.printf("invalid data in page %d%n", firstBadPage);
                    out.flush();
                    throw new SampleException(badMessages + " received messages had invalid data");
                }
                out.println("data check: all " + iters + " received messages are correct");
            }
            out.flush();
            return 0;
        }
    }

    /**
     * This side's memory region, completion queue, shared receive queue, queue pairs (in INIT, or RTS
     * on UD) and requests, with the receives posted; returns the completion queue.
     */
    private CompletionQueue build(Context ctx, ProtectionDomain pd, Resources res, Arena arena, CompletionChannel channel) {
        mr = res.add(pd.allocateAndRegister(size + dataOffset, AccessFlag.LOCAL_WRITE));
        // As the C tools: 0x7b everywhere (srq: 0); the client with -c zeroes the first byte of
        // each page. A checking server starts from other bytes, so that the check proves the data arrived.
        mr.segment().fill(check && server == null ? (byte) 0xa5 : kind.fill);
        if (check && server != null) {
            mr.segment().asSlice(dataOffset, size).copyFrom(expected);
        }
        CompletionQueue cq = res.add(channel != null
                ? ctx.createCompletionQueue(rxDepth + numQp, channel, 0)
                : ctx.createCompletionQueue(rxDepth + numQp));
        if (kind == Kind.SRQ) {
            srq = res.add(pd.createSharedReceiveQueue(rxDepth, 1));
        }
        for (int i = 0; i < numQp; i++) {
            QpInitAttributes config = new QpInitAttributes(kind.type, cq, cq).maxSendWr(1).maxSendSge(1)
                    .maxRecvWr(rxDepth).maxRecvSge(1);
            if (srq != null) {
                config.sharedReceiveQueue(srq);
            }
            QueuePair qp = res.add(pd.createQueuePair(config));
            if (kind == Kind.UD) {
                qp.activateDatagram(connectOptions, Common.QKEY);
            } else {
                qp.toInit(connectOptions);
            }
            qps.add(qp);
            SendRequest send = new SendRequest(1, arena).id(SEND_WRID).opcode(SendOpcode.SEND)
                    .sge(mr, dataOffset, size).signaled(true)
                    .inline(qp.capabilities().maxInlineData() >= size);
            sends.add(send);
        }
        recv = new ReceiveRequest(1, arena).id(RECV_WRID).sge(mr, 0, size + dataOffset);
        routs = postReceives(rxDepth);
        return cq;
    }

    /**
     * A warm-up round: this many calls of the loop, of {@link #WARM_UP_ITERS} iterations each. The JIT
     * compiles a method called once per round only for its loop, after some 60,000 turns of it, which
     * the event-driven loop ({@code -e}: a few hundred turns a second on an emulated CPU) never
     * reached: its measured run started in the interpreter.
     */
    private static final int WARM_UP_CALLS = 50;
    private static final int WARM_UP_ITERS = 10;
    /**
     * With {@code --virtual}, waits per round in which the virtual thread parks until the library's
     * event loop wakes it. On a queue pair connected to itself the event is there before the thread
     * parks, so its park returns at once and the JDK's hand-over (unmount, the carrier's idle wait,
     * the wake-up, mount) never ran: it was first run, interpreted and compiled, in the measured loop.
     */
    private static final int WARM_UP_PARKS = 100;

    /**
     * This tool's own loop ({@link #loop}) on a twin of this side with one queue pair of the same
     * device connected to itself, in the client's role, in rounds until the JIT has compiled it
     * ({@link Common#untilCompiled}), before the address exchange: the peer's clock then starts on
     * compiled code. Nothing of it reaches the peer, which waits for the exchange as for any slower
     * start. With {@code -e} the twin waits for events on a channel of its own, in a virtual thread with
     * {@code --virtual}, as the measured loop will. Not on iWARP (no connect but rdma_cm's), nor on RoCE
     * without {@code -g} (no connect at all).
     */
    private void warmUp(Context ctx, ProtectionDomain pd) {
        PingPong twin = new PingPong(kind);
        twin.server = "itself";
        twin.ibPort = ibPort;
        twin.size = size;
        twin.rxDepth = rxDepth;
        twin.iters = WARM_UP_ITERS;
        twin.numQp = 1;
        twin.timeout = timeout;
        twin.connectOptions = connectOptions;
        twin.dataOffset = dataOffset;
        try (Resources res = new Resources(); Arena arena = Arena.ofShared()) {
            CompletionChannel channel = events ? res.add(ctx.createCompletionChannel()) : null;
            CompletionQueue cq = twin.build(ctx, pd, res, arena, channel);
            if (events) {
                cq.requestNotification(false);
            }
            QueuePair qp = twin.qps.getFirst();
            RemoteEndpoint self = qp.localEndpoint(connectOptions);
            if (kind == Kind.UD) {
                AddressVector.GlobalRoute grh = connectOptions.gidIndex() >= 0
                        ? new AddressVector.GlobalRoute(self.gid(), connectOptions.gidIndex(), 1, 0, 0) : null;
                AddressHandle ah = res.add(pd.createAddressHandle(new AddressVector(ibPort, self.lid(), 0, 0, 0, grh)));
                twin.sends.getFirst().datagram(ah, self.qpn(), Common.QKEY);
            } else {
                qp.connect(self, connectOptions);
            }
            Runnable round = () -> {
                for (int i = 0; i < WARM_UP_CALLS; i++) {
                    twin.loop(cq, channel);
                }
                for (int i = 0; virtual && events && i < WARM_UP_PARKS; i++) {
                    // nothing is outstanding: parked until the event loop ends the wait at its deadline
                    if (channel.awaitEvent(Duration.ofMillis(1)).isPresent()) {
                        throw new IllegalStateException("a completion event with nothing outstanding");
                    }
                }
            };
            Common.untilCompiled(virtual ? () -> inVirtualThread(round) : round, timeout);
        } catch (RuntimeException e) {
            // Only a warm-up: the measurement runs without it, and says so.
            System.err.println(kind.tool + ": warning: the warm-up on a queue pair connected to itself failed, measuring without it: "
                    + e.getMessage());
        }
    }

    private int postReceives(int n) {
        for (int i = 0; i < n; i++) {
            if (srq != null) {
                srq.postReceive(recv);
            } else {
                qps.getFirst().postReceive(recv);
            }
        }
        return n;
    }

    /** Runs {@code body} in a virtual thread and waits for it; its exception is this thread's. */
    private static void inVirtualThread(Runnable body) {
        Throwable[] thrown = new Throwable[1];
        Thread t = Thread.ofVirtual().name("rc-pingpong").start(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                thrown[0] = e;
            }
        });
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SampleException("interrupted");
        }
        if (thrown[0] instanceof RuntimeException e) {
            throw e;
        }
        if (thrown[0] instanceof Error e) {
            throw e;
        }
    }

    private void loop(CompletionQueue cq, CompletionChannel channel) {
        pending = new int[numQp];
        for (int i = 0; i < numQp; i++) {
            pending[i] = (int) RECV_WRID;
            if (server != null) {
                qps.get(i).postSend(sends.get(i));
                pending[i] |= (int) SEND_WRID;
            }
        }
        WorkCompletions wc = new WorkCompletions(Math.max(2, numQp * 2));
        long scnt = 0;
        long rcnt = 0;
        int refillAt = kind == Kind.SRQ ? numQp : 1;
        long timeoutNanos = timeout.toNanos();
        long last = System.nanoTime();
        int idle = 0;
        while (rcnt < iters || scnt < iters) {
            int n;
            if (channel != null) {
                if (channel.awaitEvent(timeout).isEmpty()) {
                    throw silent(scnt, rcnt);
                }
                cq.requestNotification(false);
                n = cq.poll(wc);
            } else {
                n = cq.poll(wc);
                if (n == 0) {
                    if (++idle == 64) {   // often enough that the warm-up takes this branch too
                        idle = 0;
                        if (System.nanoTime() - last > timeoutNanos) {
                            throw silent(scnt, rcnt);
                        }
                    }
                    continue;
                }
                last = System.nanoTime();
            }
            for (int i = 0; i < n; i++) {
                WcStatus status = wc.status(i);
                long id = wc.wrId(i);
                if (status != WcStatus.SUCCESS) {
                    throw new SampleException(String.format("Failed status %s (%d) for wr_id %d", status.description(),
                            status.value(), id));
                }
                int q = qpIndex(wc.qpNumber(i));
                if (id == SEND_WRID) {
                    scnt++;
                } else if (id == RECV_WRID) {
                    if (--routs <= refillAt) {
                        routs += postReceives(rxDepth - routs);
                    }
                    rcnt++;
                    if (check) {
                        verify();
                    }
                } else {
                    throw new SampleException("Completion for unknown wr_id " + id);
                }
                pending[q] &= (int) ~id;
                if (scnt < iters && pending[q] == 0) {
                    qps.get(q).postSend(sends.get(q));
                    pending[q] = (int) (RECV_WRID | SEND_WRID);
                }
            }
        }
    }

    private SampleException silent(long scnt, long rcnt) {
        return new SampleException("no completion for " + timeout.toSeconds() + " s after " + scnt + " sends and "
                + rcnt + " receives of " + iters + ": the peer is gone (see --timeout)");
    }

    private int qpIndex(int qpn) {
        for (int i = 0; i < numQp; i++) {
            if (qps.get(i).qpNumber() == qpn) {
                return i;
            }
        }
        throw new SampleException(String.format("Couldn't find QPN %06x", qpn));
    }

    /** Checks the message just received (the peer sends the next one only after our answer). */
    private void verify() {
        long at = mr.segment().asSlice(dataOffset, size).mismatch(expected);
        if (at >= 0) {
            if (badMessages++ == 0) {
                firstBadPage = at / PAGE;
            }
        }
    }
}
