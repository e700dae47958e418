package io.github.panamaverbs.samples.rdmacm;

import io.github.panamaverbs.cm.CmEvent;
import io.github.panamaverbs.cm.CmEventType;
import io.github.panamaverbs.cm.Connection;
import io.github.panamaverbs.cm.ConnectionException;
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
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;

/**
 * {@code rdma-server} and {@code rdma-client}: rdmacm-utils' smallest connection-manager examples
 * ({@code librdmacm/examples/rdma_server.c} and {@code rdma_client.c}), with their flags, output
 * lines, exit statuses and wire protocol, so that either side can be the C tool. The client
 * connects, sends 16 bytes and waits for 16 bytes back; the server accepts, waits for the 16 bytes,
 * answers with 16 of its own and disconnects. Both sides post their receive before connecting
 * (iWARP has no receiver-not-ready retry), send inline when the queue pair allows 16 inline bytes
 * (else from a registered buffer, saying so as the C tools do), and signal every send.
 *
 * <p>Differences from the C tools: every wait (for the client's request too) ends after
 * {@code --timeout} seconds with an error instead of blocking for ever; completions are polled
 * without a completion channel; and, where the C tools look at neither the status nor the content
 * of what they receive, these check that the receive completed with status SUCCESS, that it
 * brought 16 bytes, and that they are the 16 zero bytes that both the C and the Java tools send.
 */
public final class RdmaExamples {
    private static final String DEFAULT_PORT = "7471";
    /** The message: 16 bytes each way, all zero (the C tools' static buffers, never written). */
    private static final int MSG = 16;
    /** main returning -1. */
    private static final int FAILED = 255;
    private static final int DEFAULT_TIMEOUT = 30;
    private static final long RECV_WRID = 1;
    private static final long SEND_WRID = 2;
    /** What the receive buffer holds before the message overwrites it (so that the zero check means something). */
    private static final byte UNWRITTEN = (byte) 0xa5;
    /** How long a side keeps polling for a completion after the peer disconnected (it may be on its way). */
    private static final Duration AFTER_DISCONNECT = Duration.ofSeconds(2);

    /** A step that failed: printed as perror prints it, {@code call: why}, on stderr. */
    private static final class Failure extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final String call;

