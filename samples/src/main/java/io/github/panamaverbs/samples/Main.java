package io.github.panamaverbs.samples;

import io.github.panamaverbs.samples.apps.KeyValue;
import io.github.panamaverbs.samples.apps.RpcPing;
import io.github.panamaverbs.samples.common.Options;
import io.github.panamaverbs.samples.common.SampleException;
import io.github.panamaverbs.samples.doctor.Doctor;
import io.github.panamaverbs.samples.ibverbs.AsyncWatch;
import io.github.panamaverbs.samples.ibverbs.DevInfo;
import io.github.panamaverbs.samples.ibverbs.Devices;
import io.github.panamaverbs.samples.ibverbs.PingPong;
import io.github.panamaverbs.samples.perftest.Bandwidth;
import io.github.panamaverbs.samples.perftest.Latency;
import io.github.panamaverbs.samples.rdmacm.Mckey;
import io.github.panamaverbs.samples.rdmacm.RdmaExamples;
import io.github.panamaverbs.samples.rdmacm.Rping;
import io.github.panamaverbs.verbs.RdmaException;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The launcher behind {@code samples/run TOOL [ARGS]}: the tool's name to its class. The tools live in
 * packages named after where their C originals live: {@code ibverbs} (rdma-core's
 * {@code libibverbs/examples}), {@code rdmacm} ({@code librdmacm/examples}, packaged as rdmacm-utils),
 * {@code perftest} (linux-rdma's perftest), {@code apps} (applications on the channel layer: a
 * key-value service, an RPC ping) and {@code doctor} (this project's own); {@code common} holds what
 * they share.
 */
public final class Main {
    /** A tool: runs with its arguments, prints on {@code out}, returns the exit status. */
    interface Tool {
        int run(String[] args, PrintStream out);
    }

    private record Entry(Tool tool, String summary) {
    }

    private static final Map<String, Entry> TOOLS = new LinkedHashMap<>();

    static {
        TOOLS.put("devices", new Entry(Devices::main, "list the RDMA devices (ibv_devices)"));
        TOOLS.put("devinfo", new Entry(DevInfo::main, "device and port attributes (ibv_devinfo)"));
        TOOLS.put("rc-pingpong", new Entry(PingPong::rc, "RC send/receive ping-pong (ibv_rc_pingpong)"));
        TOOLS.put("uc-pingpong", new Entry(PingPong::uc, "UC send/receive ping-pong (ibv_uc_pingpong)"));
        TOOLS.put("ud-pingpong", new Entry(PingPong::ud, "UD send/receive ping-pong (ibv_ud_pingpong)"));
        TOOLS.put("srq-pingpong", new Entry(PingPong::srq, "RC ping-pong on many QPs with one SRQ (ibv_srq_pingpong)"));
        TOOLS.put("write-lat", new Entry(Latency::write, "RDMA write latency (perftest's ib_write_lat)"));
        TOOLS.put("read-lat", new Entry(Latency::read, "RDMA read latency (perftest's ib_read_lat)"));
        TOOLS.put("atomic-lat", new Entry(Latency::atomic, "atomic latency (perftest's ib_atomic_lat)"));
        TOOLS.put("send-lat", new Entry(Latency::send, "send latency (perftest's ib_send_lat)"));
        TOOLS.put("write-bw", new Entry(Bandwidth::write, "RDMA write bandwidth (perftest's ib_write_bw)"));
        TOOLS.put("send-bw", new Entry(Bandwidth::send, "send bandwidth, RC, UC or UD (perftest's ib_send_bw)"));
        TOOLS.put("rping", new Entry(Rping::main, "RDMA CM ping: read, write and validate a buffer (rdmacm-utils' rping)"));
        TOOLS.put("rdma-server", new Entry(RdmaExamples::server, "RDMA CM example server: 16 bytes each way (rdmacm-utils' rdma_server)"));
        TOOLS.put("rdma-client", new Entry(RdmaExamples::client, "RDMA CM example client: 16 bytes each way (rdmacm-utils' rdma_client)"));
        TOOLS.put("mckey", new Entry(Mckey::main, "multicast join, send and receive (rdmacm-utils' mckey)"));
        TOOLS.put("asyncwatch", new Entry(AsyncWatch::main, "print the device's async events (ibv_asyncwatch)"));
        TOOLS.put("kv-server", new Entry(KeyValue::server, "key-value server on the channel layer: PUT by RPC, GET by RDMA READ"));
        TOOLS.put("kv-client", new Entry(KeyValue::client, "key-value client: kv-client SERVER put KEY VALUE get KEY ..."));
        TOOLS.put("rpc-ping", new Entry(RpcPing::main, "RPC round trips on the channel layer (server, or --client)"));
        TOOLS.put("doctor", new Entry(Doctor::main, "check what RDMA needs on this host, with the command that fixes each problem"));
    }

    private Main() {
    }

    /**
     * Runs the tool named by the first argument.
     *
     * @param args the tool's name, then its arguments
     */
    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** Runs a tool as {@link #main} does, and returns its exit status instead of exiting. */
    static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0 || args[0].equals("-h") || args[0].equals("--help")) {
            (args.length == 0 ? err : out).print(usage());
            return args.length == 0 ? 1 : 0;
        }
        Entry entry = TOOLS.get(args[0]);
        if (entry == null) {
            err.println("unknown tool " + args[0] + "\n" + usage());
            return 1;
        }
        String name = args[0];
        try {
            return entry.tool.run(Arrays.copyOfRange(args, 1, args.length), out);
        } catch (Options.UsageException e) {
            out.flush();
            err.println(name + ": " + e.getMessage() + "\nTry 'samples/run " + name + " --help'.");
        } catch (SampleException | RdmaException e) {
            out.flush();
            err.println(name + ": " + e.getMessage());
        } catch (IllegalArgumentException | IllegalStateException e) {
            out.flush();
            err.println(name + ": " + e);
        }
        return 1;
    }

    private static String usage() {
        StringBuilder b = new StringBuilder("Usage: samples/run TOOL [ARGS...]   (samples/run TOOL --help for its flags)\nTools:\n");
        TOOLS.forEach((n, e) -> b.append(String.format("  %-14s %s%n", n, e.summary)));
        return b.toString();
    }
}
