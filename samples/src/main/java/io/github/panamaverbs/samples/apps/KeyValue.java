package io.github.panamaverbs.samples.apps;

import io.github.panamaverbs.channel.MessageChannel;
import io.github.panamaverbs.channel.RegionToken;
import io.github.panamaverbs.channel.RpcClient;
import io.github.panamaverbs.channel.RpcServer;
import io.github.panamaverbs.samples.common.Options;
import io.github.panamaverbs.verbs.AccessFlag;
import io.github.panamaverbs.verbs.MemoryRegion;
import io.github.panamaverbs.verbs.ProtectionDomain;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code kv-server} and {@code kv-client}: a key-value service on the library's channel layer. The
 * server keeps a table of fixed slots (key i in slot i: a length, then the value) in one registered
 * region shared by all clients; a client PUTs by RPC (the server writes the slot) and GETs by a
 * one-sided RDMA READ of the slot through the token that the server's empty call returns (no
 * versions: a GET racing a PUT of its key may read a mix of the two values).
 */
public final class KeyValue {
    private static final int SLOT = 64;
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    private KeyValue() {
    }

    private static Options options(String synopsis) {
        return new Options(synopsis).value('p', "port", "PORT", "the server's port (default 7480)")
                .value('n', "keys", "N", "the table's keys, 0 to N-1 (default 1024)");
    }

    /** {@code kv-server [-p PORT] [-n KEYS] ADDRESS}: serves until killed. */
    public static int server(String[] args, PrintStream out) {
        Options o = options("kv-server [-p PORT] [-n KEYS] ADDRESS");
        if (!o.parse(args, out)) {
            return 0;
        }
        if (o.positional().size() != 1) {
            return usage(o, out);
        }
        int keys = o.integer("keys", 1024, 1, 1 << 20);
        AtomicReference<MemoryRegion> table = new AtomicReference<>();
        MessageChannel.Config config = new MessageChannel.Config().messageSize(256).protectionDomain(ctx -> {
            synchronized (table) { // one device (the address's): one domain, one table, one rkey for all
                if (table.get() == null) {
                    ProtectionDomain pd = ctx.allocateProtectionDomain();
                    table.set(pd.allocateAndRegister((long) keys * SLOT, AccessFlag.REMOTE_READ));
                }
                return table.get().protectionDomain();
            }
        });
        InetSocketAddress address = new InetSocketAddress(o.positional().get(0), o.integer("port", 7480, 1, 65535));
        try (RpcServer server = RpcServer.start(address, config, (request, response) -> {
            MemorySegment t = table.get().segment();
            if (request.byteSize() == 0) { // the token of the table, for GETs
                byte[] token = RegionToken.export(table.get(), 0, t.byteSize(), RegionToken.Right.READ).toBytes();
                MemorySegment.copy(token, 0, response, ValueLayout.JAVA_BYTE, 0, token.length);
                return token.length;
            }
            int key = request.get(ValueLayout.JAVA_INT_UNALIGNED, 0); // PUT: key, then the value
            int length = (int) request.byteSize() - 4;
            if (key < 0 || key >= keys || length > SLOT - 4) {
                throw new IllegalArgumentException("key " + key + " (of " + keys + ") or value of " + length + " bytes (at most "
                        + (SLOT - 4) + ")");
            }
            MemorySegment.copy(request, 4, t, (long) key * SLOT + 4, length);
            t.set(ValueLayout.JAVA_INT_UNALIGNED, (long) key * SLOT, length);
            return 0;
        })) {
            out.println("kv-server: " + keys + " keys on " + server.localAddress());
            out.flush();
            new java.util.concurrent.CountDownLatch(1).await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return 0;
    }

    /** {@code kv-client [-p PORT] SERVER put KEY VALUE | get KEY ...}: the commands in order. */
    public static int client(String[] args, PrintStream out) {
        Options o = options("kv-client [-p PORT] SERVER (put KEY VALUE | get KEY)...");
        if (!o.parse(args, out)) {
            return 0;
        }
        if (o.positional().size() < 3) {
            return usage(o, out);
        }
        InetSocketAddress server = new InetSocketAddress(o.positional().get(0), o.integer("port", 7480, 1, 65535));
        try (RpcClient client = RpcClient.connect(server, new MessageChannel.Config().messageSize(256), TIMEOUT);
             MemoryRegion local = client.channel().connection().protectionDomain().allocateAndRegister(SLOT)) {
            RegionToken token;
            try (RpcClient.Response r = client.call(MemorySegment.NULL, TIMEOUT)) {
                token = RegionToken.fromBytes(r.segment().toArray(ValueLayout.JAVA_BYTE));
            }
            MessageChannel.RemoteMemory table = client.channel().remote(token);
            var words = o.positional().subList(1, o.positional().size());
            for (int i = 0; i < words.size(); i++) {
                int key = Integer.parseInt(words.get(i + 1));
                if (words.get(i).equals("put")) {
                    byte[] value = words.get(i + 2).getBytes(StandardCharsets.UTF_8);
                    MemorySegment request = MemorySegment.ofArray(new byte[4 + value.length]);
                    request.set(ValueLayout.JAVA_INT_UNALIGNED, 0, key);
                    MemorySegment.copy(value, 0, request, ValueLayout.JAVA_BYTE, 4, value.length);
                    client.call(request, TIMEOUT).close();
                    out.println("put " + key + " = " + words.get(i + 2));
                    i += 2;
                } else {
                    table.read((long) key * SLOT, local, 0, SLOT); // one-sided: the server's CPU takes no part
                    int length = local.segment().get(ValueLayout.JAVA_INT_UNALIGNED, 0);
                    out.println("get " + key + " = " + new String(local.segment().asSlice(4, length).toArray(ValueLayout.JAVA_BYTE),
                            StandardCharsets.UTF_8));
                    i += 1;
                }
            }
        }
        return 0;
    }

    private static int usage(Options o, PrintStream out) {
        out.print(o.help());
        return 1;
    }
}
