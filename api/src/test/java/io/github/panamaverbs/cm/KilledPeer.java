package io.github.panamaverbs.cm;

import io.github.panamaverbs.verbs.AccessFlag;
import io.github.panamaverbs.verbs.MemoryRegion;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;

/**
 * The peer that {@link CmIT#aPeerKilledMidTransferIsReported} kills: connects to {@code ip port},
 * offering a 64 KiB region the server may RDMA-write (its address and rkey in the private data),
 * says "CONNECTED" and waits to be killed.
 */
public final class KilledPeer {
    private KilledPeer() {
    }

    public static void main(String[] args) throws Exception {
        InetSocketAddress server = new InetSocketAddress(InetAddress.getByName(args[0]), Integer.parseInt(args[1]));
        MemoryRegion[] mr = new MemoryRegion[1];
        ConnectionParameters parameters = new ConnectionParameters();
        Connection.Config config = new Connection.Config().parameters(parameters).beforeConnect(c -> {
            mr[0] = c.own(c.protectionDomain().allocateAndRegister(65536, AccessFlag.REMOTE_WRITE));
            parameters.privateData(ByteBuffer.allocate(12).putLong(mr[0].address()).putInt(mr[0].rkey()).array());
        });
        Connection c = Connection.connect(server, config, Duration.ofSeconds(30));
        System.out.println("CONNECTED " + c.queuePair().qpNumber());
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
