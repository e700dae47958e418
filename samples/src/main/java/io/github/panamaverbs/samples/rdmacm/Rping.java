package io.github.panamaverbs.samples.rdmacm;

import io.github.panamaverbs.cm.CmEvent;
import io.github.panamaverbs.cm.CmEventType;
import io.github.panamaverbs.cm.Connection;
import io.github.panamaverbs.cm.ConnectionException;
import io.github.panamaverbs.cm.ConnectionParameters;
import io.github.panamaverbs.cm.Listener;
import io.github.panamaverbs.samples.common.Common;
import io.github.panamaverbs.samples.common.Options;
import io.github.panamaverbs.verbs.AccessFlag;
import io.github.panamaverbs.verbs.CompletionQueue;
import io.github.panamaverbs.verbs.MemoryRegion;
import io.github.panamaverbs.verbs.ReceiveRequest;
import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.VerbsException;
import io.github.panamaverbs.verbs.WcOpcode;
import io.github.panamaverbs.verbs.WcStatus;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;

/**
 * {@code rping}: rdmacm-utils' ping over the connection manager ({@code librdmacm/examples/rping.c}),
 * with its flags, output lines, exit statuses and wire protocol, so that either side can be the C
 * tool. The client advertises its {@code start} buffer (16 bytes: big-endian address, rkey and
 * size); the server RDMA-reads it, answers with a 16-byte go-ahead, reads the advertisement of the
 * client's sink buffer, RDMA-writes the data there and answers again; the client then compares the
 * two buffers ({@code -V}) and prints what came back ({@code -v}).
 *
 * <p>Differences from the C tool: completions are busy-polled (no completion channel) and every
 * wait ends after {@code --timeout} seconds with an error; a persistent server ({@code -P}) serves
 * its clients one after another instead of on a thread each; {@code -I} (the client's source
 * address) and {@code -q} (a self-created queue pair) are refused.
 */
public final class Rping {
    private static final int DEFAULT_PORT = 7174;
    private static final int DEFAULT_SIZE = 64;
    /** RPING_MIN_BUFSIZE: sizeof("INT_MAX") + sizeof("rdma-ping-%d: "), as the C macro computes it. */
    private static final int MIN_SIZE = 23;
    /** RPING_BUFSIZE: sizes up to one less are valid. */
    private static final int BUF_SIZE = 64 * 1024;
    private static final int SQ_DEPTH = 16;
    private static final int RQ_DEPTH = 2;
    /** struct rping_rdma_info: __be64 buf, __be32 rkey, __be32 size. */
    private static final int INFO = 16;
    private static final int EINVAL = 22;
    /** ENODEV: rping's status when the host has no RDMA device. */
    private static final int NO_DEVICE = 19;
    /** exit(-1), and main returning -1. */
    private static final int FAILED = 255;

    private static final ValueLayout.OfLong BE64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    // enum test_state, with the C values that the messages print.
    private static final int IDLE = 1;
    private static final int CONNECTED = 5;
    private static final int RDMA_READ_ADV = 6;
    private static final int RDMA_READ_COMPLETE = 7;
    private static final int RDMA_WRITE_ADV = 8;
    private static final int RDMA_WRITE_COMPLETE = 9;
    private static final int DISCONNECTED = 10;
    private static final int ERROR = 11;

    private static final long RECV_WRID = 1;
    private static final long SEND_WRID = 2;
    private static final long RDMA_WRID = 3;

    private final PrintStream out;
    private final PrintStream err;
    // Settings.
    private boolean server;
    private InetAddress address;
    private int port;
    private int count;
    private int size;
    private boolean verbose;
    private boolean validate;
    private boolean debug;
    private boolean persistent;
    private Duration timeout;
    /** How long a server waits for a client; null: forever. */
    private Duration acceptTimeout;

