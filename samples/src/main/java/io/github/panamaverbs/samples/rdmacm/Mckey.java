package io.github.panamaverbs.samples.rdmacm;

import io.github.panamaverbs.cm.CmEvent;
import io.github.panamaverbs.cm.CmId;
import io.github.panamaverbs.cm.ConnectionException;
import io.github.panamaverbs.cm.EventChannel;
import io.github.panamaverbs.cm.PortSpace;
import io.github.panamaverbs.samples.common.Options;
import io.github.panamaverbs.samples.common.Resources;
import io.github.panamaverbs.samples.common.SampleException;
import io.github.panamaverbs.verbs.AddressHandle;
import io.github.panamaverbs.verbs.CompletionQueue;
import io.github.panamaverbs.verbs.MemoryRegion;
import io.github.panamaverbs.verbs.ProtectionDomain;
import io.github.panamaverbs.verbs.QpInitAttributes;
import io.github.panamaverbs.verbs.QpType;
import io.github.panamaverbs.verbs.QueuePair;
import io.github.panamaverbs.verbs.ReceiveRequest;
import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.WcStatus;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Duration;

/**
 * {@code mckey}: rdmacm-utils' multicast test. Every node (one per {@code -c}) resolves the group
 * address from the bound address, creates a UD queue pair, joins the group, waits 3 s, and then
 * either sends {@code -C} datagrams of {@code -S} bytes to the group with the queue pair number as
 * immediate data ({@code -s}) or receives as many. The same flags and lines as the C tool; unlike it,
 * the receiver gives up after {@code --timeout} seconds instead of spinning forever on a lost
 * datagram, and checks each completion's status and length.
 */
public final class Mckey {
    private static final int GRH = 40;
    private static final Duration CM_TIMEOUT = Duration.ofSeconds(2);

    private Mckey() {
    }

    /** One ID and its UD resources. */
    private static final class Node {
        CmId id;
        ProtectionDomain pd;
        CompletionQueue cq;
        MemoryRegion mr;
        QueuePair qp;
        AddressHandle ah;
        int remoteQpn;
        int remoteQkey;
    }

