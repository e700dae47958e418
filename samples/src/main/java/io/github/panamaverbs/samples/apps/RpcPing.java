package io.github.panamaverbs.samples.apps;

import io.github.panamaverbs.channel.MessageChannel;
import io.github.panamaverbs.channel.RegionToken;
import io.github.panamaverbs.channel.RpcClient;
import io.github.panamaverbs.channel.RpcServer;
import io.github.panamaverbs.samples.common.Common;
import io.github.panamaverbs.samples.common.Options;
import io.github.panamaverbs.samples.common.SampleException;
import io.github.panamaverbs.verbs.AccessFlag;
import io.github.panamaverbs.verbs.MemoryRegion;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code rpc-ping}: RPC round trips on the channel layer. Without a server address it serves (each
 * request answered with its own bytes); with one it calls {@code -n} times with {@code -s}-byte
 * requests, checks every reply's bytes, and prints the round trip's median, average and 99th
 * percentile in microseconds, after calls that warm the JIT up (as the latency tools do;
 * {@code -Dpanamaverbs.samples.warmup=false} skips them). {@code -b} busy-polls instead of waiting
 * for completion events. {@code -r} (both sides) times one-sided RDMA READs of {@code -s} bytes
 * instead, through the {@link RegionToken} of a region the server exports (its reply to an empty
 * call), each read's bytes checked. {@code -P DEPTH} keeps that many calls in flight (as many
 * virtual threads, each calling in turn) and prints the rate instead. {@code -T} (both sides) makes
 * the same calls over a TCP socket of the JDK's instead of RDMA, as a reference.
 */
public final class RpcPing {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    private RpcPing() {
    }