    private Rping(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    /** The launcher's entry: messages that the C tool prints on stderr go to {@link System#err}. */
    /** Runs the tool with {@code args}, printing on {@code out}; returns the exit status. */
    public static int main(String[] args, PrintStream out) {
        return run(args, out, System.err);
    }

    /** Runs rping; returns the C tool's exit status (0, 22 for a usage error, 255 for a failure). */
    static int run(String[] args, PrintStream out, PrintStream err) {
        Rping r = new Rping(out, err);
        try {
            Integer status = r.parse(args);
            if (status != null) {
                return status;
            }
            return r.server ? r.runServer() : r.runClient();
        } catch (RuntimeException e) {
            err.println("rping: " + e);
            return FAILED;
        } finally {
            out.flush();
            err.flush();
        }
    }

    private void debug(String format, Object... args) {
        if (debug) {
            out.printf(format + "%n", args);
        }
    }

    private static Options options() {
        return new Options("Usage:\n"
                + "  samples/run rping -s [-vVd] [-S size] [-C count] [-a addr] [-p port] [-P]\n"
                + "  samples/run rping -c [-vVd] [-S size] [-C count] -a addr [-p port]\n"
                + "As rdmacm-utils' rping, with which it interoperates either way.")
                .flag('s', "server", "server side; to bind to any address with IPv6 use -a ::0")
                .flag('c', "client", "client side")
                .value('a', "addr", "addr", "address: the server binds to it (default 0.0.0.0), the client connects to it")
                .value('I', "source", "addr", "source address to bind to for client (not supported here)")
                .value('p', "port", "port", "port (default " + DEFAULT_PORT + ")")
                .value('C', "count", "count", "ping count times (default 0: without end)")
                .value('S', "size", "size", "ping data size, " + MIN_SIZE + " to " + (BUF_SIZE - 1) + " (default " + DEFAULT_SIZE + ")")
                .flag('v', "verbose", "display ping data to stdout")
                .flag('V', "validate", "validate ping data")
                .flag('d', "debug", "debug printfs")
                .flag('P', "persistent", "persistent server mode allowing multiple connections (served one after another)")
                .flag('q', "self-qp", "use self-created, self-modified QP (not supported here)")
                .value('\0', "timeout", "seconds", "give up when a connection step or a completion takes longer "
                        + "(default 30; a server waits for its client forever unless this is given)");
    }

    /** Reads the flags; returns the exit status when the tool should stop now, else null. */
    private Integer parse(String[] args) {
        Options o = options();
        try {
            if (!o.parse(args, out)) {
                return 0;
            }
            if (!o.positional().isEmpty()) {
                throw new Options.UsageException("unexpected argument " + o.positional().getFirst());
            }
            if (o.has("server") == o.has("client")) {
                throw new Options.UsageException(o.has("server") ? "-s and -c exclude each other" : "-s or -c is required");
            }
            server = o.has("server");
            port = o.integer("port", DEFAULT_PORT, 0, 65535);
            long s = o.number("size", DEFAULT_SIZE, Integer.MIN_VALUE, Integer.MAX_VALUE);
            if (s < MIN_SIZE || s > BUF_SIZE - 1) {
                err.printf("Invalid size %d (valid range is %d to %d)%n", s, MIN_SIZE, BUF_SIZE);
                return EINVAL;
            }
            size = (int) s;
            long c = o.number("count", 0, Integer.MIN_VALUE, Integer.MAX_VALUE);
            if (c < 0) {
                err.printf("Invalid count %d%n", c);
                return EINVAL;
            }
            count = (int) c;
            verbose = o.has("verbose");
            validate = o.has("validate");
            debug = o.has("debug");
            persistent = o.has("persistent");
            int seconds = o.integer("timeout", 30, 1, 86_400);
            timeout = Duration.ofSeconds(seconds);
            acceptTimeout = o.has("timeout") ? timeout : null;
            if (o.has("self-qp")) {
                err.println("rping: -q (a self-created, self-modified QP) is not supported: this rping uses the queue pair "
                        + "that io.github.panamaverbs.cm.Connection creates and connects");
                return EINVAL;
            }
            if (o.has("source")) {
                err.println("rping: -I (the client's source address) is not supported: Connection.connect resolves "
                        + "the route from whichever local address reaches the server");
                return EINVAL;
            }
        } catch (Options.UsageException e) {
            err.println("rping: " + e.getMessage());
            out.print(o.help());
            return EINVAL;
        }
        String a = o.string("addr", "0.0.0.0");
        try {
            address = InetAddress.getByName(a);
        } catch (UnknownHostException e) {
            out.println("getaddrinfo failed (Name or service not known) - invalid hostname or IP address");
            return 254; // main returns EAI_NONAME (-2)
        }
        debug(server ? "server" : "client");
        return null;
    }

    private Connection.Config config(Session session) {
        return new Connection.Config().maxSendWr(SQ_DEPTH).maxRecvWr(RQ_DEPTH).maxSge(1, 1)
                .completionQueueEntries(SQ_DEPTH * 2)
                // rping asks for 7 retries; 6 here: Soft-RoCE takes 7 as "for ever", which the API refuses there
                .parameters(new ConnectionParameters().responderResources(1).initiatorDepth(1).retryCount(6).rnrRetryCount(7))
                .beforeConnect(session::setUp);
    }

    // ---- client ----

    private int runClient() {
        InetSocketAddress peer = new InetSocketAddress(address, port);
        Session s = new Session(false);
        Connection conn;
        try {
            conn = Connection.connect(peer, config(s), timeout);
        } catch (ConnectionException e) {
            reportConnectFailure(e, "rdma_connect");
            return FAILED;
        } catch (VerbsException e) {
            if (noDevice(e)) {
                return NO_DEVICE;
            }
            err.println(e.getMessage());
            err.println("connect error -1");
            return FAILED;
        }
        debug("rdma_resolve_addr - rdma_resolve_route successful");
        debug("ESTABLISHED");
        debug("rdma_connect successful");
        int ret;
        try {
            ret = s.testClient();
        } finally {
            s.close();
        }
        if (ret != 0) {
            err.println("rping client failed: " + ret);
            return FAILED;
        }
        return 0;
    }

    /** rdma_create_event_channel found no device: the C tool's message (its status is ENODEV). */
    private boolean noDevice(VerbsException e) {
        if (e.errno() == NO_DEVICE && e.verb().equals("rdma_create_event_channel")) {
            err.println("No RDMA devices were detected");
            return true;
        }
        return false;
    }

    /** The C tool's lines for a connection that was not made. */
    private void reportConnectFailure(ConnectionException e, String call) {
        CmEvent event = e.event();
        if (event != null) {
            // What rping's CM thread prints before exit(-1).
            err.printf("cma event %s, error %d%n", event.type().cName(), event.status());
        } else if (e.isRejected()) {
            // iWARP: the refusal is the call's own errno; rping says perror(call).
            err.println(call + ": Connection refused");
            err.println("connect error -1");
        } else {
            err.println("rping: " + e.getMessage());
            err.println("connect error -1");
        }
    }

    // ---- server ----

    private int runServer() {
        Common.warmUpAccept(address);
        Listener listener;
        try {
            listener = Listener.bind(new InetSocketAddress(address, port), 3);
        } catch (VerbsException e) {
            if (noDevice(e)) {
                return NO_DEVICE;
            }
            err.println("rdma_bind_addr: " + e.getMessage());
            return FAILED;
        }
        debug("rdma_bind_addr successful");
        debug("rdma_listen");
        try {
            long deadline = System.nanoTime() + (acceptTimeout == null ? 0 : acceptTimeout.toNanos());
            while (true) {
                Session s = new Session(true);
                Connection conn;
                try {
                    conn = accept(listener, s, deadline);
                } catch (ConnectionException | VerbsException e) {
                    if (e instanceof ConnectionException ce && ce.event() != null) {
                        err.printf("cma event %s, error %d%n", ce.event().type().cName(), ce.event().status());
                    } else {
                        err.println("rping: " + e.getMessage());
                    }
                    err.println("connect error -1");
                    if (persistent) {
                        continue;
                    }
                    return FAILED;
                }
                if (conn == null) {
                    err.println("rping: no connection request within " + acceptTimeout.toSeconds() + " s");
                    return FAILED;
                }
                int ret;
                try {
                    ret = s.testServer();
                } finally {
                    s.close();
                }
                if (!persistent) {
                    if (ret != 0) {
                        err.println("rping server failed: " + ret);
                        return FAILED;
                    }
                    return 0;
                }
            }
        } finally {
            listener.close();
        }
    }

    /**
     * Waits for a client until {@code deadline} (without --timeout: for ever; null when it passed), in slices of the timeout, so
     * that a request that came but whose connection did not come about ends the wait with an error.
     */
    private Connection accept(Listener listener, Session s, long deadline) {
        while (true) {
            // Without --timeout, the wait has no end (nanoTime may be negative: no Long.MAX_VALUE deadline).
            long left = acceptTimeout == null ? Long.MAX_VALUE : deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            try {
                Connection c = listener.accept(config(s), Duration.ofNanos(Math.min(left, timeout.toNanos())));
                debug("accepting client connection request");
                return c;
            } catch (ConnectionException e) {
                if (e.event() != null || s.hookRan) {
                    throw e;
                }
                // No request in this slice: wait on.
            }
        }
    }

    // ---- one connection ----

    /** One connection's buffers and test state: rping's struct rping_cb. */
    private final class Session implements AutoCloseable {
        private final boolean isServer;
        private Connection conn;
        private CompletionQueue cq;
        private MemoryRegion recvMr;
        private MemoryRegion sendMr;
        private MemoryRegion rdmaMr;
        private MemoryRegion startMr;
        private ReceiveRequest recv;
        private SendRequest send;
        private SendRequest rdma;
        private final WorkCompletions wc = new WorkCompletions(SQ_DEPTH * 2);
        boolean hookRan;
        private int state = IDLE;
        /** sem_post count: how many state changes the test loop has not waited for yet. */
        private int posted;
        private boolean fatal;
        private long remoteAddr;
        private int remoteRkey;
        private int remoteLen;

        Session(boolean isServer) {
            this.isServer = isServer;
        }

        /** Connection.Config.beforeConnect: the buffers, and the first receive (before the peer can send). */
        void setUp(Connection c) {
            hookRan = true;
            conn = c;
            cq = c.completionQueue();
            debug("created qp %s", c.queuePair());
            // Handed to the connection, which closes them first, also when connecting fails.
            recvMr = c.own(c.protectionDomain().allocateAndRegister(INFO, AccessFlag.LOCAL_WRITE));
            sendMr = c.own(c.protectionDomain().allocateAndRegister(INFO));
            rdmaMr = c.own(c.protectionDomain().allocateAndRegister(size, AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ,
                    AccessFlag.REMOTE_WRITE));
            if (!isServer) {
                startMr = c.own(c.protectionDomain().allocateAndRegister(size, AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ,
                        AccessFlag.REMOTE_WRITE));
            }
            debug("allocated & registered buffers...");
            recv = new ReceiveRequest(1).id(RECV_WRID).sge(recvMr, 0, INFO);
            send = new SendRequest(1).id(SEND_WRID).opcode(SendOpcode.SEND).signaled(true).sge(sendMr, 0, INFO);
            rdma = new SendRequest(1).id(RDMA_WRID).signaled(true);
            c.queuePair().postReceive(recv);
        }

        /**
         * rping_disconnect, rping_free_buffers, rping_free_qp and rdma_destroy_id: the connection
         * disconnects, then closes the memory regions it was handed and its own resources.
         */
        @Override
        public void close() {
            try {
                conn.close();
            } catch (RuntimeException e) {
                err.println("rping: " + e);
            }
        }

        /** rping_format_send: advertises {@code mr} in the send buffer. */
        private void formatSend(MemoryRegion mr) {
            MemorySegment b = sendMr.segment();
            b.set(BE64, 0, mr.address());
            b.set(BE32, 8, mr.rkey());
            b.set(BE32, 12, size);
            debug("RDMA addr %x rkey %x len %d", mr.address(), mr.rkey(), size);
        }

        private void postSend(SendRequest request) {
            conn.queuePair().postSend(request);
        }

        // -- the completion and event handlers (rping's CQ and CM threads), run by await() --

        /**
         * sem_wait: busy-polls the completion queue, and now and then the connection's events, until
         * one of them changes the state; gives up (state ERROR) after the timeout.
         */
        private void await() {
            long deadline = System.nanoTime() + timeout.toNanos();
            long nextEvents = System.nanoTime();
            int idle = 0;
            while (posted == 0) {
                int n = cq.poll(wc);
                if (n > 0) {
                    for (int i = 0; i < n && !fatal; i++) {
                        completion(i);
                    }
                    idle = 0;
                    continue;
                }
                long now = System.nanoTime();
                if (now - nextEvents >= 0) {
                    events();
                    nextEvents = now + 2_000_000;
                    continue;
                }
                if (now - deadline >= 0) {
                    err.println("rping: nothing happened within " + timeout.toSeconds() + " s (state " + state + ")");
                    state = ERROR;
                    posted++;
                    break;
                }
                if (++idle < 256) {
                    Thread.onSpinWait();
                } else {
                    Thread.yield(); // the peer may be on this CPU
                }
            }
            posted--;
        }

        /** rping_cq_event_handler for completion {@code i}. */
        private void completion(int i) {
            WcStatus status = wc.status(i);
            if (status != WcStatus.SUCCESS) {
                if (status == WcStatus.WR_FLUSH_ERR) {
                    return;
                }
                err.printf("cq completion failed status %d%n", status.value());
                error();
                return;
            }
            // if/else rather than a switch on the enum, which would need a synthetic class loaded mid-run.
            WcOpcode opcode = wc.opcode(i);
            if (opcode == WcOpcode.SEND) {
                debug("send completion");
            } else if (opcode == WcOpcode.RDMA_WRITE) {
                debug("rdma write completion");
                state = RDMA_WRITE_COMPLETE;
                posted++;
            } else if (opcode == WcOpcode.RDMA_READ) {
                debug("rdma read completion");
                state = RDMA_READ_COMPLETE;
                posted++;
            } else if (opcode == WcOpcode.RECV) {
                debug("recv completion");
                if (wc.byteLength(i) != INFO) {
                    err.printf("Received bogus data, size %d%n", wc.byteLength(i));
                    err.println("recv wc error: -1");
                    error();
                    return;
                }
                if (isServer) {
                    MemorySegment b = recvMr.segment();
                    remoteRkey = b.get(BE32, 8);
                    remoteAddr = b.get(BE64, 0);
                    remoteLen = b.get(BE32, 12);
                    debug("Received rkey %x addr %x len %d from peer", remoteRkey, remoteAddr, remoteLen);
                    state = state <= CONNECTED || state == RDMA_WRITE_COMPLETE ? RDMA_READ_ADV : RDMA_WRITE_ADV;
                } else {
                    state = state == RDMA_READ_ADV ? RDMA_WRITE_ADV : RDMA_WRITE_COMPLETE;
                }
                // At once, before anything is sent: iWARP has no receiver-not-ready retry.
                conn.queuePair().postReceive(recv);
                posted++;
            } else {
                debug("unknown!!!!! completion");
                error();
            }
        }

        private void error() {
            state = ERROR;
            posted++;
            fatal = true;
        }

        /** rping_cma_event_handler for the events of this connection that came so far. */
        private void events() {
            while (true) {
                Optional<CmEvent> e = conn.id().nextEvent(Duration.ZERO);
                if (e.isEmpty()) {
                    return;
                }
                CmEvent event = e.get();
                debug("cma_event type %s cma_id %s (%s)", event.type().cName(), event.id(), isServer ? "child" : "parent");
                CmEventType type = event.type();
                if (type == CmEventType.DISCONNECTED) {
                    err.printf("%s DISCONNECT EVENT...%n", isServer ? "server" : "client");
                    state = DISCONNECTED;
                    posted++;
                } else if (type == CmEventType.ADDR_ERROR || type == CmEventType.ROUTE_ERROR || type == CmEventType.CONNECT_ERROR
                        || type == CmEventType.UNREACHABLE || type == CmEventType.REJECTED) {
                    err.printf("cma event %s, error %d%n", type.cName(), event.status());
                    error();
                } else if (type == CmEventType.DEVICE_REMOVAL) {
                    err.println("cma detected device removal!!!!");
                    error();
                } else {
                    err.printf("unhandled event: %s, ignoring%n", type.cName());
                }
            }
        }

        /** Waits; false (with rping's message) unless the state is then {@code expected}. */
        private boolean awaitState(int expected, String name) {
            await();
            if (state != expected) {
                err.printf("wait for %s state %d%n", name, state);
                return false;
            }
            return true;
        }

        private int result(int ret) {
            return fatal ? -1 : state == DISCONNECTED ? 0 : ret;
        }

        // -- the test loops --

        /** rping_test_client. */
        int testClient() {
            int start = 'A';
            MemorySegment startBuf = startMr.segment();
            MemorySegment rdmaBuf = rdmaMr.segment();
            for (int ping = 0; count == 0 || ping < count; ping++) {
                state = RDMA_READ_ADV;
                byte[] head = ("rdma-ping-" + ping + ": ").getBytes(StandardCharsets.US_ASCII);
                int cc = Math.min(head.length, size - 1);
                MemorySegment.copy(head, 0, startBuf, ValueLayout.JAVA_BYTE, 0, cc);
                int c = start;
                for (int i = cc; i < size; i++) {
                    startBuf.set(ValueLayout.JAVA_BYTE, i, (byte) c);
                    c++;
                    if (c > 'z') {
                        c = 'A';
                    }
                }
                start++;
                if (start > 'z') {
                    start = 'A';
                }
                startBuf.set(ValueLayout.JAVA_BYTE, size - 1, (byte) 0);

                formatSend(startMr);
                postSend(send);
                if (!awaitState(RDMA_WRITE_ADV, "RDMA_WRITE_ADV")) {
                    return result(-1);
                }
                formatSend(rdmaMr);
                postSend(send);
                if (!awaitState(RDMA_WRITE_COMPLETE, "RDMA_WRITE_COMPLETE")) {
                    return result(-1);
                }
                if (validate && startBuf.mismatch(rdmaBuf) >= 0) {
                    err.println("data mismatch!");
                    return -1;
                }
                if (verbose) {
                    out.println("ping data: " + cString(rdmaBuf));
                }
            }
            return 0;
        }

        /** rping_test_server: until the client disconnects. */
        int testServer() {
            MemorySegment rdmaBuf = rdmaMr.segment();
            while (true) {
                if (!awaitState(RDMA_READ_ADV, "RDMA_READ_ADV")) {
                    return result(-1);
                }
                debug("server received sink adv");
                if (remoteLen < 0 || remoteLen > size) {
                    err.printf("rping: the client's buffer (%d bytes) is larger than this server's (-S %d)%n", remoteLen, size);
                    return -1;
                }
                rdma.opcode(SendOpcode.RDMA_READ).rdma(remoteAddr, remoteRkey).sge(rdmaMr, 0, remoteLen);
                postSend(rdma);
                debug("server posted rdma read req ");
                if (!awaitState(RDMA_READ_COMPLETE, "RDMA_READ_COMPLETE")) {
                    return result(-1);
                }
                debug("server received read complete");
                if (verbose) {
                    out.println("server ping data: " + cString(rdmaBuf));
                }
                postSend(send);
                debug("server posted go ahead");

                if (!awaitState(RDMA_WRITE_ADV, "RDMA_WRITE_ADV")) {
                    return result(-1);
                }
                debug("server received sink adv");
                int len = Math.min(strlen(rdmaBuf) + 1, size);
                rdma.opcode(SendOpcode.RDMA_WRITE).rdma(remoteAddr, remoteRkey).sge(rdmaMr, 0, len);
                debug("rdma write from lkey %x laddr %x len %d", rdmaMr.lkey(), rdmaMr.address(), len);
                postSend(rdma);
                if (!awaitState(RDMA_WRITE_COMPLETE, "RDMA_WRITE_COMPLETE")) {
                    return result(-1);
                }
                debug("server rdma write complete ");
                postSend(send);
                debug("server posted go ahead");
            }
        }
    }

    private static int strlen(MemorySegment s) {
        long n = s.byteSize();
        for (int i = 0; i < n; i++) {
            if (s.get(ValueLayout.JAVA_BYTE, i) == 0) {
                return i;
            }
        }
        return (int) n;
    }

    /** The bytes up to the first NUL, as printf's %s prints them. */
    private static String cString(MemorySegment s) {
        return new String(s.asSlice(0, strlen(s)).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.ISO_8859_1);
    }
}
