package io.github.panamaverbs.samples.apps;

import io.github.panamaverbs.samples.common.Common;
import io.github.panamaverbs.samples.common.SampleException;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Arrays;

/**
 * {@code rpc-ping -T}: the same calls over a TCP socket of the JDK's ({@link Socket}, blocking, no
 * Nagle), the reference line beside the RDMA figures. Each request and reply is framed with a
 * 12-byte header of its own (the call's id, then the payload's length) and the payload; the
 * server answers each request with its own bytes, on a thread per connection.
 */
final class TcpPing {
    private TcpPing() {
    }

    /** Serves on {@code address} until killed. */
    static int serve(InetSocketAddress address, int size, PrintStream out) {
        try (ServerSocket server = new ServerSocket()) {
            server.bind(address, 64);
            out.println("rpc-ping: serving over TCP on " + server.getLocalSocketAddress());
            out.flush();
            while (true) {
                Socket s = server.accept();
                Thread.ofPlatform().daemon().start(() -> echo(s, size));
            }
        } catch (IOException e) {
            throw new SampleException("rpc-ping -T: cannot serve on " + address + ": " + e.getMessage(), e);
        }
    }

    private static void echo(Socket s, int size) {
        try (s) {
            s.setTcpNoDelay(true);
            DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            byte[] payload = new byte[size];
            while (true) {
                long id;
                try {
                    id = in.readLong();
                } catch (EOFException e) {
                    return; // the client went
                }
                int length = in.readInt();
                if (length < 0 || length > payload.length) {
                    return; // not this protocol
                }
                in.readFully(payload, 0, length);
                out.writeLong(id);
                out.writeInt(length);
                out.write(payload, 0, length);
                out.flush();
            }
        } catch (IOException e) {
            // the client went mid-call
        }
    }

    /** Calls the server at {@code address} {@code iters} times (after the warm-up), every reply checked. */
    static int call(InetSocketAddress address, int size, int iters, PrintStream out) {
        long[] rtt = new long[iters];
        try (Socket s = new Socket()) {
            s.connect(address, 30_000);
            s.setTcpNoDelay(true);
            DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
            DataOutputStream o = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            byte[] request = new byte[size];
            byte[] reply = new byte[size];
            long[] id = {0};
            Runnable once = () -> {
                try {
                    o.writeLong(++id[0]);
                    o.writeInt(size);
                    o.write(request);
                    o.flush();
                    if (in.readLong() != id[0] || in.readInt() != size) {
                        throw new SampleException("reply " + id[0] + ": not the call's id or size");
                    }
                    in.readFully(reply);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            };
            if (Common.warmUp()) {
                Common.untilCompiled(() -> {
                    for (int i = 0; i < 200; i++) {
                        once.run();
                    }
                }, Duration.ofSeconds(30));
            }
            for (int i = 0; i < iters; i++) {
                Arrays.fill(request, (byte) i);
                long start = System.nanoTime();
                once.run();
                rtt[i] = System.nanoTime() - start;
                if (!Arrays.equals(request, reply)) {
                    throw new SampleException("reply " + i + " differs from its request");
                }
            }
        } catch (IOException | UncheckedIOException e) {
            throw new SampleException("rpc-ping -T: " + address + ": " + e.getMessage(), e);
        }
        return RpcPing.report(rtt, "calls over TCP", size, out);
    }
}
