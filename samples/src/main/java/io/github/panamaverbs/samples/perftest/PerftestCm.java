package io.github.panamaverbs.samples.perftest;

import io.github.panamaverbs.cm.CmEvent;
import io.github.panamaverbs.cm.CmEventType;
import io.github.panamaverbs.cm.CmId;
import io.github.panamaverbs.cm.ConnectionException;
import io.github.panamaverbs.cm.ConnectionParameters;
import io.github.panamaverbs.cm.EventChannel;
import io.github.panamaverbs.cm.PortSpace;
import io.github.panamaverbs.samples.common.SampleException;
import io.github.panamaverbs.verbs.AccessFlag;
import io.github.panamaverbs.verbs.CompletionQueue;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.MemoryRegion;
import io.github.panamaverbs.verbs.ProtectionDomain;
import io.github.panamaverbs.verbs.QpInitAttributes;
import io.github.panamaverbs.verbs.QpType;
import io.github.panamaverbs.verbs.QueuePair;
import io.github.panamaverbs.verbs.ReceiveRequest;
import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.VerbsException;
import io.github.panamaverbs.verbs.WcStatus;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

/**
 * perftest's {@code -R} ({@code --rdma_cm}, perftest 4.5-0.17): the queue pairs are connected with
 * rdma_cm, and so is the control channel. The one way to connect on iWARP (SoftiWARP, siw), and a
 * second one on RoCE.
 *
 * <ol>
 * <li>{@link Control}: the control connection (perftest's rdma_server_connect / rdma_client_connect).
 * The server listens on the port (default 18515) with backlog 1 and, at the first request, creates
 * an RC queue pair (one 56-byte receive posted), accepts with read/atomic depths 0, 7 retries and 7
 * RNR retries, and stops listening (the port is free again); the client resolves the server's
 * address and route, creates its queue pair, posts its receive and connects with the same
 * parameters. Every message of {@link PerftestLink} is then one signaled SEND of its exact size into
 * the peer's 56-byte receive, which the receiver posts again before it answers.</li>
 * <li>{@link Test}: the test queue pair (perftest's create_rdma_cm_connection): a hand-shake of 56
 * zero bytes, then the server listens again on the same port and accepts the test queue pair (depths
 * 0, or the outstanding reads for read and atomic tests; 7 retries, 7 RNR retries), the client
 * resolves and connects it, and a second hand-shake of zeros. librdmacm moves the queue pair
 * through INIT, RTR and RTS; the per-QP messages that follow carry only the rkey and address that
 * matter (QPN and PSN are informative).</li>
 * <li>The end: the test connection is disconnected (perftest's client waits for DISCONNECTED), then
 * the control connection.</li>
 * </ol>
 *
 * <p>perftest's server listens for the test queue pair only after its side of the first hand-shake,
 * so a client that connects at once may be refused: this client tries again (a fresh ID and queue
 * pair, 100 ms later) until {@code --timeout}; this server listens before it answers that
 * hand-shake, so that perftest's client, which does not really retry, always finds it listening.
 */
final class PerftestCm {
    /** {@code sizeof(struct pingpong_dest)}: perftest's control receive, the largest message. */
    static final int MESSAGE_BYTES = PerftestLink.Key.DEST_BYTES;
    /** perftest's SYNC_SPEC_ID: the work request ID of the control messages. */
    private static final long SYNC_ID = 5;
    /** How often a wait for a control message looks whether the connection ended. */
    private static final long EVENT_CHECK_NANOS = 100_000_000L;
    /** How long the end waits for the DISCONNECTED of a test connection at most. */
    private static final Duration DISCONNECT_WAIT = Duration.ofSeconds(5);
    private static final Duration RETRY_DELAY = Duration.ofMillis(100);

    private PerftestCm() {
    }

    /**
     * perftest's connection parameters: {@code depth} reads and atomics each way, 7 RNR retries, no
     * private data, and 6 transport retries where perftest asks for 7 (which Soft-RoCE takes as "for
     * ever", and the API refuses there); retries are not on the wire, so either side may be perftest's.
     */
    static ConnectionParameters parameters(int depth) {
        return new ConnectionParameters().responderResources(depth).initiatorDepth(depth).retryCount(6).rnrRetryCount(7);
    }

    /** Waits for the next event of {@code id} for ever (a server waiting for its client). */
    private static CmEvent awaitForever(CmId id) {
        while (true) {
            Optional<CmEvent> e = id.nextEvent(Duration.ofSeconds(1));
            if (e.isPresent()) {
                return e.get();
            }
        }
    }