    /** The launcher's {@code rpc-ping}. */
    public static int main(String[] args, PrintStream out) {
        Options o = new Options("rpc-ping [-p PORT] [-s SIZE] [-b] [-r | -T] LOCAL_ADDRESS                      (server)\n"
                + "rpc-ping [-p PORT] [-s SIZE] [-n ITERS] [-b] [-r | -T] [-P DEPTH] SERVER --client   (client)")
                .value('p', "port", "PORT", "the server's port (default 7481)")
                .value('s', "size", "SIZE", "request and reply bytes, up to 1 MiB; give the server the same (default 64)")
                .value('n', "iters", "ITERS", "calls (default 1000)")
                .flag('b', "busy-poll", "spin on the completion queue instead of waiting for events")
                .flag('r', "read", "time RDMA READs of SIZE bytes through the server's exported region instead of calls")
                .value('P', "pipeline", "DEPTH", "keep DEPTH calls in flight (as many threads) and print the rate (default 1)")
                .flag('T', "tcp", "the same calls over TCP (JDK sockets) instead of RDMA, for reference")
                .flag('c', "client", "call the server at the address (else serve on it)");
        if (!o.parse(args, out)) {
            return 0;
        }
        if (o.positional().size() != 1) {
            throw new Options.UsageException("one address is needed");
        }
        int size = o.integer("size", 64, 0, 1 << 20);
        // both sides are given the same -s: their channels carry it with the RPC header
        boolean read = o.has("read");
        if (read && size == 0) {
            throw new Options.UsageException("-r reads -s bytes: give 1 or more");
        }
        int depth = o.integer("pipeline", 1, 1, 1024);
        if (o.has("tcp") && (read || depth > 1)) {
            throw new Options.UsageException("-T makes single calls: not with -r or -P");
        }
        InetSocketAddress address = new InetSocketAddress(o.positional().get(0), o.integer("port", 7481, 1, 65535));
        int iters = o.integer("iters", 1000, 1, 100_000_000);
        if (o.has("tcp")) {
            return o.has("client") ? TcpPing.call(address, size, iters, out) : TcpPing.serve(address, size, out);
        }
        MessageChannel.Config config = new MessageChannel.Config().messageSize(Math.max(4096, size + RpcClient.HEADER))
                .busyPoll(o.has("busy-poll"));
        AtomicReference<MemoryRegion> exported = new AtomicReference<>(); // -r: the server's region, in the channels' domain
        if (read && !o.has("client")) {
            config.protectionDomain(ctx -> {
                synchronized (exported) {
                    if (exported.get() == null) {
                        MemoryRegion region = ctx.allocateProtectionDomain().allocateAndRegister(Math.max(1, size), AccessFlag.REMOTE_READ);
                        pattern(region.segment(), size);
                        exported.set(region);
                    }
                    return exported.get().protectionDomain();
                }
            });
        }
        if (!o.has("client")) {
            try (RpcServer server = RpcServer.start(address, config, (request, response) -> {
                if (read && request.byteSize() == 0) { // -r: the token of the exported region
                    byte[] token = RegionToken.export(exported.get(), 0, size, RegionToken.Right.READ).toBytes();
                    MemorySegment.copy(token, 0, response, ValueLayout.JAVA_BYTE, 0, token.length);
                    return token.length;
                }
                MemorySegment.copy(request, 0, response, 0, request.byteSize());
                return (int) request.byteSize();
            })) {
                out.println("rpc-ping: serving on " + server.localAddress());
                out.flush();
                new CountDownLatch(1).await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return 0;
        }
        long[] rtt = new long[iters];
        MemorySegment request = MemorySegment.ofArray(new byte[size]);
        if (read) {
            return reads(address, config, size, iters, out);
        }
        if (depth > 1) {
            return pipelined(address, config.slots(Math.max(16, 2 * depth)), size, iters, depth, out);
        }
        try (RpcClient client = RpcClient.connect(address, config, TIMEOUT)) {
            if (Common.warmUp()) { // calls until the JIT has compiled them, as the latency tools warm their step up
                Common.untilCompiled(() -> {
                    for (int i = 0; i < 200; i++) {
                        timedCall(client, request, i, size);
                    }
                }, TIMEOUT);
            }
            for (int i = 0; i < iters; i++) {
                rtt[i] = timedCall(client, request, i, size);
            }
        }
        return report(rtt, "calls", size, out);
    }

    /**
     * {@code -P}: {@code depth} virtual threads calling at once, {@code iters} calls in all (each
     * reply's bytes checked), after as many warm-up calls; prints the rate.
     */
    private static int pipelined(InetSocketAddress address, MessageChannel.Config config, int size, int iters, int depth,
                                 PrintStream out) {
        try (RpcClient client = RpcClient.connect(address, config, TIMEOUT)) {
            if (Common.warmUp()) {
                Common.untilCompiled(() -> calls(client, size, 100 * depth, depth), TIMEOUT);
            }
            long start = System.nanoTime();
            calls(client, size, iters, depth);
            double seconds = (System.nanoTime() - start) / 1e9;
            out.printf("rpc-ping: %d calls of %d bytes, %d in flight: %.0f calls/s, %.2f us per call%n", iters, size, depth,
                    iters / seconds, seconds * 1e6 / iters);
        }
        return 0;
    }

    /**
     * Call {@code i}: its round trip in nanoseconds, its reply's bytes checked. One method for each
     * call, so that the warm-up compiles what the timed loop runs (a loop's own method would be
     * compiled only after tens of thousands of turns, during the measurement).
     */
    private static long timedCall(RpcClient client, MemorySegment request, int i, int size) {
        request.fill((byte) i);
        long start = System.nanoTime();
        try (RpcClient.Response r = client.call(request, TIMEOUT)) {
            long rtt = System.nanoTime() - start;
            if (r.length() != size || r.segment().mismatch(request) != -1) {
                throw new SampleException("reply " + i + " differs from its request (" + r.length() + " bytes)");
            }
            return rtt;
        }
    }

    /** {@code iters} calls from {@code depth} virtual threads, each reply checked; the first failure is thrown. */
    private static void calls(RpcClient client, int size, int iters, int depth) {
        AtomicReference<RuntimeException> failed = new AtomicReference<>();
        java.util.concurrent.atomic.AtomicInteger next = new java.util.concurrent.atomic.AtomicInteger();
        Thread[] threads = new Thread[depth];
        for (int t = 0; t < depth; t++) {
            threads[t] = Thread.ofVirtual().start(() -> {
                MemorySegment request = MemorySegment.ofArray(new byte[size]);
                try {
                    for (int i; (i = next.getAndIncrement()) < iters && failed.get() == null; ) {
                        timedCall(client, request, i, size);
                    }
                } catch (RuntimeException e) {
                    failed.compareAndSet(null, e);
                }
            });
        }
        for (Thread t : threads) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SampleException("interrupted");
            }
        }
        if (failed.get() != null) {
            throw failed.get();
        }
    }

    /** {@code -r}: the token from an empty call, then timed RDMA READs through it, each one's bytes checked. */
    private static int reads(InetSocketAddress address, MessageChannel.Config config, int size, int iters, PrintStream out) {
        long[] rtt = new long[iters];
        MemorySegment expected = MemorySegment.ofArray(new byte[size]);
        pattern(expected, size);
        try (RpcClient client = RpcClient.connect(address, config, TIMEOUT);
             MemoryRegion local = client.channel().connection().protectionDomain().allocateAndRegister(Math.max(1, size))) {
            RegionToken token;
            try (RpcClient.Response r = client.call(MemorySegment.ofArray(new byte[0]), TIMEOUT)) {
                token = RegionToken.fromBytes(r.segment().toArray(ValueLayout.JAVA_BYTE));
            }
            MessageChannel.RemoteMemory remote = client.channel().remote(token);
            MemorySegment got = local.segment().asSlice(0, size);
            if (Common.warmUp()) {
                Common.untilCompiled(() -> {
                    for (int i = 0; i < 200; i++) {
                        timedRead(remote, local, got, expected, i);
                    }
                }, TIMEOUT);
            }
            for (int i = 0; i < iters; i++) {
                rtt[i] = timedRead(remote, local, got, expected, i);
            }
        }
        return report(rtt, "reads", size, out);
    }

    /** Read {@code i} (as {@link #timedCall}): its time in nanoseconds, its bytes checked. */
    private static long timedRead(MessageChannel.RemoteMemory remote, MemoryRegion local, MemorySegment got, MemorySegment expected,
                                  int i) {
        got.fill((byte) 0);
        long start = System.nanoTime();
        remote.read(0, local, 0, (int) got.byteSize());
        long rtt = System.nanoTime() - start;
        if (got.mismatch(expected) != -1) {
            throw new SampleException("read " + i + " differs from the server's region");
        }
        return rtt;
    }

    /** The bytes of the exported region (-r), which every read checks. */
    private static void pattern(MemorySegment s, int size) {
        for (int i = 0; i < size; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 1));
        }
    }

    static int report(long[] rtt, String what, int size, PrintStream out) {
        int iters = rtt.length;
        Arrays.sort(rtt);
        double avg = Arrays.stream(rtt).average().orElse(0) / 1000;
        out.printf("rpc-ping: %d %s of %d bytes: median %.2f us, average %.2f us, 99%% %.2f us%n", iters, what, size,
                rtt[iters / 2] / 1000.0, avg, rtt[Math.min(iters - 1, (int) (iters * 0.99))] / 1000.0);
        return 0;
    }
}
