package io.github.panamaverbs.samples.perftest;

import io.github.panamaverbs.samples.common.Common;
import io.github.panamaverbs.samples.common.Options;
import io.github.panamaverbs.samples.common.Resources;
import io.github.panamaverbs.samples.common.SampleException;
import io.github.panamaverbs.verbs.AddressHandle;
import io.github.panamaverbs.verbs.AddressVector;
import io.github.panamaverbs.verbs.CompletionQueue;
import io.github.panamaverbs.verbs.ConnectOptions;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.Mtu;
import io.github.panamaverbs.verbs.PortAttributes;
import io.github.panamaverbs.verbs.ProtectionDomain;
import io.github.panamaverbs.verbs.QpType;
import io.github.panamaverbs.verbs.QpInitAttributes;
import io.github.panamaverbs.verbs.QueuePair;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;

/**
 * What the perftest tools ({@link Latency}, {@link Bandwidth}) share: perftest's common flags and
 * their parsing, the run up to an agreed MTU (device, set_mtu, {@link PerftestLink}'s preamble, the
 * UD size limit), the banner's common lines, the address lines and the JSON file. Each tool adds its
 * own flags, banner lines and measurement.
 */
abstract class PerftestTool<V extends Enum<V>> {
    static final String LINE = "---------------------------------------------------------------------------------------";
    /** perftest's largest size of -a: 2^23. */
    static final int MAX_SIZE = 1 << 23;

    /** The test: the tool's name is its name in lower case and a suffix ({@code write-lat}). */
    final V verb;
    /** The tool's name here ({@code write-lat}) and perftest's binary ({@code ib_write_lat}). */
    final String tool;
    private final String cName;

    String server;
    int tcpPort;
    String deviceName;
    int ibPort;
    int gidIndex;
    int size;
    boolean sizeGiven;
    boolean all;
    int iters;
    int inline;
    QpType type;
    String jsonFile;
    Duration timeout;
    int mtuBytes;
    /** {@code -R}: the queue pairs, and the control channel, connected with rdma_cm ({@link PerftestCm}); for the tools that have it. */
    boolean rdmaCm;

    /** @param suffix after the verb's name: {@code WRITE} and "-lat" make write-lat, perftest's ib_write_lat */
    PerftestTool(V verb, String suffix) {
        this.verb = verb;
        this.tool = verb.name().toLowerCase(Locale.ROOT) + suffix;
        this.cName = "ib_" + tool.replace('-', '_');
    }

    /** The usage lines and the flags every tool has first: -p -d -i -x -m ({@code mtuHelp} its help). */
    final Options options(String mtuHelp) {
        return new Options("Usage:\n  samples/run " + tool + " [options]          start a server and wait for connection\n"
                + "  samples/run " + tool + " [options] <host>   connect to server at <host>\nAs perftest's " + cName + ".")
                .value('p', "port", "port", "listen on/connect to port <port> (default 18515)")
                .value('d', "ib-dev", "dev", "use IB device <dev> (default first device found)")
                .value('i', "ib-port", "port", "use port <port> of IB device (default 1)")
                .value('x', "gid-index", "index", "GID index (needed on RoCE)")
                .value('m', "mtu", "mtu", mtuHelp);
    }

    /** The flags every tool has last: --out_json_file, --out_json, --timeout. */
    static Options lastOptions(Options o) {
        return o.value('\0', "out_json_file", "file", "write the results as JSON to <file>")
                .flag('\0', "out_json", "write the results as JSON (to perftest_out.json unless --out_json_file)")
                .value('\0', "timeout", "seconds", "give up when the peer is silent this long (default 20)");
    }

    /**
     * Parses the common flags of {@link #options} and {@link #lastOptions}, and -s -a -n; false when
     * {@code --help} was answered.
     */
    final boolean parseCommon(Options o, String[] args, PrintStream out, int defaultSize, int defaultIters) {
        if (!o.parse(args, out)) {
            return false;
        }
        if (o.positional().size() > 1) {
            throw new Options.UsageException("one server name at most, not " + o.positional());
        }
        server = o.positional().isEmpty() ? null : o.positional().getFirst();
        tcpPort = o.integer("port", 18515, 1, 65535);
        deviceName = o.string("ib-dev", null);
        ibPort = o.integer("ib-port", 1, 1, 255);
        gidIndex = o.integer("gid-index", -1, -1, 255);
        mtuBytes = o.integer("mtu", 0, 0, 1 << 20);
        if (mtuBytes != 0) {
            Common.mtu(mtuBytes);   // a usage error now, before anything opens, for a value that is no MTU
        }
        all = o.has("all");
        size = o.integer("size", defaultSize, 1, MAX_SIZE);
        sizeGiven = o.has("size");
        iters = o.integer("iters", defaultIters, 5, 100_000_000);
        jsonFile = o.has("out_json") || o.has("out_json_file") ? o.string("out_json_file", "perftest_out.json") : null;
        timeout = Duration.ofSeconds(o.integer("timeout", 20, 1, 86_400));
        return true;
    }

