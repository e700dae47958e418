package io.github.panamaverbs.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.verbs.VerbsException;
import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** The connection manager's parts that need no device. */
class CmTest {

    @Test
    void socketAddressesRoundTrip() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            for (InetSocketAddress a : new InetSocketAddress[] {
                    new InetSocketAddress(InetAddress.getByName("10.77.0.1"), 7174),
                    new InetSocketAddress(InetAddress.getByName("fe80::1"), 65535)}) {
                InetSocketAddress back = CmId.readSockaddr(CmId.sockaddr(arena, a));
                assertEquals(a.getAddress(), back.getAddress());
                assertEquals(a.getPort(), back.getPort());
            }
            assertThrows(IllegalArgumentException.class,
                    () -> CmId.sockaddr(arena, InetSocketAddress.createUnresolved("nowhere.invalid", 1)));
        }
    }

    @Test
    void parametersCheckTheirRanges() {
        assertThrows(IllegalArgumentException.class, () -> new ConnectionParameters().retryCount(8));
        assertThrows(IllegalArgumentException.class, () -> new ConnectionParameters().initiatorDepth(256));
        assertThrows(NullPointerException.class, () -> new ConnectionParameters().privateData(null));
        assertEquals(CmEventType.TIMEWAIT_EXIT, CmEventType.of(15));
        assertEquals("RDMA_CM_EVENT_ESTABLISHED", CmEventType.ESTABLISHED.cName());
    }

    @Test
    void withoutRdmaTheChannelSaysSo() {
        Assumptions.assumeFalse(Files.exists(Path.of("/dev/infiniband/rdma_cm")), "this host has rdma_cm");
        VerbsException e = assertThrows(VerbsException.class, EventChannel::create);
        assertEquals("rdma_create_event_channel", e.verb());
        assertTrue(e.getMessage().contains("no RDMA device"), e.getMessage());
    }
}