    private static SampleException refused(String server, int port, RuntimeException e) {
        return new SampleException("Couldn't connect to " + server + ":" + port + " with rdma_cm (" + e.getMessage() + ")", e);
    }

    /** Closes each of {@code all} that is not null, in order, keeping the first failure. */
    private static void closeAll(Throwable pending, AutoCloseable... all) {
        RuntimeException first = null;
        for (AutoCloseable c : all) {
            if (c == null) {
                continue;
            }
            try {
                c.close();
            } catch (Exception e) {
                if (pending != null) {
                    pending.addSuppressed(e);
                } else if (first == null) {
                    first = e instanceof RuntimeException r ? r : new IllegalStateException(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /**
     * The control connection: an RC queue pair through rdma_cm with one 56-byte receive always
     * posted, which carries {@link PerftestLink}'s messages.
     */
    static final class Control implements PerftestLink.Transport {
        private final EventChannel channel;
        private final CmId id;
        private final Duration timeout;
        private final ProtectionDomain pd;
        private final CompletionQueue sendCq;
        private final CompletionQueue recvCq;
        private final MemoryRegion mr;
        private final QueuePair qp;
        private final ReceiveRequest recv;
        private final WorkCompletions wc = new WorkCompletions(1);
        private boolean timed = true;
        private boolean connected;

        /** The resources on {@code id}'s device, and the first receive posted. */
        private Control(EventChannel channel, CmId id, Duration timeout) {
            this.channel = channel;
            this.id = id;
            this.timeout = timeout;
            List<AutoCloseable> made = new ArrayList<>();
            try {
                Context ctx = id.context();
                pd = add(made, ctx.allocateProtectionDomain());
                sendCq = add(made, ctx.createCompletionQueue(2));
                recvCq = add(made, ctx.createCompletionQueue(2));
                // [0, 64): the receive; [64, 128): what is sent
                mr = add(made, pd.allocateAndRegister(2 * 64, AccessFlag.LOCAL_WRITE));
                qp = add(made, id.createQueuePair(pd, new QpInitAttributes(QpType.RC, sendCq, recvCq).maxSendWr(2).maxRecvWr(2)));
                recv = new ReceiveRequest(1).id(SYNC_ID).sge(mr, 0, MESSAGE_BYTES);
                qp.postReceive(recv);   // before the peer can send: iWARP has no RNR retry
            } catch (RuntimeException | Error e) {
                java.util.Collections.reverse(made);
                closeAll(e, made.toArray(AutoCloseable[]::new));
                throw e;
            }
        }

        private static <T extends AutoCloseable> T add(List<AutoCloseable> made, T r) {
            made.add(r);
            return r;
        }

        /** The client connects to {@code server}; the server (null) listens on {@code port}, prints the banner and accepts one client. */
        static Control open(String server, int port, Duration timeout, PrintStream out) {
            EventChannel channel;
            try {
                channel = EventChannel.create();
            } catch (VerbsException e) {
                throw new SampleException("rdma_cm: " + e.getMessage(), e);
            }
            CmId id = null;
            Control c = null;
            try {
                if (server != null) {
                    id = channel.createId(PortSpace.TCP);
                    InetSocketAddress to = new InetSocketAddress(server, port);
                    if (to.isUnresolved()) {
                        throw new SampleException("unknown host " + server);
                    }
                    try {
                        id.resolve(to, timeout);
                    } catch (ConnectionException e) {
                        throw refused(server, port, e);
                    }
                    c = new Control(channel, id, timeout);
                    try {
                        id.connect(parameters(0));
                        id.awaitEvent(CmEventType.ESTABLISHED, timeout);
                    } catch (ConnectionException e) {
                        throw refused(server, port, e);
                    }
                } else {
                    CmId listener = channel.createId(PortSpace.TCP);
                    CmEvent request;
                    try {
                        try {
                            listener.bind(new InetSocketAddress(port));
                        } catch (VerbsException e) {
                            throw new SampleException("Couldn't listen to port " + port + " with rdma_cm (" + e.getMessage() + ")", e);
                        }
                        listener.listen(1);
                        out.println("\n************************************\n* Waiting for client to connect... *\n************************************");
                        out.flush();
                        request = awaitForever(listener);
                        if (request.type() != CmEventType.CONNECT_REQUEST) {
                            throw new SampleException("bad event waiting for connect request: " + request);
                        }
                    } finally {
                        listener.close();   // as perftest: the port is free again, for the test QP's listener
                    }
                    id = request.id();
                    c = new Control(channel, id, timeout);
                    id.accept(parameters(0));
                    id.awaitEvent(CmEventType.ESTABLISHED, timeout);
                }
                c.connected = true;
                return c;
            } catch (RuntimeException | Error e) {
                if (c != null) {
                    c.close(e);
                } else {
                    closeAll(e, id, channel);
                }
                throw e;
            }
        }

        @Override
        public void send(byte[] message) {
            if (message.length > MESSAGE_BYTES) {
                throw new IllegalArgumentException(message.length + " bytes do not fit perftest's " + MESSAGE_BYTES + "-byte receive");
            }
            MemorySegment.copy(MemorySegment.ofArray(message), 0, mr.segment(), 64, message.length);
            qp.postSend(new SendRequest(1).id(SYNC_ID).opcode(SendOpcode.SEND).signaled(true).sge(mr, 64, message.length));
            await(sendCq, "send");
        }

        @Override
        public byte[] receive(int bytes) {
            await(recvCq, "receive");
            int got = wc.byteLength(0);
            if (got != bytes) {
                throw new SampleException("the peer sent " + got + " bytes where " + bytes + " were due (is it the same tool, with -R?)");
            }
            byte[] message = mr.segment().asSlice(0, bytes).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
            qp.postReceive(recv);   // before this side answers, so that the peer's next message finds it
            return message;
        }

        /** Polls {@code cq} for its one completion: spinning a little, then parking; looks for the end of the connection now and then. */
        private void await(CompletionQueue cq, String what) {
            long start = System.nanoTime();
            long lastCheck = start;
            int spins = 0;
            while (cq.poll(wc) == 0) {
                if (++spins < 1000) {
                    Thread.onSpinWait();
                    continue;
                }
                LockSupport.parkNanos(20_000);
                long now = System.nanoTime();
                if (now - lastCheck > EVENT_CHECK_NANOS) {
                    lastCheck = now;
                    Optional<CmEvent> e = id.nextEvent(Duration.ZERO);
                    if (e.isPresent() && e.get().type() != CmEventType.TIMEWAIT_EXIT && e.get().type() != CmEventType.ESTABLISHED) {
                        connected = false;
                        if (cq.poll(wc) > 0) {
                            break;   // the peer's last message came in before its disconnect was seen here
                        }
                        throw new SampleException("the rdma_cm control connection ended (" + e.get().type().cName()
                                + ") while waiting for a " + what + ": the peer is gone");
                    }
                    if (timed && now - start > timeout.toNanos()) {
                        throw new SampleException("the peer sent nothing for " + timeout.toSeconds() + " s: it is gone (see --timeout)");
                    }
                }
            }
            WcStatus status = wc.status(0);
            if (status != WcStatus.SUCCESS) {
                throw new SampleException(String.format("control %s completed with status %s (%d), vendor error 0x%x%s", what,
                        status.description(), status.value(), wc.vendorError(0),
                        status == WcStatus.WR_FLUSH_ERR || status == WcStatus.RETRY_EXC_ERR || status == WcStatus.RNR_RETRY_EXC_ERR
                                ? ": the peer is gone" : ""));
            }
        }

        @Override
        public void untimed() {
            timed = false;
        }

        @Override
        public boolean binaryKeys() {
            return true;
        }

        @Override
        public void finish() {
            // perftest's ctx_close_connection sends no "done" over rdma_cm
        }

        @Override
        public void close() {
            close(null);
        }

        private void close(Throwable pending) {
            if (connected) {
                connected = false;
                try {
                    id.disconnect();
                } catch (RuntimeException e) {
                    // the peer went first
                }
            }
            closeAll(pending, qp, mr, sendCq, recvCq, pd, id, channel);
        }
    }

    /**
     * The test queue pair's connection, on an event channel of its own: {@link #start} (the server
     * listens), the first hand-shake, {@link #arrive} (the request, or the resolved server), the
     * resources on {@link #context()}, {@link #connect}, the second hand-shake; {@link #disconnect} at
     * the end, {@link #close} after the resources.
     */
    static final class Test implements AutoCloseable {
        private final EventChannel channel;
        private final String server;
        private final int port;
        private final Duration timeout;
        private CmId listener;
        private CmId id;
        private QueuePair qp;
        private boolean connected;

        private Test(EventChannel channel, String server, int port, Duration timeout) {
            this.channel = channel;
            this.server = server;
            this.port = port;
            this.timeout = timeout;
        }

        /** The server listens on {@code port} at once (before it answers the first hand-shake); the client does nothing yet. */
        static Test start(String server, int port, Duration timeout) {
            Test t = new Test(EventChannel.create(), server, port, timeout);
            if (server == null) {
                try {
                    t.listener = t.channel.createId(PortSpace.TCP);
                    try {
                        t.listener.bind(new InetSocketAddress(port));
                    } catch (VerbsException e) {
                        throw new SampleException("Couldn't listen to port " + port + " for the test QP with rdma_cm ("
                                + e.getMessage() + ")", e);
                    }
                    t.listener.listen(1);
                } catch (RuntimeException | Error e) {
                    t.close(e);
                    throw e;
                }
            }
            return t;
        }

        /** After the first hand-shake: the server takes the client's request, the client resolves the server; returns the device's context. */
        Context arrive() {
            if (server == null) {
                CmEvent e = listener.nextEvent(timeout).orElseThrow(() -> new SampleException(
                        "no rdma_cm connection request for the test QP within " + timeout.toSeconds() + " s: the peer is gone (see --timeout)"));
                if (e.type() != CmEventType.CONNECT_REQUEST) {
                    throw new SampleException("bad event waiting for the test QP's connect request: " + e);
                }
                id = e.id();
            } else {
                id = resolve();
            }
            return id.context();
        }

        private CmId resolve() {
            CmId fresh = channel.createId(PortSpace.TCP);
            try {
                fresh.resolve(new InetSocketAddress(server, port), timeout);
                return fresh;
            } catch (ConnectionException e) {
                fresh.close();
                throw refused(server, port, e);
            } catch (RuntimeException | Error e) {
                fresh.close();
                throw e;
            }
        }

        /** The device the test queue pair is on: create its protection domain, memory and completion queues here. */
        Context context() {
            return id.context();
        }

        /**
         * Creates the queue pair with {@code create} (which also posts the first receives) and
         * accepts (server) or connects (client) with {@link #parameters(int) parameters(depth)}, and
         * waits until the connection is established. A client that is refused (perftest's server
         * does not listen yet) tries again with a fresh ID and queue pair ({@code create} is called
         * again: it must drain its completion queues of the old queue pair's flushed receives) until
         * the timeout.
         */
        QueuePair connect(int depth, Function<CmId, QueuePair> create) {
            if (server == null) {
                qp = create.apply(id);
                id.accept(parameters(depth));
                listener.close();   // as perftest: one connection per QP, then no more listening
                listener = null;
                id.awaitEvent(CmEventType.ESTABLISHED, timeout);
                connected = true;
                return qp;
            }
            long deadline = System.nanoTime() + timeout.toNanos();
            while (true) {
                qp = create.apply(id);
                try {
                    id.connect(parameters(depth));
                    id.awaitEvent(CmEventType.ESTABLISHED, timeout);
                    connected = true;
                    return qp;
                } catch (ConnectionException e) {
                    if (!e.isRejected() || System.nanoTime() - deadline > 0) {
                        throw refused(server, port, e);
                    }
                }
                qp.close();
                qp = null;
                id.close();
                id = null;
                LockSupport.parkNanos(RETRY_DELAY.toNanos());
                id = resolve();
            }
        }

        /**
         * Disconnects (waiting a little for DISCONNECTED, as perftest's client does) and closes the
         * queue pair; again, nothing.
         */
        void disconnect() {
            if (connected) {
                connected = false;
                try {
                    id.disconnect();
                    long deadline = System.nanoTime() + DISCONNECT_WAIT.toNanos();
                    while (System.nanoTime() - deadline < 0) {
                        Optional<CmEvent> e = id.nextEvent(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
                        if (e.isPresent() && e.get().type() == CmEventType.DISCONNECTED) {
                            break;
                        }
                    }
                } catch (RuntimeException e) {
                    // the peer went first, or is gone
                }
            }
            if (qp != null) {
                QueuePair q = qp;
                qp = null;
                q.close();
            }
        }

        /** The IDs and the channel (after {@link #disconnect} and after the resources made on {@link #context()}). */
        @Override
        public void close() {
            close(null);
        }

        private void close(Throwable pending) {
            QueuePair q = qp;
            CmId l = listener;
            CmId i = id;
            qp = null;
            listener = null;
            id = null;
            closeAll(pending, q, l, i, channel);
        }
    }
}
