package io.github.panamaverbs.channel;

import static io.github.panamaverbs.cm.CmIT.ip;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.cm.Listener;
import io.github.panamaverbs.verbs.AccessFlag;
import io.github.panamaverbs.verbs.MemoryRegion;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Remote memory through a {@link MessageChannel} on Soft-RoCE and SoftiWARP: a region exported as a
 * {@link RegionToken} sent over the channel; the peer reads and writes it (bytes checked), its
 * out-of-range and rights-violating accesses are refused in Java before anything is posted (the
 * channel stays usable), and the atomics work on RoCE and are refused by name on iWARP.
 */
class RemoteMemoryIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final AtomicInteger PORT = new AtomicInteger(10_000 + new Random().nextInt(9_000));
    private static final int TABLE = 64 * 1024;

    @ParameterizedTest
    @ValueSource(strings = {"rxe", "siw"})
    void anExportedRegionIsReadWrittenAndGuarded(String provider) throws Exception {
        InetSocketAddress address = new InetSocketAddress(ip(provider), PORT.incrementAndGet());
        byte[] content = new byte[TABLE];
        new Random(42).nextBytes(content);
        try (Listener listener = Listener.bind(address, 4)) {
            CompletableFuture<MessageChannel> accepted = CompletableFuture.supplyAsync(
                    () -> MessageChannel.accept(listener, new MessageChannel.Config(), TIMEOUT));
            try (MessageChannel client = MessageChannel.connect(address, new MessageChannel.Config(), TIMEOUT);
                 MessageChannel server = accepted.get(30, TimeUnit.SECONDS);
                 MemoryRegion table = server.connection().protectionDomain().allocateAndRegister(TABLE,
                         AccessFlag.REMOTE_READ, AccessFlag.REMOTE_WRITE, AccessFlag.REMOTE_ATOMIC);
                 MemoryRegion readOnly = server.connection().protectionDomain().allocateAndRegister(4096, AccessFlag.REMOTE_READ);
                 MemoryRegion local = client.connection().protectionDomain().allocateAndRegister(TABLE)) {
                table.segment().copyFrom(MemorySegment.ofArray(content));
                // the server exports the table's second half read-write and atomic, and sends the token
                RegionToken exported = RegionToken.export(table, TABLE / 2, TABLE / 2,
                        RegionToken.Right.READ, RegionToken.Right.WRITE, RegionToken.Right.ATOMIC);
                assertTrue(server.send(MemorySegment.ofArray(exported.toBytes()), TIMEOUT));
                assertThrows(IllegalArgumentException.class, () -> RegionToken.export(readOnly, 0, 4096, RegionToken.Right.WRITE));
                RegionToken token;
                try (MessageChannel.Received r = client.receive(TIMEOUT)) {
                    token = RegionToken.fromBytes(r.segment().toArray(ValueLayout.JAVA_BYTE));
                }
                assertEquals(exported, token);
                MessageChannel.RemoteMemory remote = client.remote(token);

                remote.read(0, local, 0, TABLE / 2);
                assertArrayEquals(java.util.Arrays.copyOfRange(content, TABLE / 2, TABLE),
                        local.segment().asSlice(0, TABLE / 2).toArray(ValueLayout.JAVA_BYTE), "the read");
                for (int i = 0; i < 4096; i++) {
                    local.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i ^ 0x5a));
                }
                remote.write(1000, local, 0, 4096);
                assertEquals(-1, local.segment().asSlice(0, 4096).mismatch(table.segment().asSlice(TABLE / 2 + 1000, 4096)), "the write");
                assertArrayEquals(java.util.Arrays.copyOfRange(content, 0, TABLE / 2),
                        table.segment().asSlice(0, TABLE / 2).toArray(ValueLayout.JAVA_BYTE), "the unexported half is untouched");
                remote.readAsync(1000, local, 8192, 4096).get(30, TimeUnit.SECONDS);
                assertEquals(-1, local.segment().asSlice(8192, 4096).mismatch(local.segment().asSlice(0, 4096)), "the async read");

                // refused in Java, nothing posted: the channel goes on
                assertThrows(IndexOutOfBoundsException.class, () -> remote.read(TABLE / 2 - 10, local, 0, 11));
                assertThrows(IndexOutOfBoundsException.class, () -> remote.read(-1, local, 0, 1));
                assertThrows(IndexOutOfBoundsException.class, () -> remote.write(0, local, TABLE - 10, 11)); // the local side
                MessageChannel.RemoteMemory readable = client.remote(new RegionToken(token.address(), token.rkey(), token.length(),
                        java.util.Set.of(RegionToken.Right.READ)));
                IllegalArgumentException rights = assertThrows(IllegalArgumentException.class, () -> readable.write(0, local, 0, 8));
                assertTrue(rights.getMessage().contains("not WRITE"), rights.getMessage());
                assertThrows(IllegalArgumentException.class, () -> readable.fetchAndAdd(0, 1));
                assertThrows(IllegalArgumentException.class, () -> remote.fetchAndAdd(4, 1)); // unaligned

                if (provider.equals("rxe")) {
                    long word = table.segment().get(ValueLayout.JAVA_LONG, TABLE / 2 + 64);
                    assertEquals(word, remote.fetchAndAdd(64, 5));
                    assertEquals(word + 5, remote.fetchAndAddAsync(64, 1).get(30, TimeUnit.SECONDS));
                    assertEquals(word + 6, remote.compareAndSwap(64, word + 6, 77));
                    assertEquals(77, remote.compareAndSwap(64, 1, 2)); // no swap: the old value back
                    assertEquals(77, table.segment().get(ValueLayout.JAVA_LONG, TABLE / 2 + 64));
                } else {
                    UnsupportedOperationException none = assertThrows(UnsupportedOperationException.class, () -> remote.fetchAndAdd(64, 1));
                    assertTrue(none.getMessage().contains("siw"), none.getMessage());
                }
                // and the channel still carries messages
                assertTrue(client.send(MemorySegment.ofArray(new byte[] {1, 2, 3}), TIMEOUT));
                try (MessageChannel.Received r = server.receive(TIMEOUT)) {
                    assertEquals(3, r.length());
                }
            }
        }
    }
}
