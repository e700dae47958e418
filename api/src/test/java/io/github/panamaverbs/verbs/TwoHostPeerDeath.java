package io.github.panamaverbs.verbs;

import static io.github.panamaverbs.verbs.TwoHostRc.check;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A peer whose whole host dies mid-stream (issue 16's "peer death", two hosts): run as
 * {@code TwoHostPeerDeath server} on host A and {@code TwoHostPeerDeath client SERVER_IP} on host B
 * (see scripts/two-host-it --peer-death). The client streams checksummed sends and RDMA writes into
 * the server with the default {@link ConnectOptions}, {@value #WINDOW} requests outstanding; the
 * server checks each message, and after {@value #KILL_AFTER} of them writes its exit status where
 * the harness reads it ({@code RDMA_STATUS_FILE}) and resets its own machine at once through
 * {@code /proc/sysrq-trigger} (no shutdown, no disconnect: the power cut of a real host; QEMU exits).
 * The client must then see its outstanding requests complete, the first with
 * {@code RETRY_EXC_ERR} and the rest flushed, within {@value #BOUND_S} s, and prints how long after
 * the last request the peer acknowledged that took.
 */
public final class TwoHostPeerDeath {
    private static final int PORT = 18621;
    private static final int MSG = 4096;
    private static final int WINDOW = 16;
    private static final int KILL_AFTER = 500;
    private static final int BOUND_S = 10;

    private TwoHostPeerDeath() {
    }

    /** {@code server} or {@code client SERVER_IP}. */
    public static void main(String[] args) throws Exception {
        String device = System.getenv().getOrDefault("RDMA_DEVICE", "rxe0");
        int gidIndex = Integer.parseInt(System.getenv().getOrDefault("RDMA_GID_INDEX", "1"));
        boolean server = args.length > 0 && args[0].equals("server");
        try (Context ctx = Device.open(device);
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             CompletionQueue cq = ctx.createCompletionQueue(4 * WINDOW);
             QueuePair qp = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq)
                     .maxSendWr(2 * WINDOW).maxRecvWr(2 * WINDOW));
             MemoryRegion mr = pd.allocateAndRegister(2L * WINDOW * MSG, AccessFlag.LOCAL_WRITE,
                     AccessFlag.REMOTE_WRITE);
             Socket socket = server ? TwoHostRc.accept(PORT) : new Socket(InetAddress.getByName(args[1]), PORT)) {
            socket.setSoTimeout(60_000);
            ConnectOptions how = ConnectOptions.port(1).gidIndex(gidIndex);
            DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            DataInputStream in = new DataInputStream(socket.getInputStream());
            TwoHostRc.Peer peer = TwoHostRc.exchange(qp, how, mr, out, in);
            qp.toInit(how);
            if (server) {
                serve(qp, cq, mr, peer.endpoint(), how, out);
            } else {
                qp.connect(peer.endpoint(), how);
                check(in.readUTF().equals("ready"), "server ready");
                stream(qp, cq, mr, peer.address(), peer.rkey());
            }
        }
    }

    private static void serve(QueuePair qp, CompletionQueue cq, MemoryRegion mr, RemoteEndpoint peer,
            ConnectOptions how, DataOutputStream out) throws Exception {
        ReceiveRequest recv = new ReceiveRequest(1);
        for (int i = 0; i < WINDOW; i++) {
            qp.postReceive(recv.id(i).sge(mr, (long) i * MSG, MSG));
        }
        qp.connect(peer, how);
        out.writeUTF("ready");
        out.flush();
        WorkCompletions wc = new WorkCompletions(WINDOW);
        int received = 0;
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (received < KILL_AFTER) {
            int n = cq.poll(wc);
            for (int i = 0; i < n; i++) {
                check(wc.status(i) == WcStatus.SUCCESS && wc.opcode(i) == WcOpcode.RECV,
                        "server: expected a received send, got " + wc);
                int slot = (int) wc.wrId(i);
                MemorySegment msg = mr.segment().asSlice((long) slot * MSG, MSG);
                check(msg.get(JAVA_INT, 0) == received, "server: message " + received + " out of order: "
                        + msg.get(JAVA_INT, 0));
                checkPattern(msg, received, "server: message " + received);
                if (received % 4 == 3) { // an RDMA write came before this send, in order
                    MemorySegment written = mr.segment().asSlice((WINDOW + received / 4 % WINDOW) * (long) MSG, MSG);
                    check(written.get(JAVA_INT, 0) == received, "server: RDMA write " + received + " not there");
                    checkPattern(written, received, "server: RDMA write " + received);
                }
                received++;
                qp.postReceive(recv.id(slot).sge(mr, (long) slot * MSG, MSG));
            }
            check(System.nanoTime() < deadline, "server: timed out after " + received + " messages");
        }
        System.out.println("server: " + received + " messages checked; resetting this host now");
        System.out.flush();
        String statusFile = System.getenv("RDMA_STATUS_FILE");
        check(statusFile != null, "server: RDMA_STATUS_FILE is not set (run through scripts/with-rdma)");
        Files.writeString(Path.of(statusFile), "0\n");
        // 'b': reboot at once, without syncing, unmounting or shutting devices down; QEMU runs
        // with -no-reboot, so the VM (and its NIC) ends here.
        Files.writeString(Path.of("/proc/sysrq-trigger"), "b");
        Thread.sleep(30_000);
        throw new AssertionError("server: the host did not reset");
    }

    private static void stream(QueuePair qp, CompletionQueue cq, MemoryRegion mr, long peerAddress,
            int peerRkey) {
        SendRequest send = new SendRequest(1).signaled(true);
        WorkCompletions wc = new WorkCompletions(2 * WINDOW);
        long seq = 0;          // messages posted (each a send, every 4th also preceded by a write)
        int outstanding = 0;
        long completed = 0;
        long lastSuccess = System.nanoTime();
        long bound = 0;
        WcStatus first = null;
        int flushed = 0;
        while (true) {
            while (first == null && outstanding < WINDOW) {
                int slot = (int) (seq % WINDOW);
                MemorySegment msg = mr.segment().asSlice((long) (WINDOW + slot) * MSG, MSG);
                fillPattern(msg, (int) seq);
                msg.set(JAVA_INT, 0, (int) seq);
                if (seq % 4 == 3) {
                    // Into the server's second half, one of WINDOW places by seq / 4: the client runs at
                    // most 2 * WINDOW messages ahead of the server's checks (WINDOW receives posted,
                    // WINDOW requests outstanding), so a place is not written again before it is read.
                    qp.postSend(send.id(-seq).opcode(SendOpcode.RDMA_WRITE).sge(mr, (long) (WINDOW + slot) * MSG, MSG)
                            .rdma(peerAddress + (WINDOW + seq / 4 % WINDOW) * MSG, peerRkey));
                    outstanding++;
                }
                qp.postSend(send.id(seq).opcode(SendOpcode.SEND).sge(mr, (long) (WINDOW + slot) * MSG, MSG));
                outstanding++;
                seq++;
            }
            int n = cq.poll(wc);
            for (int i = 0; i < n; i++) {
                outstanding--;
                WcStatus status = wc.status(i);
                if (status == WcStatus.SUCCESS) {
                    check(first == null, "client: a success after the error: " + wc);
                    completed++;
                    lastSuccess = System.nanoTime();
                } else if (first == null) {
                    first = status;
                    bound = System.nanoTime();
                    System.out.printf("client: %d requests completed; then %s %.3f s after the last"
                            + " acknowledged one%n", completed, status, (bound - lastSuccess) / 1e9);
                } else {
                    check(status == WcStatus.WR_FLUSH_ERR, "client: after the first error, expected"
                            + " WR_FLUSH_ERR, got " + wc);
                    flushed++;
                }
            }
            if (first != null && outstanding == 0) {
                break;
            }
            check((System.nanoTime() - lastSuccess) / 1_000_000_000L < BOUND_S, "client: " + outstanding
                    + " requests still outstanding " + BOUND_S + " s after the last acknowledged one");
        }
        check(completed >= KILL_AFTER, "client: only " + completed + " requests completed before the error");
        check(first == WcStatus.RETRY_EXC_ERR, "client: the first error was " + first + ", not RETRY_EXC_ERR");
        QpState state = qp.query().state();
        System.out.printf("client: peer host gone: %s within %.3f s (bound %d s), %d more flushed, the queue"
                + " pair is in %s%n", first, (bound - lastSuccess) / 1e9, BOUND_S, flushed, state);
        check(state == QpState.ERR, "client: queue pair in " + state + ", not ERR");
    }

    private static void fillPattern(MemorySegment s, int seed) {
        for (long i = 4; i < s.byteSize(); i++) {
            s.set(JAVA_BYTE, i, (byte) (i * 31 + seed));
        }
    }

    private static void checkPattern(MemorySegment s, int seed, String what) {
        for (long i = 4; i < s.byteSize(); i++) {
            if (s.get(JAVA_BYTE, i) != (byte) (i * 31 + seed)) {
                throw new AssertionError(what + ": byte " + i + " differs");
            }
        }
    }
}