    /** Runs the tool with {@code args}, printing on {@code out}; returns the exit status. */
    public static int main(String[] args, PrintStream out) {
        Options o = new Options("Usage:\n  samples/run mckey -m multicast_address [options]\nAs rdmacm-utils' mckey: "
                + "joins a multicast group and sends to it (-s) or receives from it.")
                .value('m', "mcast", "multicast_address", "the group to join")
                .value('M', "unmapped", "address", "an unmapped (AF_IB) group: not supported here")
                .flag('s', "sender", "send (default: receive)")
                .value('b', "bind", "bind_address", "the local address (selects the RDMA device)")
                .value('c', "connections", "n", "nodes (IDs and queue pairs), default 1")
                .value('C', "count", "message_count", "datagrams per node, default 10")
                .value('S', "size", "message_size", "bytes per datagram, default 100")
                .value('p', "port-space", "ps", "port space: 0x111 (UDP, the default)")
                .flag('o', "send-only", "join as a send-only full member: not supported here")
                .flag('l', "no-loopback", "join without multicast loopback: not supported here")
                .value('\0', "timeout", "seconds", "give up receiving after this long (default 30)");
        if (!o.parse(args, out)) {
            return 0;
        }
        if (o.has("unmapped") || o.has("send-only") || o.has("no-loopback")) {
            throw new Options.UsageException("-M, -o and -l are not supported by the Java mckey");
        }
        if (!o.has("mcast")) {
            throw new Options.UsageException("-m multicast_address is required");
        }
        if (o.number("port-space", PortSpace.UDP.value(), 0, 0xffff) != PortSpace.UDP.value()) {
            throw new Options.UsageException("only port space 0x111 (UDP) is supported");
        }
        boolean sender = o.has("sender");
        int connections = o.integer("connections", 1, 1, 1024);
        int count = o.integer("count", 10, 0, 1 << 20);
        int size = o.integer("size", 100, 0, 1 << 16);
        Duration timeout = Duration.ofSeconds(o.integer("timeout", 30, 1, 86_400));
        InetAddress group = address(o.string("mcast", null));
        InetAddress local = o.has("bind") ? address(o.string("bind", null)) : null;

        out.println("mckey: starting " + (sender ? "client" : "server"));
        out.println("mckey: joining");
        out.flush();
        int status = 0;
        try (Resources res = new Resources()) {
            EventChannel channel = res.add(EventChannel.create());
            Node[] nodes = new Node[connections];
            for (int i = 0; i < connections; i++) {
                Node n = nodes[i] = new Node();
                n.id = res.add(channel.createId(PortSpace.UDP));
                n.id.resolveAddress(local == null ? null : new InetSocketAddress(local, 0),
                        new InetSocketAddress(group, 0), CM_TIMEOUT);
                int mtu = n.id.context().queryPort(n.id.port()).activeMtu().bytes();
                if (count > 0 && size > mtu) {
                    out.printf("mckey: message_size %d is larger than active mtu %d%n", size, mtu);
                    return 1;
                }
                n.pd = res.add(n.id.context().allocateProtectionDomain());
                n.cq = res.add(n.id.context().createCompletionQueue(count > 0 ? count * 2 : 2));
                n.mr = res.add(n.pd.allocateAndRegister(size + GRH));
                n.qp = res.add(n.id.createQueuePair(n.pd, new QpInitAttributes(QpType.UD, n.cq, n.cq)
                        .maxSendWr(Math.max(1, count)).maxRecvWr(Math.max(1, count))));
                if (!sender) {
                    ReceiveRequest recv = new ReceiveRequest(1).id(i).sge(n.mr, 0, size + GRH);
                    for (int k = 0; k < count; k++) {
                        n.qp.postReceive(recv);
                    }
                }
                CmEvent joined = n.id.joinMulticast(group, CM_TIMEOUT);
                out.printf("mckey: joined dgid: %s mlid 0x%x sl %d%n", joined.addressVector().grh().dgid(),
                        joined.addressVector().dlid(), joined.addressVector().serviceLevel());
                out.flush();
                n.remoteQpn = joined.remoteQpNumber();
                n.remoteQkey = joined.qkey();
                n.ah = res.add(n.pd.createAddressHandle(joined.addressVector()));
            }
            sleep(3000); // as the C tool: time for the fabric to set up the group
            if (count > 0) {
                if (sender) {
                    out.println("initiating data transfers");
                    out.flush();
                    for (Node n : nodes) {
                        send(n, count, size, timeout);
                    }
                } else {
                    out.println("receiving data transfers");
                    out.flush();
                    for (Node n : nodes) {
                        receive(n, count, size, timeout);
                    }
                }
                out.println("data transfers complete");
            }
            for (Node n : nodes) {
                n.id.leaveMulticast(group);
            }
        } catch (ConnectionException e) {
            CmEvent ev = e.event();
            out.printf("mckey: event: %s, error: %d%n", ev != null ? ev.type().cName() : "timeout", ev != null ? ev.status() : -110);
            status = ev != null && ev.status() != 0 ? ev.status() : -1;
        }
        out.println("test complete");
        out.println("return status " + status);
        out.flush();
        return status == 0 ? 0 : 255;
    }

    /** {@code count} datagrams to the group, the immediate data this queue pair's number; the last one signaled. */
    private static void send(Node n, int count, int size, Duration timeout) {
        SendRequest send = new SendRequest(1).opcode(SendOpcode.SEND_WITH_IMM).immediate(n.qp.qpNumber())
                .sge(n.mr, 0, size).datagram(n.ah, n.remoteQpn, n.remoteQkey);
        for (int k = 0; k < count; k++) {
            n.qp.postSend(send.signaled(k == count - 1));
        }
        WorkCompletions wc = await(n.cq, 1, timeout, "send");
        if (wc.status(0) != WcStatus.SUCCESS) {
            throw new SampleException("send completion failed: " + wc.status(0).description());
        }
    }

    private static void receive(Node n, int count, int size, Duration timeout) {
        for (int k = 0; k < count; k++) {
            WorkCompletions wc = await(n.cq, 1, timeout, "datagram " + (k + 1) + " of " + count);
            if (wc.status(0) != WcStatus.SUCCESS || wc.byteLength(0) != size + GRH) {
                throw new SampleException("receive " + (k + 1) + ": " + wc.status(0).description() + ", "
                        + wc.byteLength(0) + " bytes (expected " + (size + GRH) + " with the GRH)");
            }
        }
    }

    private static WorkCompletions await(CompletionQueue cq, int n, Duration timeout, String what) {
        WorkCompletions wc = new WorkCompletions(n);
        long deadline = System.nanoTime() + timeout.toNanos();
        while (cq.poll(wc) == 0) {
            if (System.nanoTime() - deadline > 0) {
                throw new SampleException("mckey: no " + what + " within " + timeout.toSeconds() + " s");
            }
            Thread.onSpinWait();
        }
        return wc;
    }

    private static InetAddress address(String s) {
        try {
            return InetAddress.getByName(s);
        } catch (UnknownHostException e) {
            throw new SampleException("getaddrinfo failed (Name or service not known) - invalid hostname or IP address");
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SampleException("interrupted");
        }
    }
}
