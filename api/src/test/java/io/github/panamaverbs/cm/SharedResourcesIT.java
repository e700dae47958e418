package io.github.panamaverbs.cm;

import static io.github.panamaverbs.cm.CmIT.ip;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.verbs.AccessFlag;
import io.github.panamaverbs.verbs.CompletionChannel;
import io.github.panamaverbs.verbs.CompletionQueue;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.MemoryRegion;
import io.github.panamaverbs.verbs.ProtectionDomain;
import io.github.panamaverbs.verbs.ReceiveRequest;
import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.WcOpcode;
import io.github.panamaverbs.verbs.WcStatus;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Connections on the caller's resources (issue 29's key-value trial): one table registered once in
 * the server's protection domain serves every client with one rkey, advertised in the accept's
 * private data that the hook sets; the server's connections share one completion queue on a
 * completion channel, waited on with a timeout; per-connection state attached in the hook; the
 * caller's resources outlive the connections; and the connection names its peer.
 */
class SharedResourcesIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final AtomicInteger PORT = new AtomicInteger(40_000 + new Random().nextInt(10_000));
    private static final int TABLE = 64 * 1024;
    private static final int CLIENTS = 3;

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void oneRegisteredTableServesEveryConnectionWithOneKey(String provider) throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip(provider), PORT.incrementAndGet());
        byte[] content = new byte[TABLE];
        new Random(29).nextBytes(content);
        Map<Context, ProtectionDomain> pds = new ConcurrentHashMap<>();
        Map<Context, MemoryRegion> tables = new ConcurrentHashMap<>();
        Map<Context, CompletionQueue> cqs = new ConcurrentHashMap<>();
        List<AutoCloseable> serverResources = new ArrayList<>();
        try (Listener listener = Listener.bind(address, 8)) {
            CompletableFuture<List<String>> server = CompletableFuture.supplyAsync(() -> {
                List<Connection> accepted = new ArrayList<>();
                CompletionChannel[] channel = new CompletionChannel[1];
                MemoryRegion[] inbox = new MemoryRegion[1];
                try {
                    Connection.Config config = new Connection.Config()
                            .protectionDomain(ctx -> pds.computeIfAbsent(ctx, c -> {
                                ProtectionDomain pd = c.allocateProtectionDomain();
                                MemoryRegion table = pd.allocateAndRegister(TABLE, AccessFlag.REMOTE_READ);
                                table.segment().copyFrom(MemorySegment.ofArray(content));
                                tables.put(c, table);
                                inbox[0] = pd.allocateAndRegister(CLIENTS * 64);
                                serverResources.add(pd);
                                serverResources.add(table);
                                serverResources.add(inbox[0]);
                                return pd;
                            }))
                            .completionQueue(ctx -> cqs.computeIfAbsent(ctx, c -> {
                                channel[0] = c.createCompletionChannel();
                                CompletionQueue cq = c.createCompletionQueue(64, channel[0], 0);
                                serverResources.add(channel[0]);
                                serverResources.add(cq);
                                return cq;
                            }))
                            .beforeConnect(c -> {
                                int n = accepted.size();
                                c.queuePair().postReceive(new ReceiveRequest(1).id(n).sge(inbox[0], n * 64L, 64));
                                MemoryRegion table = tables.get(c.id().context());
                                c.privateData(ByteBuffer.allocate(16).putLong(table.address()).putInt(table.rkey())
                                        .putInt(TABLE).array());
                                assertEquals(null, c.attach("client " + n));
                            });
                    for (int i = 0; i < CLIENTS; i++) {
                        accepted.add(listener.accept(config, TIMEOUT));
                    }
                    CompletionQueue cq = cqs.values().iterator().next();
                    for (Connection c : accepted) {
                        assertSame(cq, c.completionQueue());
                        assertSame(pds.values().iterator().next(), c.protectionDomain());
                    }
                    // Each client sends its name; the shared queue, waited on with a timeout, tells them apart.
                    List<String> got = new ArrayList<>();
                    WorkCompletions wc = new WorkCompletions(4);
                    long deadline = System.nanoTime() + TIMEOUT.toNanos();
                    while (got.size() < CLIENTS && System.nanoTime() < deadline) {
                        int n = cq.await(wc, Duration.ofSeconds(1));
                        for (int i = 0; i < n; i++) {
                            assertEquals(WcStatus.SUCCESS, wc.status(i), wc.toString());
                            assertEquals(WcOpcode.RECV, wc.opcode(i));
                            Connection from = accepted.get((int) wc.wrId(i));
                            assertEquals(from.queuePair().qpNumber(), wc.qpNumber(i));
                            String name = inbox[0].segment().getString(wc.wrId(i) * 64);
                            got.add(from.attachment() + ": " + name);
                        }
                    }
                    for (Connection c : accepted) {
                        assertTrue(c.awaitDisconnect(TIMEOUT), c + ": the client's disconnect");
                        assertTrue(c.toString().contains(address.getAddress().getHostAddress() + ":" + address.getPort() + " -> "),
                                c.toString());
                        assertEquals(address.getAddress(), c.peerAddress().getAddress());
                    }
                    return got;
                } finally {
                    for (Connection c : accepted) {
                        c.close();
                    }
                }
            });
            Set<Integer> rkeys = new HashSet<>();
            for (int i = 0; i < CLIENTS; i++) {
                try (Connection c = Connection.connect(address, new Connection.Config(), TIMEOUT);
                     MemoryRegion mr = c.protectionDomain().allocateAndRegister(TABLE)) {
                    ByteBuffer advert = ByteBuffer.wrap(c.peerPrivateData());
                    long remote = advert.getLong();
                    int rkey = advert.getInt();
                    assertEquals(TABLE, advert.getInt());
                    rkeys.add(rkey);
                    c.queuePair().postSend(new SendRequest(1).id(1).opcode(SendOpcode.RDMA_READ).signaled(true)
                            .sge(mr, 0, TABLE).rdma(remote, rkey));
                    assertEquals(WcStatus.SUCCESS, one(c.completionQueue()).status(0));
                    assertArrayEquals(content, mr.segment().toArray(ValueLayout.JAVA_BYTE), "client " + i + "'s read of the table");
                    mr.segment().setString(0, "reader " + i);
                    c.queuePair().postSend(new SendRequest(1).id(2).opcode(SendOpcode.SEND).signaled(true).sge(mr, 0, 64));
                    assertEquals(WcStatus.SUCCESS, one(c.completionQueue()).status(0));
                    assertTrue(c.toString().contains(" -> " + address.getAddress().getHostAddress() + ":" + address.getPort()),
                            c.toString());
                    assertThrows(IllegalStateException.class, () -> c.privateData(new byte[1])); // established: too late
                }
            }
            assertEquals(1, rkeys.size(), "one registration, one rkey for every client: " + rkeys);
            List<String> got = server.get(60, TimeUnit.SECONDS);
            assertEquals(CLIENTS, got.size());
            for (int i = 0; i < CLIENTS; i++) {
                assertTrue(got.contains("client " + i + ": reader " + i), got.toString());
            }
            // The connections are closed; the caller's resources are not, and still work.
            for (AutoCloseable r : serverResources) {
                if (r instanceof ProtectionDomain pd) {
                    assertFalse(pd.isClosed());
                }
                if (r instanceof CompletionQueue cq) {
                    assertFalse(cq.isClosed());
                    assertEquals(0, cq.poll(new WorkCompletions(1)));
                }
            }
        } finally {
            // regions, then queues and channel, then domains: the reverse of their making would close a
            // table before its inbox, which is fine; close in dependency order
            closeAll(serverResources, MemoryRegion.class);
            closeAll(serverResources, CompletionQueue.class);
            closeAll(serverResources, CompletionChannel.class);
            closeAll(serverResources, ProtectionDomain.class);
        }
    }

    private static void closeAll(List<AutoCloseable> all, Class<?> type) throws Exception {
        for (AutoCloseable r : all) {
            if (type.isInstance(r)) {
                r.close();
            }
        }
    }

    private static WorkCompletions one(CompletionQueue cq) {
        WorkCompletions wc = new WorkCompletions(1);
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (cq.poll(wc) == 0) {
            assertTrue(System.nanoTime() < deadline, "no completion within " + TIMEOUT);
            Thread.onSpinWait();
        }
        return wc;
    }
}
