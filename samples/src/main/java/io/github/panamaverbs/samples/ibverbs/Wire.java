package io.github.panamaverbs.samples.ibverbs;

import io.github.panamaverbs.samples.common.SampleException;
import io.github.panamaverbs.verbs.Gid;
import io.github.panamaverbs.verbs.RemoteEndpoint;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * The out-of-band exchange of rdma-core's pingpong examples: over one TCP connection, each side
 * sends one 52-byte message per queue pair, {@code "%04x:%06x:%06x:%s\0"} (LID, QPN, PSN and the GID
 * as 32 hex digits, the "wire GID"), and the client ends with {@code "done\0"}. The client writes
 * its messages first; the server connects its queue pairs before answering.
 */
final class Wire {
    /** {@code sizeof "0000:000000:000000:00000000000000000000000000000000"}. */
    static final int MESSAGE_BYTES = 52;
    private static final byte[] DONE = "done\0".getBytes(StandardCharsets.US_ASCII);

    private Wire() {
    }

    /** The 52-byte message for {@code e}. */
    static byte[] encode(RemoteEndpoint e) {
        String s = String.format("%04x:%06x:%06x:%s", e.lid(), e.qpn(), e.psn(), wireGid(e.gid()));
        byte[] msg = new byte[MESSAGE_BYTES];
        byte[] text = s.getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(text, 0, msg, 0, text.length);
        return msg;
    }

    /** Parses a message from a peer; throws {@link SampleException} if it is not one. */
    static RemoteEndpoint decode(byte[] msg) {
        int end = 0;
        while (end < msg.length && msg[end] != 0) {
            end++;
        }
        String s = new String(msg, 0, end, StandardCharsets.US_ASCII);
        String[] f = s.split(":");
        try {
            if (f.length != 4 || f[3].length() != 32) {
                throw new IllegalArgumentException("expected LID:QPN:PSN:GID");
            }
            return new RemoteEndpoint(Integer.parseInt(f[0], 16), Integer.parseInt(f[1], 16),
                    Integer.parseInt(f[2], 16), Gid.of(HexFormat.of().parseHex(f[3])));
        } catch (IllegalArgumentException e) {
            throw new SampleException("bad address message from the peer: \"" + s + "\" (" + e.getMessage() + ")");
        }
    }

    /**
     * pingpong.c's gid_to_wire_gid: four 32-bit words, each printed big-endian with {@code %08x}, which
     * is the 16 bytes in network order as hex.
     */
    static String wireGid(Gid gid) {
        return HexFormat.of().formatHex(gid.bytes());
    }

    /** Client: sends {@code mine}, reads as many endpoints, sends "done". */
    static List<RemoteEndpoint> clientExchange(String host, int port, Duration timeout, List<RemoteEndpoint> mine) {
        try (Socket s = new Socket()) {
            try {
                s.connect(new InetSocketAddress(host, port), (int) timeout.toMillis());
            } catch (UnknownHostException e) {
                throw new SampleException("unknown host " + host);
            } catch (ConnectException | SocketTimeoutException e) {
                throw new SampleException("Couldn't connect to " + host + ":" + port + " (" + e.getMessage() + ")");
            }
            s.setSoTimeout((int) timeout.toMillis());
            s.setTcpNoDelay(true);
            for (RemoteEndpoint e : mine) {
                s.getOutputStream().write(encode(e));
            }
            List<RemoteEndpoint> theirs = read(s.getInputStream(), mine.size(), timeout);
            s.getOutputStream().write(DONE);
            return theirs;
        } catch (IOException e) {
            throw new SampleException("Couldn't read/write remote address: " + e.getMessage(), e);
        }
    }

    /** What the server does between reading the client's endpoints and answering: connect its QPs. */
    interface Connector {
        void connect(List<RemoteEndpoint> theirs);
    }

    /**
     * Server: waits for one client on {@code port} ({@code acceptTimeout} null: forever), reads
     * {@code count} endpoints, runs {@code connector}, answers with {@code mine}, waits for "done".
     */
    static List<RemoteEndpoint> serverExchange(int port, Duration acceptTimeout, Duration timeout,
                                               List<RemoteEndpoint> mine, Connector connector) {
        Socket s;
        try (ServerSocket server = new ServerSocket()) {
            server.setReuseAddress(true);
            try {
                server.bind(new InetSocketAddress(port), 1);
            } catch (IOException e) {
                throw new SampleException("Couldn't listen to port " + port + " (" + e.getMessage() + ")");
            }
            if (acceptTimeout != null) {
                server.setSoTimeout((int) acceptTimeout.toMillis());
            }
            try {
                s = server.accept();
            } catch (SocketTimeoutException e) {
                throw new SampleException("no client connected to port " + port + " within " + acceptTimeout.toSeconds() + " s");
            }
        } catch (IOException e) {
            throw new SampleException("accept() failed: " + e.getMessage(), e);
        }
        try (s) {
            s.setSoTimeout((int) timeout.toMillis());
            s.setTcpNoDelay(true);
            List<RemoteEndpoint> theirs = read(s.getInputStream(), mine.size(), timeout);
            connector.connect(theirs);
            for (RemoteEndpoint e : mine) {
                s.getOutputStream().write(encode(e));
            }
            byte[] done = s.getInputStream().readNBytes(DONE.length);
            if (done.length != DONE.length) {
                throw new SampleException("Couldn't send/recv local address: the client closed the connection before \"done\"");
            }
            return theirs;
        } catch (SocketTimeoutException e) {
            throw new SampleException("the client sent nothing for " + timeout.toSeconds() + " s");
        } catch (IOException e) {
            throw new SampleException("Couldn't send/recv local address: " + e.getMessage(), e);
        }
    }

    private static List<RemoteEndpoint> read(InputStream in, int count, Duration timeout) throws IOException {
        List<RemoteEndpoint> result = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            byte[] msg;
            try {
                msg = in.readNBytes(MESSAGE_BYTES);
            } catch (SocketTimeoutException e) {
                throw new SampleException("the peer sent no address for " + timeout.toSeconds() + " s");
            }
            if (msg.length != MESSAGE_BYTES) {
                throw new SampleException(msg.length + "/" + MESSAGE_BYTES + ": Couldn't read remote address ["
                        + i + "]: the peer closed the connection (does it use the same tool and -q?)");
            }
            result.add(decode(msg));
        }
        return result;
    }
}
