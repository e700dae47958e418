package io.github.panamaverbs.channel;

import io.github.panamaverbs.cm.Listener;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The peer process that {@link RpcIT} kills (SIGKILL), given {@code ip serverPort sinkPort}: an
 * {@link RpcServer} on the first port whose handler never answers "hang" (it sleeps) and answers
 * anything else with its bytes, and a listener on the second that accepts one {@link MessageChannel}
 * of 4 slots and never receives on it, so that the peer's sends use up their credit. Prints
 * "SERVING" once both listen, then "ACCEPTED".
 */
public final class RpcPeer {
    private RpcPeer() {
    }

    public static void main(String[] args) throws Exception {
        InetAddress ip = InetAddress.getByName(args[0]);
        warmUp(ip);
        RpcServer server = RpcServer.start(new InetSocketAddress(ip, Integer.parseInt(args[1])), RpcIT.DEATH_CONFIG, (request, response) -> {
            if (new String(request.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8).equals("hang")) {
                Thread.sleep(Long.MAX_VALUE);
            }
            MemorySegment.copy(request, 0, response, 0, request.byteSize());
            return (int) request.byteSize();
        });
        Listener sink = Listener.bind(new InetSocketAddress(ip, Integer.parseInt(args[2])), 4);
        System.out.println("SERVING " + server.localAddress() + ", sinking on " + sink.localAddress());
        System.out.flush();
        MessageChannel channel = MessageChannel.accept(sink, RpcIT.DEATH_CONFIG, Duration.ofSeconds(120)); // never receives
        System.out.println("ACCEPTED " + channel);
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }

    /**
     * One channel to itself, on a port of its own, one message and closed: the accept path's classes
     * and downcall stubs are then made, so that the test's connection is accepted within SoftiWARP's
     * wait for the MPA reply (a cold JVM under the VM's emulated CPU took longer once).
     */
    private static void warmUp(InetAddress ip) throws Exception {
        Duration timeout = Duration.ofSeconds(60);
        try (Listener listener = Listener.bind(new InetSocketAddress(ip, 0), 1)) {
            java.util.concurrent.CompletableFuture<MessageChannel> accepted = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> MessageChannel.accept(listener, RpcIT.DEATH_CONFIG, timeout));
            try (MessageChannel client = MessageChannel.connect(listener.localAddress(), RpcIT.DEATH_CONFIG, timeout);
                 MessageChannel server = accepted.get(60, java.util.concurrent.TimeUnit.SECONDS)) {
                client.send(MemorySegment.ofArray(new byte[] {1}), timeout);
                server.receive(timeout).close();
            }
        }
    }
}
