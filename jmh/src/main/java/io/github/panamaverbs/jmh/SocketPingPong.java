package io.github.panamaverbs.jmh;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Locale;

/**
 * The JDK's own price of a virtual thread's hand-over, to compare the library's event-driven waits
 * with ({@code rc-pingpong -e --virtual}, {@code EventPingPong}): a one-byte ping-pong over a loopback
 * TCP connection between two threads, each blocking in {@code SocketChannel.read} (a virtual thread
 * parks and the JDK's poller wakes it, as the library's event loop wakes a thread parked on a
 * completion channel), in platform threads or in virtual threads. No device, no library code.
 *
 * <pre>
 * taskset -c 0 java -Djdk.virtualThreadScheduler.parallelism=1 -cp jmh/target/classes \
 *     io.github.panamaverbs.jmh.SocketPingPong platform|virtual [ROUND_TRIPS [ROUNDS]]
 * </pre>
 * prints each round's microseconds per round trip.
 */
public final class SocketPingPong {
    private SocketPingPong() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || !args[0].matches("platform|virtual")) {
            System.err.println("usage: SocketPingPong platform|virtual [ROUND_TRIPS [ROUNDS]]");
            System.exit(2);
        }
        boolean virtual = args[0].equals("virtual");
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 2000;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 4;
        try (ServerSocketChannel server = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
             SocketChannel a = SocketChannel.open(server.getLocalAddress());
             SocketChannel b = server.accept()) {
            a.socket().setTcpNoDelay(true);
            b.socket().setTcpNoDelay(true);
            for (int r = 1; r <= rounds; r++) {
                Thread echo = start(virtual, () -> pingPong(b, n, false));
                long t0 = System.nanoTime();
                Thread ping = start(virtual, () -> pingPong(a, n, true));
                ping.join();
                long t = System.nanoTime() - t0;
                echo.join();
                System.out.printf(Locale.ROOT, "%s threads, round %d: %d round trips, %.2f us each%n",
                        virtual ? "virtual" : "platform", r, n, t / 1000.0 / n);
            }
        }
    }

    private static Thread start(boolean virtual, Runnable body) {
        return virtual ? Thread.ofVirtual().start(body) : Thread.ofPlatform().start(body);
    }

    /** {@code n} round trips of one byte: the pinging side writes first, the other echoes; every byte checked. */
    private static void pingPong(SocketChannel ch, int n, boolean pinging) {
        ByteBuffer buf = ByteBuffer.allocateDirect(1);
        try {
            for (int i = 0; i < n; i++) {
                if (pinging) {
                    ch.write(buf.clear().put((byte) i).flip());
                }
                buf.clear();
                while (buf.hasRemaining()) {
                    if (ch.read(buf) < 0) {
                        throw new IllegalStateException("the peer closed the connection after " + i + " round trips");
                    }
                }
                if (buf.get(0) != (byte) i) {
                    throw new IllegalStateException("round trip " + i + " carried byte " + buf.get(0));
                }
                if (!pinging) {
                    ch.write(buf.flip());
                }
            }
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
