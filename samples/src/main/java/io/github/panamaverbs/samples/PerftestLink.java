package io.github.panamaverbs.samples;

import io.github.panamaverbs.verbs.Gid;
import io.github.panamaverbs.verbs.RemoteEndpoint;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The TCP side of the perftest-like tools (one place for it): the connection between client and
 * server, perftest's per-QP message ({@code KEY_PRINT_FMT_GID}), byte exchanges used as barriers,
 * and the close. Every read gives up after the tool's {@code --timeout} with a message saying the
 * peer is gone; {@link #untimed()} lifts that for a passive side that waits out the measurement.
 */
final class PerftestLink implements AutoCloseable {
    /** perftest's KEY_MSG_SIZE_GID. */
    static final int KEY_MSG_BYTES = 108;

    private final Socket socket;
    private final Duration timeout;
    private final boolean client;

    private PerftestLink(Socket socket, Duration timeout, boolean client) {
        this.socket = socket;
        this.timeout = timeout;
        this.client = client;
    }

    /**
     * Connects to {@code server} (the client), or when it is null listens on {@code port}, prints
     * perftest's "Waiting for client" banner on {@code out} and accepts one client (the server).
     */
    static PerftestLink open(String server, int port, Duration timeout, PrintStream out) {
        try {
            if (server != null) {
                Socket s = new Socket();
                try {
                    s.connect(new InetSocketAddress(server, port), (int) timeout.toMillis());
                } catch (ConnectException | SocketTimeoutException e) {
                    s.close();
                    throw new SampleException("Couldn't connect to " + server + ":" + port + " (" + e.getMessage() + ")");
                }
                s.setSoTimeout((int) timeout.toMillis());
                return new PerftestLink(s, timeout, true);
            }
            try (ServerSocket ss = new ServerSocket()) {
                ss.setReuseAddress(true);
                ss.bind(new InetSocketAddress(port), 1);
                out.println("\n************************************\n* Waiting for client to connect... *\n************************************");
                out.flush();
                Socket s = ss.accept();
                s.setSoTimeout((int) timeout.toMillis());
                return new PerftestLink(s, timeout, false);
            }
        } catch (IOException e) {
            throw new SampleException("the TCP connection to the peer failed: " + e.getMessage(), e);
        }
    }

    boolean isClient() {
        return client;
    }

    /** Sends {@code mine} and reads as many bytes from the peer: perftest's ctx_xchg_data. */
    byte[] exchange(byte[] mine) {
        try {
            OutputStream o = socket.getOutputStream();
            o.write(mine);
            o.flush();
            InputStream in = socket.getInputStream();
            byte[] theirs;
            try {
                theirs = in.readNBytes(mine.length);
            } catch (SocketTimeoutException e) {
                throw new SampleException("the peer sent nothing for " + timeout.toSeconds() + " s: it is gone (see --timeout)");
            }
            if (theirs.length != mine.length) {
                throw new SampleException("the peer closed the connection (it failed, or is a different tool)");
            }
            return theirs;
        } catch (IOException e) {
            throw new SampleException("the TCP connection to the peer failed: " + e.getMessage(), e);
        }
    }

    /** A barrier: returns once the peer has reached its matching call. */
    void barrier(char tag) {
        exchange(new byte[] {(byte) tag});
    }

    /** Reads wait for ever from now on (a passive server waits as long as the client measures; a dead peer closes the socket). */
    void untimed() {
        try {
            socket.setSoTimeout(0);
        } catch (IOException e) {
            throw new SampleException("the TCP connection to the peer failed: " + e.getMessage(), e);
        }
    }

    /** Exchanges the per-QP messages. */
    Key exchangeKeys(Key mine) {
        return Key.parse(exchange(mine.encode()));
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException e) {
            // nothing left to tell the peer
        }
    }

    /**
     * perftest's per-QP data ({@code KEY_PRINT_FMT_GID}): LID, outstanding reads, QPN, PSN, rkey,
     * address, GID, SRQN.
     */
    record Key(int lid, int outReads, int qpn, int psn, int rkey, long vaddr, Gid gid, int srqn) {
        Key(RemoteEndpoint e, int outReads, int rkey, long vaddr) {
            this(e.lid(), outReads, e.qpn(), e.psn(), rkey, vaddr, e.gid(), 0);
        }

        RemoteEndpoint endpoint() {
            return new RemoteEndpoint(lid, qpn, psn, gid);
        }

        /** The NUL-padded 108-byte message. */
        byte[] encode() {
            StringBuilder b = new StringBuilder(String.format("%04x:%04x:%06x:%06x:%08x:%016x:", lid, outReads, qpn,
                    psn, rkey, vaddr));
            for (byte x : gid.bytes()) {
                b.append(String.format("%02x:", x & 0xff));
            }
            b.append(String.format("%08x:", srqn));
            byte[] msg = new byte[KEY_MSG_BYTES];
            byte[] text = b.toString().getBytes(StandardCharsets.US_ASCII);
            System.arraycopy(text, 0, msg, 0, text.length);
            return msg;
        }

        static Key parse(byte[] msg) {
            String s = new String(msg, StandardCharsets.US_ASCII).replace("\0", "");
            String[] f = s.split(":");
            try {
                byte[] gid = new byte[16];
                for (int i = 0; i < 16; i++) {
                    gid[i] = (byte) Integer.parseInt(f[6 + i], 16);
                }
                return new Key(Integer.parseInt(f[0], 16), Integer.parseInt(f[1], 16), Integer.parseInt(f[2], 16),
                        Integer.parseInt(f[3], 16), Integer.parseUnsignedInt(f[4], 16), Long.parseUnsignedLong(f[5], 16),
                        Gid.of(gid), Integer.parseUnsignedInt(f[22], 16));
            } catch (RuntimeException e) {
                throw new SampleException("bad connection data from the peer: \"" + s + "\" (is it the same tool?)");
            }
        }
    }
}