    /**
     * -c: RC or UC, and UD where {@code udAllowed}; {@code noUd} is the message for UD where it is
     * not, {@code known} the list in the message for an unknown type.
     */
    static QpType connection(Options o, boolean udAllowed, String noUd, String known) {
        String c = o.string("connection", "RC").toUpperCase(Locale.ROOT);
        return switch (c) {
            case "RC" -> QpType.RC;
            case "UC" -> QpType.UC;
            case "UD" -> {
                if (!udAllowed) {
                    throw new Options.UsageException("--connection: " + noUd);
                }
                yield QpType.UD;
            }
            default -> throw new Options.UsageException("--connection: " + c + " is not " + known);
        };
    }

    /** The tool's own flags: false when {@code --help} was answered. */
    abstract boolean parse(String[] args, PrintStream out);

    /** What the tool settles after parsing and before opening anything (perftest's force_dependecies). */
    void settle(PrintStream out) {
    }

    /** Everything after the MTU is agreed (and a UD size fitted to it); returns the exit status. */
    abstract int measureAll(Resources res, Context ctx, PortAttributes port, PerftestLink link, Mtu mtu, PrintStream out);

    /**
     * The run: the flags, the device, set_mtu, the connection and its preamble, the UD size limit
     * (perftest's check_mtu: {@code -s} above the MTU is an error, the default size and -a become
     * the MTU), then {@link #measureAll}.
     */
    final int run(String[] args, PrintStream out) {
        if (!parse(args, out)) {
            return 0;
        }
        settle(out);
        try (Resources res = new Resources()) {
            Context ctx = res.add(Common.openDevice(deviceName));
            PortAttributes port = ctx.queryPort(ibPort);
            Mtu localMtu = localMtu(out, port);
            try (PerftestLink link = rdmaCm ? PerftestLink.openRdmaCm(server, tcpPort, timeout, out)
                    : PerftestLink.open(server, tcpPort, timeout, out)) {
                link.keysWithGid(gidIndex >= 0);
                Mtu mtu = link.preamble(localMtu);
                if (type == QpType.UD && size > mtu.bytes()) {
                    if (!all && sizeGiven) {
                        throw new SampleException("Max message size in UD cannot be greater than MTU (" + mtu.bytes() + ")");
                    }
                    out.println(" Max msg size in UD is MTU " + mtu.bytes() + "\n Changing to this MTU");
                    size = mtu.bytes();
                }
                return measureAll(res, ctx, port, link, mtu, out);
            }
        }
    }

    /** The largest message: -s, or with -a 2^23 (the MTU on UD). */
    final int maxSize(Mtu mtu) {
        return !all ? size : type == QpType.UD ? mtu.bytes() : MAX_SIZE;
    }

    /** The QP's path: the IB port, the agreed MTU and the GID index when one is given. */
    final ConnectOptions connectOptions(Mtu mtu) {
        ConnectOptions co = ConnectOptions.port(ibPort).mtu(mtu);
        if (gidIndex >= 0) {
            co.gidIndex(gidIndex);
        }
        return co;
    }

    /** To INIT, or on UD to RTS with perftest's Q_Key. */
    final void activate(QueuePair qp, ConnectOptions co) {
        if (type == QpType.UD) {
            qp.activateDatagram(co, Common.QKEY);
        } else {
            qp.toInit(co);
        }
    }

    /**
     * To the peer: on UD an address handle from its LID (and GID when a GID index is given), which
     * this returns; else the QP connected to it (RTR, RTS), and null.
     */
    final AddressHandle connect(Resources res, ProtectionDomain pd, QueuePair qp, ConnectOptions co, PerftestLink.Key peer) {
        if (type != QpType.UD) {
            qp.connect(peer.endpoint(), co);
            return null;
        }
        AddressVector.GlobalRoute route = gidIndex >= 0 ? new AddressVector.GlobalRoute(peer.gid(), gidIndex, 0xff, 0, 0) : null;
        return res.add(pd.createAddressHandle(new AddressVector(ibPort, peer.lid(), 0, 0, 0, route)));
    }

    /** perftest's set_mtu: the port's active MTU, or {@code -m} when it is not above that. */
    private Mtu localMtu(PrintStream out, PortAttributes port) {
        Mtu active = port.activeMtu();
        if (mtuBytes == 0) {
            return active;
        }
        Mtu asked = Common.mtu(mtuBytes);
        if (asked.bytes() > active.bytes()) {
            out.println("Requested mtu is higher than active mtu \nChanging to active mtu - " + active.value());
            return active;
        }
        return asked;
    }

