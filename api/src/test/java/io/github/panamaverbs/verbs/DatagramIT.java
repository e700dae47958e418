package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/**
 * UD verbs beyond the send itself, on the device: replying to a datagram's sender from its
 * completion ({@code ibv_init_ah_from_wc}, {@code ibv_create_ah_from_wc}), multicast groups attached
 * to queue pairs ({@code ibv_attach_mcast}, {@code ibv_detach_mcast}), and the fork status.
 */
@RequiresRdma
class DatagramIT {
    private static final int QKEY = 0x11111111;
    private static final int GRH = Context.GRH_BYTES;
    /** A RoCE v2 multicast group: ::ffff:239.7.7.7. */
    private static final Gid GROUP = Gid.parse("::ffff:239.7.7.7");

    private static void fill(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(JAVA_BYTE, i, (byte) (i * 7 + seed));
        }
    }

    @Test
    void replyToTheSenderFromItsCompletion(TestDevice dev) throws Exception {
        try (Pair p = new Pair(dev, QpType.UD)) {
            p.a.activateDatagram(p.how, QKEY);
            p.b.activateDatagram(p.how, QKEY);
            Gid gid = p.ctx.queryGid(dev.port(), dev.gidIndex());
            AddressHandle toB = p.keep(p.pd.createAddressHandle(AddressVector.global(dev.port(), gid, dev.gidIndex(), 64)));
            fill(p.mrA.segment().asSlice(0, 256), 1);
            p.b.postReceive(new ReceiveRequest(1).sge(p.mrB, 0, GRH + 256));
            p.a.postSend(new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(p.mrA, 0, 256)
                    .datagram(toB, p.b.qpNumber(), QKEY));
            p.expectOne(p.cqA, WcOpcode.SEND);
            WorkCompletions r = p.expectOne(p.cqB, WcOpcode.RECV);
            assertTrue(r.hasGrh(0));
            MemorySegment grh = p.mrB.segment().asSlice(0, GRH);

            AddressVector back = p.ctx.addressVectorFrom(dev.port(), r, 0, grh);
            assertNotNull(back.grh(), "a RoCE reply has a global route");
            assertEquals(gid, back.grh().dgid(), "the reply goes to the sender's GID");
            assertEquals(dev.gidIndex(), back.grh().sgidIndex(), "from the GID index the datagram came to");

            AddressHandle reply = p.keep(p.pd.createAddressHandle(r, 0, grh, dev.port()));
            fill(p.mrB.segment().asSlice(4096, 128), 2);
            p.a.postReceive(new ReceiveRequest(1).sge(p.mrA, 8192, GRH + 128));
            p.b.postSend(new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(p.mrB, 4096, 128)
                    .datagram(reply, r.sourceQp(0), QKEY));
            p.expectOne(p.cqB, WcOpcode.SEND);
            WorkCompletions a = p.expectOne(p.cqA, WcOpcode.RECV);
            assertEquals(p.b.qpNumber(), a.sourceQp(0));
            assertEquals(-1, p.mrB.segment().asSlice(4096, 128).mismatch(p.mrA.segment().asSlice(8192 + GRH, 128)));

            assertThrows(NullPointerException.class, () -> p.ctx.addressVectorFrom(dev.port(), r, 0, null));
            assertThrows(IllegalArgumentException.class,
                    () -> p.ctx.addressVectorFrom(dev.port(), r, 0, grh.asSlice(0, 39)));
            assertThrows(IndexOutOfBoundsException.class, () -> p.ctx.addressVectorFrom(dev.port(), r, 1, grh));
        }
    }

    @Test
    void multicastReachesEveryAttachedQueuePairAndNoneAfterDetach(TestDevice dev) throws Exception {
        // On RoCE v2 the datagrams are IPv4 multicast: the host's IP stack must be a member of the
        // group too, or it drops them (the connection manager's joinMulticast does this; with verbs
        // alone it is the application's part, here a DatagramChannel joined on the device's netdev).
        String netdev = System.getenv("RDMA_NETDEV");
        assertNotNull(netdev, "RDMA_NETDEV (set by scripts/with-rdma)");
        java.net.NetworkInterface nif = java.net.NetworkInterface.getByName(netdev);
        assertNotNull(nif, "network interface " + netdev);
        try (java.nio.channels.DatagramChannel member = java.nio.channels.DatagramChannel.open(
                     java.net.StandardProtocolFamily.INET).bind(null);
             Pair p = new Pair(dev, QpType.UD);
             CompletionQueue cqC = p.ctx.createCompletionQueue(16);
             QueuePair c = p.pd.createQueuePair(new QpInitAttributes(QpType.UD, cqC, cqC).maxRecvWr(8))) {
            p.a.activateDatagram(p.how, QKEY);
            p.b.activateDatagram(p.how, QKEY);
            c.activateDatagram(p.how, QKEY);
            member.join(java.net.InetAddress.getByName("239.7.7.7"), nif);
            p.b.attachMulticast(GROUP, 0);
            c.attachMulticast(GROUP, 0);
            AddressHandle toGroup = p.keep(p.pd.createAddressHandle(
                    AddressVector.global(dev.port(), GROUP, dev.gidIndex(), 64)));
            p.b.postReceive(new ReceiveRequest(1).id(1).sge(p.mrB, 0, GRH + 200));
            c.postReceive(new ReceiveRequest(1).id(2).sge(p.mrB, 4096, GRH + 200));
            fill(p.mrA.segment().asSlice(0, 200), 3);
            SendRequest send = new SendRequest(1).opcode(SendOpcode.SEND).signaled(true).sge(p.mrA, 0, 200)
                    .datagram(toGroup, 0xFFFFFF, QKEY);
            p.a.postSend(send);
            p.expectOne(p.cqA, WcOpcode.SEND);
            WorkCompletions rb = p.expectOne(p.cqB, WcOpcode.RECV);
            WorkCompletions rc = p.expectOne(cqC, WcOpcode.RECV);
            assertEquals(p.a.qpNumber(), rb.sourceQp(0));
            assertEquals(p.a.qpNumber(), rc.sourceQp(0));
            MemorySegment sent = p.mrA.segment().asSlice(0, 200);
            assertEquals(-1, sent.mismatch(p.mrB.segment().asSlice(GRH, 200)), "B's copy");
            assertEquals(-1, sent.mismatch(p.mrB.segment().asSlice(4096 + GRH, 200)), "C's copy");

            p.b.detachMulticast(GROUP, 0);
            p.b.postReceive(new ReceiveRequest(1).id(3).sge(p.mrB, 0, GRH + 200));
            c.postReceive(new ReceiveRequest(1).id(4).sge(p.mrB, 4096, GRH + 200));
            fill(sent, 4);
            p.a.postSend(send);
            p.expectOne(p.cqA, WcOpcode.SEND);
            assertEquals(4, p.expectOne(cqC, WcOpcode.RECV).wrId(0));
            assertEquals(-1, sent.mismatch(p.mrB.segment().asSlice(4096 + GRH, 200)), "C's second copy");
            Thread.sleep(500);
            assertEquals(0, p.cqB.poll(p.wc), "B detached: nothing more for it");

            c.detachMulticast(GROUP, 0);
            assertThrows(VerbsException.class, () -> c.detachMulticast(GROUP, 0), "detached twice");
            assertThrows(IllegalStateException.class, () -> new Object() {
                void run() throws Exception {
                    try (Pair rc = new Pair(dev, QpType.RC)) {
                        rc.a.attachMulticast(GROUP, 0);
                    }
                }
            }.run());
            assertThrows(IllegalArgumentException.class, () -> c.attachMulticast(GROUP, 70000));
        }
    }

    @Test
    void forkSafetyIsTheKernels(TestDevice dev) {
        // Linux 5.13 and later keep registered pages safe across fork(): libibverbs says so.
        assertEquals(Device.ForkStatus.UNNEEDED, Device.forkStatus());
        try (Context ctx = dev.open()) {
            // With a device open it is too late for ibv_fork_init: rdma-core 44 (Debian 12) says EINVAL even
            // when the kernel makes it unneeded; later rdma-core returns 0 then.
            try {
                Device.forkInit();
            } catch (VerbsException e) {
                assertEquals("ibv_fork_init", e.verb());
                assertEquals(22, e.errno(), e.getMessage());
                assertTrue(e.getMessage().contains("before the first device is opened"), e.getMessage());
            }
        }
        assertEquals(Device.ForkStatus.UNNEEDED, Device.forkStatus());
    }
}
