package io.github.panamaverbs.samples.apps;

import io.github.panamaverbs.channel.MessageChannel;
import io.github.panamaverbs.channel.RpcClient;
import io.github.panamaverbs.channel.RpcServer;
import io.github.panamaverbs.samples.common.Common;
import io.github.panamaverbs.samples.common.Options;
import io.github.panamaverbs.samples.common.SampleException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;

/**
 * {@code rpc-ping}: RPC round trips on the channel layer. Without a server address it serves (each
 * request answered with its own bytes); with one it calls {@code -n} times with {@code -s}-byte
 * requests, checks every reply's bytes, and prints the round trip's median, average and 99th
 * percentile in microseconds, after calls that warm the JIT up (as the latency tools do;
 * {@code -Dpanamaverbs.samples.warmup=false} skips them). {@code -b} busy-polls instead of waiting
 * for completion events.
 */
public final class RpcPing {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    private RpcPing() {
    }

    /** The launcher's {@code rpc-ping}. */
    public static int main(String[] args, PrintStream out) {
        Options o = new Options("rpc-ping [-p PORT] [-s SIZE] [-n ITERS] [-b] LOCAL_ADDRESS   (server)\n"
                + "rpc-ping [-p PORT] [-s SIZE] [-n ITERS] [-b] SERVER --client              (client)")
                .value('p', "port", "PORT", "the server's port (default 7481)")
                .value('s', "size", "SIZE", "request and reply bytes, up to 1 MiB; give the server the same (default 64)")
                .value('n', "iters", "ITERS", "calls (default 1000)")
                .flag('b', "busy-poll", "spin on the completion queue instead of waiting for events")
                .flag('c', "client", "call the server at the address (else serve on it)");
        if (!o.parse(args, out)) {
            return 0;
        }
        if (o.positional().size() != 1) {
            throw new Options.UsageException("one address is needed");
        }
        int size = o.integer("size", 64, 0, 1 << 20);
        // both sides are given the same -s: their channels carry it with the RPC header
        MessageChannel.Config config = new MessageChannel.Config().messageSize(Math.max(4096, size + RpcClient.HEADER))
                .busyPoll(o.has("busy-poll"));
        InetSocketAddress address = new InetSocketAddress(o.positional().get(0), o.integer("port", 7481, 1, 65535));
        if (!o.has("client")) {
            try (RpcServer server = RpcServer.start(address, config, (request, response) -> {
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
        int iters = o.integer("iters", 1000, 1, 100_000_000);
        long[] rtt = new long[iters];
        MemorySegment request = MemorySegment.ofArray(new byte[size]);
        try (RpcClient client = RpcClient.connect(address, config, TIMEOUT)) {
            if (Common.warmUp()) { // calls until the JIT has compiled the loop, as the latency tools warm theirs up
                Common.untilCompiled(() -> {
                    for (int i = 0; i < 200; i++) {
                        client.call(request, TIMEOUT).close();
                    }
                }, TIMEOUT);
            }
            for (int i = 0; i < iters; i++) {
                request.fill((byte) i);
                long start = System.nanoTime();
                try (RpcClient.Response r = client.call(request, TIMEOUT)) {
                    rtt[i] = System.nanoTime() - start;
                    if (r.length() != size || r.segment().mismatch(request) != -1) {
                        throw new SampleException("reply " + i + " differs from its request (" + r.length() + " bytes)");
                    }
                }
            }
        }
        Arrays.sort(rtt);
        double avg = Arrays.stream(rtt).average().orElse(0) / 1000;
        out.printf("rpc-ping: %d calls of %d bytes: median %.2f us, average %.2f us, 99%% %.2f us%n", iters, size,
                rtt[iters / 2] / 1000.0, avg, rtt[Math.min(iters - 1, (int) (iters * 0.99))] / 1000.0);
        return 0;
    }
}