    /** ctx_print_test_info's first lines, {@code title} the test's ("RDMA_Write Latency Test"). */
    final void printBannerHead(PrintStream out, Context ctx, String title) {
        out.println(LINE);
        out.println("                    " + title);
        out.printf(" Dual-port       : OFF\t\tDevice         : %s%n", ctx.device().name());
        out.printf(" Number of qps   : 1\t\tTransport type : %s%n", switch (ctx.device().transport()) {
            case IB -> "IB";
            case IWARP -> "IW";
            default -> "Unknown";
        });
        out.printf(" Connection type : %s\t\tUsing SRQ      : OFF%n", type);
        out.println(" PCIe relax order: OFF");
        out.println(" ibv_wr* API     : OFF");
    }

    /** ctx_print_test_info's MTU, link type and GID index lines. */
    final void printBannerLink(PrintStream out, PortAttributes port, Mtu mtu) {
        out.printf(" Mtu             : %d[B]%n", mtu.bytes());
        out.printf(" Link type       : %s%n", switch (port.linkLayer()) {
            case ETHERNET -> "Ethernet";
            case INFINIBAND -> "IB";
            default -> "Unknown";
        });
        if (gidIndex >= 0) {
            out.printf(" GID index       : %d%n", gidIndex);
        }
    }

    /** ctx_print_test_info's last lines. */
    static void printBannerTail(PrintStream out) {
        out.println(" rdma_cm QPs\t : OFF");
        out.println(" Data ex. method : Ethernet");
        out.println(LINE);
        out.flush();
    }

    /**
     * perftest's create_rdma_cm_connection up to the test queue pair ({@code -R}): the server listens
     * for it, then the first hand-shake; {@link PerftestCm.Test#arrive()} comes next.
     */
    final PerftestCm.Test startRdmaCm(Resources res, PerftestLink link) {
        PerftestCm.Test cm = res.add(PerftestCm.Test.start(server, tcpPort, timeout));
        link.handShake(PerftestLink.Key.NONE);
        return cm;
    }

    /** Polls {@code cq} empty: the flushed completions of a refused attempt's queue pair. */
    static void drain(CompletionQueue cq) {
        WorkCompletions wc = new WorkCompletions(16);
        while (cq.poll(wc) > 0) {
            // flushed completions of a queue pair that is gone
        }
    }

    /** ctx_print_test_info's last lines, with {@code -R} as perftest prints them (the server's two more lines too). */
    final void printBannerTail(PrintStream out, boolean withRdmaCm) {
        if (!withRdmaCm) {
            printBannerTail(out);
            return;
        }
        out.println(" rdma_cm QPs\t : ON");
        out.print(" Data ex. method : rdma_cm");
        if (server == null) {
            out.println();
            out.println(LINE);
            out.println(" Waiting for client rdma_cm QP to connect");
            out.print(" Please run the same command with the IB/RoCE interface IP");
        }
        out.println();
        out.println(LINE);
        out.flush();
    }

    /**
     * ctx_print_pingpong_data: " local address: LID 0000 QPN 0x0011 PSN 0x... [OUT 0x...] [RKey 0x...
     * VAddr 0x...]", and the GID line when a GID index is given.
     */
    final void printAddress(PrintStream out, String side, PerftestLink.Key k, boolean outReads, boolean remoteAddress) {
        StringBuilder b = new StringBuilder(" " + side + " address: LID " + alt(k.lid(), 4) + " QPN " + alt(k.qpn(), 6)
                + " PSN " + alt(k.psn(), 6));
        if (outReads) {
            b.append(" OUT ").append(alt(k.outReads(), 4));
        }
        if (remoteAddress) {
            b.append(" RKey ").append(alt(k.rkey(), 8)).append(" VAddr ").append(alt(k.vaddr(), 16));
        }
        out.println(b);
        if (gidIndex >= 0) {
            StringBuilder g = new StringBuilder(" GID: ");
            byte[] raw = k.gid().bytes();
            for (int i = 0; i < 16; i++) {
                g.append(i == 0 ? "" : ":").append(String.format("%02d", raw[i] & 0xff));
            }
            out.println(g);
        }
    }

    /** C's {@code %#0Nx}: "0x" and zero padding to N characters in all, or just zeros for 0. */
    static String alt(long v, int width) {
        if (v == 0) {
            return "0".repeat(width);
        }
        String hex = Long.toHexString(v);
        return "0x" + "0".repeat(Math.max(0, width - 2 - hex.length())) + hex;
    }

    /** Writes perftest's JSON file (when --out_json asked for one and there are results). */
    final void writeJson(String test, StringBuilder results) {
        if (jsonFile == null || results.isEmpty()) {
            return;
        }
        String text = "{\n\"test\": \"" + test + "\",\n\"results\": [\n" + results + "\n]\n}\n";
        try {
            Files.writeString(Path.of(jsonFile), text);
        } catch (IOException e) {
            throw new SampleException("couldn't write " + jsonFile + ": " + e.getMessage());
        }
    }
}