        Failure(String call, String why) {
            super(why);
            this.call = call;
        }
    }

    private final boolean isServer;
    /** rdma_server or rdma_client: the prefix of the C tools' lines. */
    private final String name;
    /** rdma-server or rdma-client. */
    private final String tool;
    private final PrintStream out;
    private final PrintStream err;
    private String host;
    private String port;
    private Duration timeout;

    private RdmaExamples(boolean isServer, PrintStream out, PrintStream err) {
        this.isServer = isServer;
        this.name = isServer ? "rdma_server" : "rdma_client";
        this.tool = isServer ? "rdma-server" : "rdma-client";
        this.out = out;
        this.err = err;
    }

    /** The launcher's {@code rdma-server}: messages that the C tool prints with perror go to {@link System#err}. */
    public static int server(String[] args, PrintStream out) {
        return run(true, args, out, System.err);
    }

    /** The launcher's {@code rdma-client}. */
    public static int client(String[] args, PrintStream out) {
        return run(false, args, out, System.err);
    }

    /** Runs one side; returns the C tool's exit status (0, 1 for a usage error, 255 for a failure). */
    static int run(boolean isServer, String[] args, PrintStream out, PrintStream err) {
        RdmaExamples r = new RdmaExamples(isServer, out, err);
        try {
            Integer status = r.parse(args);
            if (status != null) {
                return status;
            }
            out.println(r.name + ": start");
            int ret;
            try {
                r.run();
                ret = 0;
            } catch (Failure f) {
                out.flush();
                err.println(f.call + ": " + f.getMessage());
                ret = -1;
            } catch (RuntimeException e) {
                out.flush();
                err.println(r.name + ": " + e);
                ret = -1;
            }
            out.println(r.name + ": end " + ret);
            return ret == 0 ? 0 : FAILED;
        } finally {
            out.flush();
            err.flush();
        }
    }

    private Options options() {
        return new Options("Usage: samples/run " + tool + " [-s server_address] [-p port_number] [--timeout seconds]\n"
                + "As rdmacm-utils' " + name + ", with which it interoperates either way: the "
                + (isServer ? "server accepts one client, receives 16 bytes, answers with 16 bytes and disconnects."
                        : "client connects, sends 16 bytes and waits for the server's 16 bytes."))
                .value('s', "server", "server_address", isServer ? "the address to listen on (default 0.0.0.0: every RDMA device)"
                        : "the server's address (default 127.0.0.1)")
                .value('p', "port", "port_number", "the port (default " + DEFAULT_PORT + ")")
                .value('\0', "timeout", "seconds", "give up when a step (" + (isServer ? "the client's request, " : "")
                        + "a connection step, a completion) takes longer (default " + DEFAULT_TIMEOUT + ")");
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
            timeout = Duration.ofSeconds(o.integer("timeout", DEFAULT_TIMEOUT, 1, 86_400));
        } catch (Options.UsageException e) {
            // The C tools' getopt says what was wrong on stderr, then main prints its usage.
            err.println(tool + ": " + e.getMessage());
            err.flush();
            out.println("usage: " + tool);
            out.println("\t[-s server_address]");
            out.println("\t[-p port_number]");
            out.println("\t[--timeout seconds]");
            return 1;
        }
        host = o.string("server", isServer ? "0.0.0.0" : "127.0.0.1");
        port = o.string("port", DEFAULT_PORT);
        return null;
    }

    /** rdma_getaddrinfo: the address and port, numeric or a host name. */
    private InetSocketAddress address() {
        int p;
        try {
            p = Integer.parseInt(port);
        } catch (NumberFormatException e) {
            p = -1;
        }
        if (p < 0 || p > 65535) {
            throw new Failure("rdma_getaddrinfo", "not a port number: " + port);
        }
        try {
            return new InetSocketAddress(InetAddress.getByName(host), p);
        } catch (UnknownHostException e) {
            throw new Failure("rdma_getaddrinfo", "Name or service not known: " + host);
        }
    }

    private Connection.Config config(Session s) {
        return new Connection.Config().maxSendWr(1).maxRecvWr(1).maxSge(1, 1).maxInlineData(MSG).beforeConnect(s::setUp);
    }

    private void run() {
        if (isServer) {
            runServer();
        } else {
            runClient();
        }
    }

    // ---- rdma_server ----

    private void runServer() {
        InetSocketAddress local = address();
        Common.warmUpAccept(local.getAddress());
        Listener listener;
        try {
            listener = Listener.bind(local, 0);
        } catch (VerbsException e) {
            // rdma_create_ep binds; rdma_listen is a call of its own.
            throw new Failure(e.verb().equals("rdma_listen") ? "rdma_listen" : "rdma_create_ep", e.getMessage());
        }
        try (listener) {
            Session s = new Session();
            Connection conn;
            try {
                conn = listener.accept(config(s), timeout);
            } catch (Failure f) {
                s.abandon();
                throw f;
            } catch (ConnectionException | VerbsException e) {
                s.abandon();
                if (!s.hookRan) {
                    throw new Failure("rdma_get_request", e instanceof ConnectionException ce && ce.event() == null
                            ? "no connection request within " + timeout.toSeconds() + " s" : e.getMessage());
                }
                throw new Failure("rdma_accept", e.getMessage());
            }
            try {
                s.await(RECV_WRID, "rdma_get_recv_comp");
                s.checkReceived();
                s.postSend();
                s.await(SEND_WRID, "rdma_get_send_comp");
            } finally {
                s.close();
            }
        }
    }

    // ---- rdma_client ----

    private void runClient() {
        InetSocketAddress server = address();
        Session s = new Session();
        Connection conn;
        try {
            conn = Connection.connect(server, config(s), timeout);
        } catch (Failure f) {
            s.abandon();
            throw f;
        } catch (ConnectionException e) {
            s.abandon();
            throw connectFailure(e, s.hookRan);
        } catch (VerbsException e) {
            s.abandon();
            throw new Failure(s.hookRan ? "rdma_connect" : "rdma_create_ep", e.getMessage());
        }
        try {
            s.postSend();
            s.await(SEND_WRID, "rdma_get_send_comp");
            s.await(RECV_WRID, "rdma_get_recv_comp");
            s.checkReceived();
        } finally {
            s.close();
        }
    }

    /**
     * The C tool's perror line for a connection that was not made: rdma_create_ep (which resolves
     * the address and route, and creates the queue pair) or rdma_connect.
     */
    private Failure connectFailure(ConnectionException e, boolean connecting) {
        CmEvent event = e.event();
        if (e.isRejected()) {
            // librdmacm's synchronous rdma_connect turns REJECTED into ECONNREFUSED; iWARP's call fails with it.
            if (event != null) {
                err.println(name + ": the server rejected the connection: " + event.type().cName() + ", "
                        + event.statusText());
            } else {
                err.println(name + ": the server refused the connection (nobody listens on " + host + ":" + port + ")");
            }
            return new Failure("rdma_connect", "Connection refused");
        }
        if (event != null && (event.type() == CmEventType.ADDR_ERROR || event.type() == CmEventType.ROUTE_ERROR)) {
            return new Failure("rdma_create_ep", event.type().cName() + ", " + event.statusText());
        }
        if (event != null) {
            return new Failure("rdma_connect", event.type().cName() + ", " + event.statusText());
        }
        return new Failure(connecting ? "rdma_connect" : "rdma_create_ep", e.getMessage());
    }

    // ---- one connection ----

    /** The connection's buffers, requests and completions. */
    private final class Session implements AutoCloseable {
        private Connection conn;
        private CompletionQueue cq;
        private MemoryRegion recvMr;
        private MemoryRegion sendMr;
        private final Arena arena = Arena.ofShared();
        private final WorkCompletions wc = new WorkCompletions(2);
        private SendRequest send;
        /** Set once the beforeConnect hook ran: the connection (or accept) itself failed after it. */
        boolean hookRan;
        // The completion of each request, once polled.
        private WcStatus recvStatus;
        private WcOpcode recvOpcode;
        private int recvLength;
        private WcStatus sendStatus;

        /**
         * Connection.Config.beforeConnect: the queue pair exists. The inline decision, the buffers and
         * the receive, posted before the peer can send.
         */
        void setUp(Connection c) {
            hookRan = true;
            conn = c;
            cq = c.completionQueue();
            boolean inline = c.queuePair().capabilities().maxInlineData() >= MSG;
            if (!inline) {
                out.println(name + ": device doesn't support IBV_SEND_INLINE, using sge sends");
            }
            try {
                recvMr = c.protectionDomain().allocateAndRegister(MSG, AccessFlag.LOCAL_WRITE);
            } catch (RuntimeException e) {
                throw new Failure("rdma_reg_msgs for recv_msg", e.getMessage());
            }
            recvMr.segment().fill(UNWRITTEN);
            send = new SendRequest(1).id(SEND_WRID).opcode(SendOpcode.SEND).signaled(true);
            if (inline) {
                send.inlineData(arena.allocate(MSG));
            } else {
                try {
                    sendMr = c.protectionDomain().allocateAndRegister(MSG, AccessFlag.LOCAL_WRITE);
                } catch (RuntimeException e) {
                    throw new Failure("rdma_reg_msgs for send_msg", e.getMessage());
                }
                send.sge(sendMr, 0, MSG);
            }
            try {
                c.queuePair().postReceive(new ReceiveRequest(1).id(RECV_WRID).sge(recvMr, 0, MSG));
            } catch (RuntimeException e) {
                throw new Failure("rdma_post_recv", e.getMessage());
            }
        }

        void postSend() {
            try {
                conn.queuePair().postSend(send);
            } catch (RuntimeException e) {
                throw new Failure("rdma_post_send", e.getMessage());
            }
        }

        /**
         * rdma_get_send_comp / rdma_get_recv_comp: polls until the completion of request {@code wrId}
         * is in, at most the timeout; fails unless its status is SUCCESS. Watches the connection's
         * events too: a peer that disconnected ends the wait (after a grace, for a completion that
         * may still be on its way).
         */
        void await(long wrId, String call) {
            long now = System.nanoTime();
            long deadline = now + timeout.toNanos();
            long disconnectedAt = 0;
            boolean disconnected = false;
            long idleSince = now;
            long nextEvents = now;
            int idle = 0;
            while (status(wrId) == null) {
                int n = cq.poll(wc);
                if (n > 0) {
                    for (int i = 0; i < n; i++) {
                        record(i);
                    }
                    idle = 0;
                    idleSince = System.nanoTime();
                    continue;
                }
                now = System.nanoTime();
                if (now - deadline >= 0) {
                    throw new Failure(call, "no completion within " + timeout.toSeconds() + " s"
                            + (disconnected ? " (the peer disconnected)" : ""));
                }
                if (disconnected && now - disconnectedAt >= AFTER_DISCONNECT.toNanos()) {
                    throw new Failure(call, "the peer disconnected before the "
                            + (wrId == RECV_WRID ? "message came" : "send completed"));
                }
                if (!disconnected && now - nextEvents >= 0) {
                    nextEvents = now + 5_000_000;
                    Optional<CmEvent> e = conn.id().nextEvent(Duration.ZERO);
                    if (e.isPresent()) {
                        CmEvent event = e.get();
                        if (event.type() == CmEventType.DISCONNECTED) {
                            disconnected = true;
                            disconnectedAt = now;
                        } else if (event.type() == CmEventType.DEVICE_REMOVAL) {
                            throw new Failure(call, "the device was removed");
                        }
                    }
                    continue;
                }
                if (++idle < 1000) {
                    Thread.onSpinWait();
                } else if (now - idleSince < 20_000_000) {
                    Thread.yield(); // the peer may be on this CPU
                } else {
                    LockSupport.parkNanos(500_000); // nothing for a while: stop burning the CPU that others share
                }
            }
            WcStatus status = status(wrId);
            if (status != WcStatus.SUCCESS) {
                throw new Failure(call, "completion status " + status + " (" + status.value() + ", " + status.description() + ")"
                        + (status == WcStatus.WR_FLUSH_ERR ? ": the connection was closed" : ""));
            }
        }

        private WcStatus status(long wrId) {
            return wrId == RECV_WRID ? recvStatus : sendStatus;
        }

        private void record(int i) {
            if (wc.wrId(i) == RECV_WRID) {
                recvStatus = wc.status(i);
                recvOpcode = wc.status(i) == WcStatus.SUCCESS ? wc.opcode(i) : null;
                recvLength = wc.status(i) == WcStatus.SUCCESS ? wc.byteLength(i) : -1;
            } else if (wc.wrId(i) == SEND_WRID) {
                sendStatus = wc.status(i);
            } else {
                throw new Failure(name, "a completion of unknown work request " + wc.wrId(i));
            }
        }

        /** What the C tools do not check: a receive of 16 bytes, the 16 zero bytes that the peer sends. */
        void checkReceived() {
            if (recvOpcode != WcOpcode.RECV) {
                throw new Failure("rdma_get_recv_comp", "the receive completed with opcode " + recvOpcode + ", not RECV");
            }
            if (recvLength != MSG) {
                throw new Failure("rdma_get_recv_comp", "received " + recvLength + " bytes, not " + MSG);
            }
            byte[] got = recvMr.segment().asSlice(0, MSG).toArray(ValueLayout.JAVA_BYTE);
            for (byte b : got) {
                if (b != 0) {
                    throw new Failure("rdma_get_recv_comp", "received " + HexFormat.of().formatHex(got) + ", not the "
                            + MSG + " zero bytes that " + (isServer ? "rdma_client" : "rdma_server") + " sends");
                }
            }
        }

        /**
         * After a failed connect or accept: the API closed what it could, but not the protection
         * domain while our memory regions were registered in it. Close them, then it.
         */
        void abandon() {
            closeRegions();
            if (conn != null && !conn.protectionDomain().isClosed()) {
                try {
                    conn.protectionDomain().close();
                } catch (RuntimeException e) {
                    err.println(name + ": " + e);
                }
            }
            arena.close();
        }

        private void closeRegions() {
            for (MemoryRegion mr : new MemoryRegion[] {sendMr, recvMr}) {
                if (mr != null && !mr.isClosed()) {
                    try {
                        mr.close();
                    } catch (RuntimeException e) {
                        err.println(name + ": " + e);
                    }
                }
            }
        }

        /** rdma_disconnect, rdma_dereg_mr and rdma_destroy_ep. */
        @Override
        public void close() {
            try {
                conn.id().disconnect(); // flushes the queue pair before its buffers go
            } catch (RuntimeException ignored) {
                // the peer disconnected first
            }
            closeRegions();
            try {
                conn.close();
            } catch (RuntimeException e) {
                err.println(name + ": " + e);
            }
            arena.close();
        }
    }
}
