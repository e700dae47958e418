package io.github.panamaverbs.samples.perftest;

import io.github.panamaverbs.samples.common.SampleException;
import io.github.panamaverbs.verbs.Gid;
import io.github.panamaverbs.verbs.Mtu;
import io.github.panamaverbs.verbs.RemoteEndpoint;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The out-of-band side of the perftest-like tools (one place for it): the connection between client
 * and server, perftest's per-QP message, exchanges used as barriers, and the close. Every read gives
 * up after the tool's {@code --timeout} with a message saying the peer is gone; {@link #untimed()}
 * lifts that for a passive side that waits out the measurement.
 *
 * <p>One message sequence, two transports, as in perftest: a TCP socket ({@link #open}, perftest's
 * default "Ethernet" exchange), or with {@code -R} an RC queue pair connected through rdma_cm
 * ({@link #openRdmaCm}, {@link PerftestCm}: perftest's "rdma_cm" exchange, each message one SEND into
 * the peer's 56-byte receive). Only the per-QP message's form and the close differ: over TCP the
 * text {@code KEY_PRINT_FMT_GID}, over rdma_cm the 56-byte binary {@code struct pingpong_dest}
 * ({@link Key#encodeDest()}); over TCP the close ends with "done", over rdma_cm it does not.
 *
 * <p>To talk to perftest's own binaries (perftest 4.5-0.17, version string "6.06"), a tool follows
 * their byte sequence exactly: {@link #preamble(Mtu)} right after the connection (perftest's
 * exchange_versions, check_sys_data and check_mtu), then {@link #handShake(Key)} wherever perftest
 * calls ctx_hand_shake (each is one exchange of the per-QP message), and {@link #closeConnection(Key)}
 * where perftest calls ctx_close_connection. Each exchange is perftest's: the client sends first and
 * then receives, the server receives first and then sends (over rdma_cm this order is what keeps a
 * receive posted for every message: iWARP has no receiver-not-ready retry). Perftest reads each
 * message with one {@code read()} of its exact size, so every message here goes out in one
 * {@code write}.
 */
final class PerftestLink implements AutoCloseable {
    /** perftest's KEY_MSG_SIZE_GID. */
    static final int KEY_MSG_BYTES = 108;
    /** perftest's KEY_MSG_SIZE: the message without a GID (InfiniBand without {@code -x}). */
    static final int KEY_MSG_BYTES_NO_GID = 59;
    /** The perftest version this side claims (that of perftest 4.5-0.17, the one these tools follow). */
    static final String VERSION = "6.06";
    /** perftest's MAX_VERSION: the version travels as this many bytes, NUL-padded. */
    static final int VERSION_BYTES = 16;
    /** perftest's check_version_compatibility refuses peers older than this. */
    static final double OLDEST_PEER = 5.70;

    /**
     * How the messages travel: whole messages, sent and received in the order {@link #exchange}
     * gives; a receive returns exactly the bytes asked for or fails saying the peer is gone.
     */
    interface Transport extends AutoCloseable {
        void send(byte[] message);

        byte[] receive(int bytes);

        /** Receives wait for ever from now on (a dead peer still ends them). */
        void untimed();

        /** Whether per-QP messages are perftest's binary {@code struct pingpong_dest} (rdma_cm) rather than text (TCP). */
        boolean binaryKeys();

        /** What ends ctx_close_connection after its hand-shake. */
        void finish();

        @Override
        void close();
    }

    private final Transport transport;
    private final boolean client;
    private String peerVersion;
    private boolean withGid = true;

    PerftestLink(Transport transport, boolean client) {
        this.transport = transport;
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
                return new PerftestLink(new Tcp(s, timeout), true);
            }
            try (ServerSocket ss = new ServerSocket()) {
                ss.setReuseAddress(true);
                ss.bind(new InetSocketAddress(port), 1);
                out.println("\n************************************\n* Waiting for client to connect... *\n************************************");
                out.flush();
                Socket s = ss.accept();
                s.setSoTimeout((int) timeout.toMillis());
                return new PerftestLink(new Tcp(s, timeout), false);
            }
        } catch (IOException e) {
            throw new SampleException("the TCP connection to the peer failed: " + e.getMessage(), e);
        }
    }

    boolean isClient() {
        return client;
    }

    /**
     * perftest -R: the control connection over rdma_cm ({@link PerftestCm}): the client connects to
     * {@code server}; the server (when it is null) listens on {@code port}, prints the "Waiting for
     * client" banner on {@code out} and accepts one client.
     */
    static PerftestLink openRdmaCm(String server, int port, Duration timeout, PrintStream out) {
        return new PerftestLink(PerftestCm.Control.open(server, port, timeout, out), server != null);
    }

    /**
     * Sends {@code mine} and receives as many bytes from the peer: perftest's ctx_xchg_data, in its
     * order (the client sends, then receives; the server receives, then sends).
     */
    byte[] exchange(byte[] mine) {
        if (client) {
            transport.send(mine);
            return transport.receive(mine.length);
        }
        byte[] theirs = transport.receive(mine.length);
        transport.send(mine);
        return theirs;
    }

    /** A barrier: returns once the peer has reached its matching call. */
    void barrier(char tag) {
        exchange(new byte[] {(byte) tag});
    }

    /** Reads wait for ever from now on (a passive server waits as long as the client measures; a dead peer closes the socket). */
    void untimed() {
        transport.untimed();
    }

    /** Exchanges the per-QP messages (with the GID unless {@link #keysWithGid(boolean)} said otherwise). */
    Key exchangeKeys(Key mine) {
        return transport.binaryKeys() ? Key.parseDest(exchange(mine.encodeDest())) : Key.parse(exchange(mine.encode(withGid)));
    }

    /**
     * Whether the per-QP messages carry the GID: perftest sends the 108-byte form when it has a GID
     * index (always on RoCE) and the 59-byte one without ({@code KEY_PRINT_FMT}) on InfiniBand
     * without {@code -x}. Both sides must agree; the default is with.
     */
    void keysWithGid(boolean on) {
        withGid = on;
    }

    /** perftest's ctx_hand_shake: one exchange of the per-QP messages, used both for data and as a barrier. */
    Key handShake(Key mine) {
        return exchangeKeys(mine);
    }

    /**
     * perftest's exchange_versions, check_sys_data and check_mtu, in that order, right after the
     * connection: the 16-byte version strings, the page size and cache line size (4-byte big-endian
     * ints: this side sends 4096 and 64), and the MTU as {@code sprintf("%d", enum ibv_mtu)} in 2
     * bytes. Returns the MTU both use: the smaller of the two. Fails, as perftest does, for a peer
     * older than 5.70.
     */
    Mtu preamble(Mtu mine) {
        byte[] v = new byte[VERSION_BYTES];
        byte[] text = VERSION.getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(text, 0, v, 0, text.length);
        peerVersion = cString(exchange(v));
        double peer = leadingNumber(peerVersion);
        if (peer < OLDEST_PEER) {
            throw new SampleException("the peer's perftest version \"" + peerVersion + "\" is older than " + OLDEST_PEER
                    + " (or it is not a perftest tool): not compatible");
        }
        exchange(ByteBuffer.allocate(4).putInt(4096).array());   // cycle_buffer: the page size
        exchange(ByteBuffer.allocate(4).putInt(64).array());     // cache_line_size
        byte[] m = new byte[2];
        m[0] = (byte) ('0' + mine.value());
        String theirs = cString(exchange(m));
        int rem;
        try {
            rem = Integer.parseInt(theirs);
        } catch (NumberFormatException e) {
            throw new SampleException("bad MTU from the peer: \"" + theirs + "\"");
        }
        boolean valid = rem >= Mtu.MTU_256.value() && rem <= Mtu.MTU_4096.value();
        return valid && mine.value() > rem ? Mtu.of(rem) : mine;
    }

    /** The peer's version string from {@link #preamble}, or null before it. */
    String peerVersion() {
        return peerVersion;
    }

    /**
     * perftest's ctx_close_connection: a last {@link #handShake}; over TCP then "done" (with its NUL)
     * to the peer, and the peer's "done" read back if it comes (perftest never reads it; reading it
     * here only keeps this side from closing on unread data).
     */
    void closeConnection(Key mine) {
        handShake(mine);
        transport.finish();
    }

    /** The text before the first NUL. */
    private static String cString(byte[] b) {
        int n = 0;
        while (n < b.length && b[n] != 0) {
            n++;
        }
        return new String(b, 0, n, StandardCharsets.US_ASCII);
    }

    /** C's atof, for a version: the leading decimal number, 0 if none. */
    static double leadingNumber(String s) {
        Matcher m = Pattern.compile("^\\s*[0-9]+(\\.[0-9]*)?").matcher(s);
        return m.find() ? Double.parseDouble(m.group().trim()) : 0;
    }

    @Override
    public void close() {
        transport.close();
    }

    /** perftest's default exchange: one TCP connection. */
    private static final class Tcp implements Transport {
        private static final byte[] DONE = "done\0".getBytes(StandardCharsets.US_ASCII);

        private final Socket socket;
        private final Duration timeout;

        Tcp(Socket socket, Duration timeout) {
            this.socket = socket;
            this.timeout = timeout;
        }

        @Override
        public void send(byte[] message) {
            try {
                OutputStream o = socket.getOutputStream();
                o.write(message);
                o.flush();
            } catch (IOException e) {
                throw new SampleException("the TCP connection to the peer failed: " + e.getMessage(), e);
            }
        }

        @Override
        public byte[] receive(int bytes) {
            try {
                byte[] theirs;
                try {
                    theirs = socket.getInputStream().readNBytes(bytes);
                } catch (SocketTimeoutException e) {
                    throw new SampleException("the peer sent nothing for " + timeout.toSeconds() + " s: it is gone (see --timeout)");
                }
                if (theirs.length != bytes) {
                    throw new SampleException("the peer closed the connection: the peer is gone (it failed, or is a different tool)");
                }
                return theirs;
            } catch (IOException e) {
                throw new SampleException("the TCP connection to the peer failed: " + e.getMessage(), e);
            }
        }

        @Override
        public void untimed() {
            try {
                socket.setSoTimeout(0);
            } catch (IOException e) {
                throw new SampleException("the TCP connection to the peer failed: " + e.getMessage(), e);
            }
        }

        @Override
        public boolean binaryKeys() {
            return false;
        }

        @Override
        public void finish() {
            try {
                OutputStream o = socket.getOutputStream();
                o.write(DONE);
                o.flush();
                socket.getInputStream().readNBytes(DONE.length);
            } catch (IOException e) {
                // the peer closed first: nothing left to agree on
            }
        }

        @Override
        public void close() {
            try {
                socket.close();
            } catch (IOException e) {
                // nothing left to tell the peer
            }
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
            return encode(true);
        }

        /** The NUL-padded message: 108 bytes with the GID, or perftest's 59-byte KEY_PRINT_FMT without. */
        byte[] encode(boolean withGid) {
            StringBuilder b = new StringBuilder(String.format("%04x:%04x:%06x:%06x:%08x:%016x:", lid, outReads, qpn,
                    psn, rkey, vaddr));
            if (!withGid) {
                b.append(String.format("%08x", srqn));
            } else {
                for (byte x : gid.bytes()) {
                    b.append(String.format("%02x:", x & 0xff));
                }
                b.append(String.format("%08x:", srqn));
            }
            byte[] msg = new byte[withGid ? KEY_MSG_BYTES : KEY_MSG_BYTES_NO_GID];
            byte[] text = b.toString().getBytes(StandardCharsets.US_ASCII);
            System.arraycopy(text, 0, msg, 0, text.length);
            return msg;
        }

        /** perftest's {@code struct pingpong_dest}, the per-QP message over rdma_cm: {@value #DEST_BYTES} bytes. */
        static final int DEST_BYTES = 56;

        /** A message of zeros: what perftest sends around the rdma_cm connection of the test QPs, before its own data exists. */
        static final Key NONE = new Key(0, 0, 0, 0, 0, 0, Gid.ZERO, 0);

        /**
         * perftest's {@code struct pingpong_dest} in network order, as rdma_write_keys sends it: lid,
         * out_reads, qpn, psn, rkey (big-endian 32-bit words at 0, 4, 8, 12, 16), 4 bytes of padding,
         * vaddr (big-endian 64-bit at 24), the GID's 16 bytes at 32, srqn at 48 and gid_index at 52
         * (both unread by the peer; sent as 0).
         */
        byte[] encodeDest() {
            ByteBuffer b = ByteBuffer.allocate(DEST_BYTES);   // big-endian
            b.putInt(0, lid).putInt(4, outReads).putInt(8, qpn).putInt(12, psn).putInt(16, rkey).putLong(24, vaddr)
                    .put(32, gid.bytes()).putInt(48, srqn);
            return b.array();
        }

        /** The peer's {@code struct pingpong_dest}: what rdma_read_keys takes from it (srqn too). */
        static Key parseDest(byte[] msg) {
            if (msg.length != DEST_BYTES) {
                throw new SampleException("bad connection data from the peer: " + msg.length + " bytes, not " + DEST_BYTES);
            }
            ByteBuffer b = ByteBuffer.wrap(msg);
            byte[] gid = new byte[16];
            b.get(32, gid);
            return new Key(b.getInt(0), b.getInt(4), b.getInt(8), b.getInt(12), b.getInt(16), b.getLong(24), Gid.of(gid),
                    b.getInt(48));
        }

        static Key parse(byte[] msg) {
            String s = new String(msg, StandardCharsets.US_ASCII).replace("\0", "");
            String[] f = s.split(":");
            try {
                if (msg.length == KEY_MSG_BYTES_NO_GID) {
                    return new Key(Integer.parseInt(f[0], 16), Integer.parseInt(f[1], 16), Integer.parseInt(f[2], 16),
                            Integer.parseInt(f[3], 16), Integer.parseUnsignedInt(f[4], 16),
                            Long.parseUnsignedLong(f[5], 16), Gid.ZERO, Integer.parseUnsignedInt(f[6], 16));
                }
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
