package io.github.panamaverbs.channel;

import io.github.panamaverbs.cm.Listener;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The peer process that {@link RpcIT} kills (SIGKILL) on {@code ip port}. {@code server}: an
 * {@link RpcServer} whose handler never answers "hang" (it sleeps) and answers anything else with
 * its bytes; prints "SERVING". {@code sink}: accepts one {@link MessageChannel} of 4 slots and never
 * receives on it, so that the peer's sends use up their credit; prints "ACCEPTED".
 */
public final class RpcPeer {
    private RpcPeer() {
    }

    public static void main(String[] args) throws Exception {
        InetSocketAddress address = new InetSocketAddress(InetAddress.getByName(args[1]), Integer.parseInt(args[2]));
        warmUp(address.getAddress());
        if (args[0].equals("server")) {
            RpcServer server = RpcServer.start(address, RpcIT.DEATH_CONFIG, (request, response) -> {
                if (new String(request.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8).equals("hang")) {
                    Thread.sleep(Long.MAX_VALUE);
                }
                MemorySegment.copy(request, 0, response, 0, request.byteSize());
                return (int) request.byteSize();
            });
            System.out.println("SERVING " + server.localAddress());
        } else {
            Listener listener = Listener.bind(address, 4);
            System.out.println("LISTENING");
            System.out.flush();
            MessageChannel channel = MessageChannel.accept(listener, RpcIT.DEATH_CONFIG, Duration.ofSeconds(120));
            System.out.println("ACCEPTED " + channel);
        }
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
