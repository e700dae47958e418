package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;

/**
 * The RC exchange of the integration tests between two hosts, each with its own device: run as
 * {@code TwoHostRc server} on one and {@code TwoHostRc client SERVER_IP} on the other (see
 * scripts/two-host-it). The endpoints, buffer addresses and rkeys travel over TCP; then the client
 * RDMA-writes 64 KiB into the server, reads 64 KiB back from it, adds to a counter there with an
 * atomic, and sends a message; the server checks every byte and answers with a send of its own.
 * Exits 0 only if every check passes on both sides.
 */
public final class TwoHostRc {
    private static final int PORT = 18620;
    private static final int SIZE = 1 << 16;

    private TwoHostRc() {
    }

    /** {@code server} or {@code client SERVER_IP}. */
    public static void main(String[] args) throws Exception {
        String device = System.getenv().getOrDefault("RDMA_DEVICE", "rxe0");
        int gidIndex = Integer.parseInt(System.getenv().getOrDefault("RDMA_GID_INDEX", "1"));
        boolean server = args.length > 0 && args[0].equals("server");
        try (Context ctx = Device.open(device);
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             CompletionQueue cq = ctx.createCompletionQueue(16);
             QueuePair qp = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq));
             MemoryRegion mr = pd.allocateAndRegister(4L * SIZE, AccessFlag.REMOTE_WRITE, AccessFlag.REMOTE_READ,
                     AccessFlag.REMOTE_ATOMIC);
             Socket socket = server ? accept(PORT) : new Socket(InetAddress.getByName(args[1]), PORT)) {
            socket.setSoTimeout(60_000);
            ConnectOptions how = ConnectOptions.port(1).gidIndex(gidIndex);
            DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            DataInputStream in = new DataInputStream(socket.getInputStream());
            Peer remote = exchange(qp, how, mr, out, in);
            long peerAddress = remote.address();
            int peerRkey = remote.rkey();
            MemorySegment buf = mr.segment();
            WorkCompletions wc = new WorkCompletions(4);
            if (server) {
                fill(buf.asSlice(SIZE, SIZE), 2);           // what the client will read
                buf.set(JAVA_LONG, 3L * SIZE, 40);           // the counter
                qp.toInit(how); // receives may be posted from INIT on, before the peer is known
                qp.postReceive(new ReceiveRequest(1).id(1).sge(mr, 2L * SIZE, 256));
                qp.connect(remote.endpoint(), how);
                out.writeUTF("ready");
                expect(cq, wc, WcOpcode.RECV);
                check(buf.asSlice(0, SIZE), 1, "RDMA write from the client");
                check(buf.asSlice(2L * SIZE, 256), 3, "send from the client");
                check(buf.get(JAVA_LONG, 3L * SIZE) == 42, "counter after the client's fetch-and-add: "
                        + buf.get(JAVA_LONG, 3L * SIZE));
                fill(buf.asSlice(0, 128), 4);
                qp.postSend(new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(mr, 0, 128));
                expect(cq, wc, WcOpcode.SEND);
            } else {
                qp.toInit(how);
                qp.postReceive(new ReceiveRequest(1).id(1).sge(mr, 3L * SIZE, 128));
                qp.connect(remote.endpoint(), how);
                check(in.readUTF().equals("ready"), "server ready");
                fill(buf.asSlice(0, SIZE), 1);
                qp.postSend(new SendRequest(1).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(mr, 0, SIZE)
                        .rdma(peerAddress, peerRkey));
                expect(cq, wc, WcOpcode.RDMA_WRITE);
                qp.postSend(new SendRequest(1).opcode(SendOpcode.RDMA_READ).signaled(true).sge(mr, SIZE, SIZE)
                        .rdma(peerAddress + SIZE, peerRkey));
                expect(cq, wc, WcOpcode.RDMA_READ);
                check(buf.asSlice(SIZE, SIZE), 2, "RDMA read from the server");
                qp.postSend(new SendRequest(1).opcode(SendOpcode.ATOMIC_FETCH_AND_ADD).signaled(true)
                        .sge(mr, 2L * SIZE + 1024, 8).atomic(peerAddress + 3L * SIZE, peerRkey, 2, 0));
                expect(cq, wc, WcOpcode.FETCH_ADD);
                check(buf.get(JAVA_LONG, 2L * SIZE + 1024) == 40, "fetch-and-add old value");
                fill(buf.asSlice(2L * SIZE, 256), 3);
                qp.postSend(new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(mr, 2L * SIZE, 256));
                expect(cq, wc, WcOpcode.SEND);
                expect(cq, wc, WcOpcode.RECV);
                check(buf.asSlice(3L * SIZE, 128), 4, "send from the server");
            }
            System.out.println((server ? "server" : "client") + ": all transfers checked");
        }
    }

    /** What the other host sent: its queue pair's endpoint and its buffer's address and rkey. */
    record Peer(RemoteEndpoint endpoint, long address, int rkey) {
    }

    /** Sends this host's endpoint, buffer address and rkey over TCP, and reads the other host's. */
    static Peer exchange(QueuePair qp, ConnectOptions how, MemoryRegion mr, DataOutputStream out, DataInputStream in)
            throws java.io.IOException {
        out.write(qp.localEndpoint(how).toBytes());
        out.writeLong(mr.address());
        out.writeInt(mr.rkey());
        out.flush();
        byte[] peer = new byte[RemoteEndpoint.BYTES];
        in.readFully(peer);
        return new Peer(RemoteEndpoint.fromBytes(peer), in.readLong(), in.readInt());
    }

    /** Accepts the one connection of the other host on {@code port} (2 minutes at most). */
    static Socket accept(int port) throws Exception {
        try (ServerSocket listener = new ServerSocket(port)) {
            listener.setSoTimeout(120_000);
            return listener.accept();
        }
    }

    private static void fill(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(JAVA_BYTE, i, (byte) (i * 7 + seed));
        }
    }

    private static void check(MemorySegment s, int seed, String what) {
        for (long i = 0; i < s.byteSize(); i++) {
            if (s.get(JAVA_BYTE, i) != (byte) (i * 7 + seed)) {
                throw new AssertionError(what + ": byte " + i + " differs");
            }
        }
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    private static void expect(CompletionQueue cq, WorkCompletions wc, WcOpcode opcode) {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (cq.poll(wc) == 0) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + opcode);
            }
            Thread.onSpinWait();
        }
        if (wc.status(0) != WcStatus.SUCCESS || wc.opcode(0) != opcode) {
            throw new AssertionError("expected " + opcode + ", got " + wc);
        }
    }
}
