package io.github.panamaverbs.samples.ibverbs;

import io.github.panamaverbs.samples.common.Options;
import io.github.panamaverbs.samples.common.SampleException;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.Device;
import io.github.panamaverbs.verbs.DeviceAttributes;
import io.github.panamaverbs.verbs.Gid;
import io.github.panamaverbs.verbs.GidEntry;
import io.github.panamaverbs.verbs.GidType;
import io.github.panamaverbs.verbs.LinkLayer;
import io.github.panamaverbs.verbs.Mtu;
import io.github.panamaverbs.verbs.PortAttributes;
import io.github.panamaverbs.verbs.PortState;
import io.github.panamaverbs.verbs.TransportType;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code devinfo}: rdma-core's {@code ibv_devinfo} (version 44, Debian 12's): the attributes of each device and
 * port, in the same format, field for field; {@code -v} adds every attribute and the GID table.
 */
public final class DevInfo {
    private DevInfo() {
    }

    /** Runs the tool with {@code args}, printing on {@code out}; returns the exit status. */
    public static int main(String[] args, PrintStream out) {
        Options o = new Options("Usage: samples/run devinfo             print the ca attributes\nAs ibv_devinfo.")
                .value('d', "ib-dev", "dev", "use IB device <dev> (default all devices)")
                .value('i', "ib-port", "port", "use port <port> of IB device (default all ports)")
                .flag('l', "list", "print only the IB devices names")
                .flag('v', "verbose", "print all the attributes of the IB device(s)");
        if (!o.parse(args, out)) {
            return 0;
        }
        if (!o.positional().isEmpty()) {
            throw new Options.UsageException("unexpected argument " + o.positional().getFirst());
        }
        int port = o.integer("ib-port", 0, 1, 255);
        boolean verbose = o.has("verbose");
        List<Device> devices = Device.list();
        if (o.has("list")) {
            out.printf("%d HCA%s found:%n", devices.size(), devices.size() != 1 ? "s" : "");
            devices.forEach(d -> out.println("\t" + d.name()));
            out.println();
            return 0;
        }
        String name = o.string("ib-dev", null);
        if (name != null) {
            Device d = devices.stream().filter(x -> x.name().equals(name)).findFirst()
                    .orElseThrow(() -> new SampleException("IB device '" + name + "' wasn't found"));
            return print(d, port, verbose, out);
        }
        if (devices.isEmpty()) {
            throw new SampleException("No IB devices found");
        }
        int rc = 0;
        for (Device d : devices) {
            rc |= print(d, port, verbose, out);
        }
        return rc;
    }

    private static int print(Device dev, int onlyPort, boolean verbose, PrintStream out) {
        try (Context ctx = dev.open()) {
            DeviceAttributes a = ctx.queryDevice();
            if (onlyPort > a.physPortCnt()) {
                throw new SampleException("Invalid port requested for device");
            }
            out.printf("hca_id:\t%s%n", dev.name());
            out.printf("\ttransport:\t\t\t%s (%d)%n", transport(dev.transport()), transportValue(dev.transport()));
            if (!a.firmwareVersion().isEmpty()) {
                out.printf("\tfw_ver:\t\t\t\t%s%n", a.firmwareVersion());
            }
            out.printf("\tnode_guid:\t\t\t%s%n", guid(a.nodeGuid()));
            out.printf("\tsys_image_guid:\t\t\t%s%n", guid(a.sysImageGuid()));
            out.printf("\tvendor_id:\t\t\t0x%04x%n", a.vendorId());
            out.printf("\tvendor_part_id:\t\t\t%d%n", a.vendorPartId());
            out.printf("\thw_ver:\t\t\t\t0x%X%n", a.hwVer());
            String board = sysfs(dev.ibdevPath(), "board_id");
            if (board != null) {
                out.printf("\tboard_id:\t\t\t%s%n", board);
            }
            out.printf("\tphys_port_cnt:\t\t\t%d%n", a.physPortCnt());
            if (verbose) {
                printVerbose(ctx, a, out);
            }
            for (int p = 1; p <= a.physPortCnt(); p++) {
                if (onlyPort != 0 && p != onlyPort) {
                    continue;
                }
                printPort(ctx, dev, p, ctx.queryPort(p), verbose, out);
            }
        }
        return 0;
    }

    private static void printVerbose(Context ctx, DeviceAttributes a, PrintStream out) {
        out.printf("\tmax_mr_size:\t\t\t0x%x%n", a.maxMrSize());
        out.printf("\tpage_size_cap:\t\t\t0x%x%n", a.pageSizeCap());
        out.printf("\tmax_qp:\t\t\t\t%d%n", a.maxQp());
        out.printf("\tmax_qp_wr:\t\t\t%d%n", a.maxQpWr());
        out.printf("\tdevice_cap_flags:\t\t0x%08x%n", a.deviceCapFlags());
        flags(a.deviceCapFlags() & 0xffffffffL, DEVICE_CAP_FLAGS, out);
        out.printf("\tmax_sge:\t\t\t%d%n", a.maxSge());
        out.printf("\tmax_sge_rd:\t\t\t%d%n", a.maxSgeRd());
        out.printf("\tmax_cq:\t\t\t\t%d%n", a.maxCq());
        out.printf("\tmax_cqe:\t\t\t%d%n", a.maxCqe());
        out.printf("\tmax_mr:\t\t\t\t%d%n", a.maxMr());
        out.printf("\tmax_pd:\t\t\t\t%d%n", a.maxPd());
        out.printf("\tmax_qp_rd_atom:\t\t\t%d%n", a.maxQpRdAtom());
        out.printf("\tmax_ee_rd_atom:\t\t\t%d%n", a.maxEeRdAtom());
        out.printf("\tmax_res_rd_atom:\t\t%d%n", a.maxResRdAtom());
        out.printf("\tmax_qp_init_rd_atom:\t\t%d%n", a.maxQpInitRdAtom());
        out.printf("\tmax_ee_init_rd_atom:\t\t%d%n", a.maxEeInitRdAtom());
        out.printf("\tatomic_cap:\t\t\t%s (%d)%n", switch (a.atomicCap()) {
            case 0 -> "ATOMIC_NONE";
            case 1 -> "ATOMIC_HCA";
            case 2 -> "ATOMIC_GLOB";
            default -> "invalid atomic capability";
        }, a.atomicCap());
        out.printf("\tmax_ee:\t\t\t\t%d%n", a.maxEe());
        out.printf("\tmax_rdd:\t\t\t%d%n", a.maxRdd());
        out.printf("\tmax_mw:\t\t\t\t%d%n", a.maxMw());
        out.printf("\tmax_raw_ipv6_qp:\t\t%d%n", a.maxRawIpv6Qp());
        out.printf("\tmax_raw_ethy_qp:\t\t%d%n", a.maxRawEthyQp());
        out.printf("\tmax_mcast_grp:\t\t\t%d%n", a.maxMcastGrp());
        out.printf("\tmax_mcast_qp_attach:\t\t%d%n", a.maxMcastQpAttach());
        out.printf("\tmax_total_mcast_qp_attach:\t%d%n", a.maxTotalMcastQpAttach());
        out.printf("\tmax_ah:\t\t\t\t%d%n", a.maxAh());
        out.printf("\tmax_fmr:\t\t\t%d%n", a.maxFmr());
        if (a.maxFmr() != 0) {
            out.printf("\tmax_map_per_fmr:\t\t%d%n", a.maxMapPerFmr());
        }
        out.printf("\tmax_srq:\t\t\t%d%n", a.maxSrq());
        if (a.maxSrq() != 0) {
            out.printf("\tmax_srq_wr:\t\t\t%d%n", a.maxSrqWr());
            out.printf("\tmax_srq_sge:\t\t\t%d%n", a.maxSrqSge());
        }
        out.printf("\tmax_pkeys:\t\t\t%d%n", a.maxPkeys());
        out.printf("\tlocal_ca_ack_delay:\t\t%d%n", a.localCaAckDelay());
        out.printf("\tgeneral_odp_caps:%n");
        flags(a.odpGeneralCaps(), ODP_GENERAL, out);
        out.printf("\trc_odp_caps:%n");
        odpTransport(a.odpRcCaps(), out);
        out.printf("\tuc_odp_caps:%n");
        odpTransport(a.odpUcCaps(), out);
        out.printf("\tud_odp_caps:%n");
        odpTransport(a.odpUdCaps(), out);
        out.printf("\txrc_odp_caps:%n");
        odpTransport(a.xrcOdpCaps(), out);
        if (a.completionTimestampMask() != 0) {
            out.printf("\tcompletion timestamp_mask:\t\t\t0x%016x%n", a.completionTimestampMask());
        } else {
            out.printf("\tcompletion_timestamp_mask not supported%n");
        }
        if (a.hcaCoreClock() != 0) {
            out.printf("\thca_core_clock:\t\t\t%dkHZ%n", a.hcaCoreClock());
        } else {
            out.printf("\tcore clock not supported%n");
        }
        if (a.rawPacketCaps() != 0) {
            out.printf("\traw packet caps:%n");
            String[] names = {"C-VLAN stripping offload", "Scatter FCS offload", "IP csum offload", "Delay drop"};
            for (int i = 0; i < names.length; i++) {
                if ((a.rawPacketCaps() & (1 << i)) != 0) {
                    out.printf("\t\t\t\t\t%s%n", names[i]);
                }
            }
        }
        out.printf("\tdevice_cap_flags_ex:\t\t0x%X%n", a.deviceCapFlagsEx());
        flags(a.deviceCapFlagsEx() & 0xffffffff00000000L, DEVICE_CAP_FLAGS_EX, out);
        out.printf("\ttso_caps:%n");
        out.printf("\t\tmax_tso:\t\t\t%d%n", a.tsoMaxTso());
        if (a.tsoMaxTso() != 0) {
            out.printf("\t\tsupported_qp:%n");
            qpTypes(a.tsoSupportedQpts(), out);
        }
        out.printf("\trss_caps:%n");
        out.printf("\t\tmax_rwq_indirection_tables:\t\t\t%d%n", a.rssMaxRwqIndirectionTables());
        out.printf("\t\tmax_rwq_indirection_table_size:\t\t\t%d%n", a.rssMaxRwqIndirectionTableSize());
        out.printf("\t\trx_hash_function:\t\t\t\t0x%x%n", a.rssRxHashFunction());
        out.printf("\t\trx_hash_fields_mask:\t\t\t\t0x%X%n", a.rssRxHashFieldsMask());
        if (a.rssSupportedQpts() != 0) {
            out.printf("\t\tsupported_qp:%n");
            qpTypes(a.rssSupportedQpts(), out);
        }
        out.printf("\tmax_wq_type_rq:\t\t\t%d%n", a.maxWqTypeRq());
        out.printf("\tpacket_pacing_caps:%n");
        out.printf("\t\tqp_rate_limit_min:\t%dkbps%n", a.packetPacingRateLimitMin());
        out.printf("\t\tqp_rate_limit_max:\t%dkbps%n", a.packetPacingRateLimitMax());
        if (a.packetPacingRateLimitMax() != 0) {
            out.printf("\t\tsupported_qp:%n");
            qpTypes(a.packetPacingSupportedQpts(), out);
        }
        if (a.tmMaxNumTags() != 0) {
            out.printf("\tmax_rndv_hdr_size:\t\t%d%n", a.tmMaxRndvHdrSize());
            out.printf("\tmax_num_tags:\t\t\t%d%n", a.tmMaxNumTags());
            out.printf("\tmax_ops:\t\t\t%d%n", a.tmMaxOps());
            out.printf("\tmax_sge:\t\t\t%d%n", a.tmMaxSge());
            out.printf("\tflags:%n");
            if ((a.tmFlags() & 1) != 0) {
                out.printf("\t\t\t\t\tIBV_TM_CAP_RC%n");
            }
        } else {
            out.printf("\ttag matching not supported%n");
        }
        if (a.cqModerationMaxCount() != 0 && a.cqModerationMaxPeriod() != 0) {
            out.printf("%n\tcq moderation caps:%n");
            out.printf("\t\tmax_cq_count:\t%d%n", a.cqModerationMaxCount());
            out.printf("\t\tmax_cq_period:\t%d us%n%n", a.cqModerationMaxPeriod());
        }
        if (a.maxDmSize() != 0) {
            out.printf("\tmaximum available device memory:\t%dBytes%n%n", a.maxDmSize());
        }
        out.printf("\tnum_comp_vectors:\t\t%d%n", ctx.numCompVectors());
    }

    private static void printPort(Context ctx, Device dev, int p, PortAttributes pa, boolean verbose, PrintStream out) {
        out.printf("\t\tport:\t%d%n", p);
        out.printf("\t\t\tstate:\t\t\t%s (%d)%n", portState(pa.state()), pa.state().value());
        out.printf("\t\t\tmax_mtu:\t\t%s (%d)%n", mtu(pa.maxMtu()), pa.maxMtu().value());
        out.printf("\t\t\tactive_mtu:\t\t%s (%d)%n", mtu(pa.activeMtu()), pa.activeMtu().value());
        out.printf("\t\t\tsm_lid:\t\t\t%d%n", pa.smLid());
        out.printf("\t\t\tport_lid:\t\t%d%n", pa.lid());
        out.printf("\t\t\tport_lmc:\t\t0x%02x%n", pa.lmc());
        out.printf("\t\t\tlink_layer:\t\t%s%n", switch (pa.linkLayer()) {
            case UNSPECIFIED -> "Unspecified";
            case INFINIBAND -> "InfiniBand";
            case ETHERNET -> "Ethernet";
        });
        if (verbose) {
            out.printf("\t\t\tmax_msg_sz:\t\t0x%x%n", pa.maxMsgSz());
            out.printf("\t\t\tport_cap_flags:\t\t0x%08x%n", pa.portCapFlags());
            out.printf("\t\t\tport_cap_flags2:\t0x%04x%n", pa.portCapFlags2());
            out.printf("\t\t\tmax_vl_num:\t\t%s (%d)%n", switch (pa.maxVlNum()) {
                case 1 -> "1";
                case 2 -> "2";
                case 3 -> "4";
                case 4 -> "8";
                case 5 -> "15";
                default -> "invalid value";
            }, pa.maxVlNum());
            out.printf("\t\t\tbad_pkey_cntr:\t\t0x%x%n", pa.badPkeyCntr());
            out.printf("\t\t\tqkey_viol_cntr:\t\t0x%x%n", pa.qkeyViolCntr());
            out.printf("\t\t\tsm_sl:\t\t\t%d%n", pa.smSl());
            out.printf("\t\t\tpkey_tbl_len:\t\t%d%n", pa.pkeyTblLen());
            out.printf("\t\t\tgid_tbl_len:\t\t%d%n", pa.gidTblLen());
            out.printf("\t\t\tsubnet_timeout:\t\t%d%n", pa.subnetTimeout());
            out.printf("\t\t\tinit_type_reply:\t%d%n", pa.initTypeReply());
            out.printf("\t\t\tactive_width:\t\t%sX (%d)%n", switch (pa.activeWidth()) {
                case 1 -> "1";
                case 2 -> "4";
                case 4 -> "8";
                case 8 -> "12";
                case 16 -> "2";
                default -> "invalid width";
            }, pa.activeWidth());
            out.printf("\t\t\tactive_speed:\t\t%s (%d)%n", switch (pa.activeSpeed()) {
                case 1 -> "2.5 Gbps";
                case 2 -> "5.0 Gbps";
                case 4, 8 -> "10.0 Gbps";
                case 16 -> "14.0 Gbps";
                case 32 -> "25.0 Gbps";
                case 64 -> "50.0 Gbps";
                case 128 -> "100.0 Gbps";
                default -> "invalid speed";
            }, pa.activeSpeed());
            if (dev.transport() == TransportType.IB) {
                out.printf("\t\t\tphys_state:\t\t%s (%d)%n", switch (pa.physState()) {
                    case 1 -> "SLEEP";
                    case 2 -> "POLLING";
                    case 3 -> "DISABLED";
                    case 4 -> "PORT_CONFIGURATION TRAINNING";
                    case 5 -> "LINK_UP";
                    case 6 -> "LINK_ERROR_RECOVERY";
                    case 7 -> "PHY TEST";
                    default -> "invalid physical state";
                }, pa.physState());
            }
            printGids(ctx, p, pa, out);
        }
        out.println();
    }

    /** Every entry whose interface ID is not zero, as ibv_devinfo prints them (RoCE v2 with inet_ntop). */
    private static void printGids(Context ctx, int port, PortAttributes pa, PrintStream out) {
        Map<Integer, GidType> types = new HashMap<>();
        for (GidEntry e : ctx.gidTable()) {
            if (e.port() == port) {
                types.put(e.index(), e.type());
            }
        }
        for (int i = 0; i < pa.gidTblLen(); i++) {
            Gid gid = ctx.queryGid(port, i);
            if (gid.interfaceId() == 0) {
                continue;
            }
            GidType type = types.get(i);
            boolean v2 = type == GidType.ROCE_V2;
            String suffix = pa.linkLayer() != LinkLayer.ETHERNET ? ""
                    : type == null ? ", Invalid gid type" : v2 ? ", RoCE v2" : ", RoCE v1";
            if (type == null) {
                continue;   // ibv_query_gid_type failed: ibv_devinfo prints nothing for it either
            }
            out.printf("\t\t\tGID[%3d]:\t\t%s%s%n", i, v2 ? gid.toString() : gid.toFullString(), suffix);
        }
    }

    private static final String[] DEVICE_CAP_FLAGS = {
        "RESIZE_MAX_WR", "BAD_PKEY_CNTR", "BAD_QKEY_CNTR", "RAW_MULTI", "AUTO_PATH_MIG", "CHANGE_PHY_PORT",
        "UD_AV_PORT_ENFORCE", "CURR_QP_STATE_MOD", "SHUTDOWN_PORT", "INIT_TYPE", "PORT_ACTIVE_EVENT",
        "SYS_IMAGE_GUID", "RC_RNR_NAK_GEN", "SRQ_RESIZE", "N_NOTIFY_CQ", null, null, "MEM_WINDOW", "UD_IP_CSUM",
        null, "XRC", "MEM_MGT_EXTENSIONS", null, "MEM_WINDOW_TYPE_2A", "MEM_WINDOW_TYPE_2B", "RC_IP_CSUM",
        "RAW_IP_CSUM", null, null, "MANAGED_FLOW_STEERING"};
    private static final String[] ODP_GENERAL = {"ODP_SUPPORT", "ODP_SUPPORT_IMPLICIT"};
    private static final String[] ODP_TRANSPORT = {"SUPPORT_SEND", "SUPPORT_RECV", "SUPPORT_WRITE", "SUPPORT_READ",
        "SUPPORT_ATOMIC", "SUPPORT_SRQ"};
    private static final String[] DEVICE_CAP_FLAGS_EX = new String[64];

    static {
        DEVICE_CAP_FLAGS_EX[32 + 2] = "RAW_SCATTER_FCS";
        DEVICE_CAP_FLAGS_EX[32 + 4] = "PCI_WRITE_END_PADDING";
    }

    /** One line per known bit set (in bit order, as the C code's if-chain), then the unknown ones. */
    private static void flags(long value, String[] names, PrintStream out) {
        long unknown = 0;
        for (int bit = 0; bit < 64; bit++) {
            long m = 1L << bit;
            if ((value & m) == 0) {
                continue;
            }
            if (bit < names.length && names[bit] != null) {
                out.printf("\t\t\t\t\t%s%n", names[bit]);
            } else {
                unknown |= m;
            }
        }
        if (unknown != 0) {
            out.printf("\t\t\t\t\tUnknown flags: 0x%X%n", unknown);
        }
    }

    private static void odpTransport(int caps, PrintStream out) {
        if (caps == 0) {
            out.printf("\t\t\t\t\tNO SUPPORT%n");
        } else {
            flags(caps & 0xffffffffL, ODP_TRANSPORT, out);
        }
    }

    /** A bit per ibv_qp_type: RAW_PACKET (8), UD (4). */
    private static void qpTypes(int qpts, PrintStream out) {
        if ((qpts & (1 << 8)) != 0) {
            out.printf("\t\t\t\t\tSUPPORT_RAW_PACKET%n");
        }
        if ((qpts & (1 << 4)) != 0) {
            out.printf("\t\t\t\t\tSUPPORT_UD%n");
        }
        int unknown = qpts & ~(1 << 8 | 1 << 4);
        if (unknown != 0) {
            out.printf("\t\t\t\t\tUnknown flags: 0x%X%n", unknown);
        }
    }

    private static String guid(long guid) {
        return String.format("%04x:%04x:%04x:%04x", guid >>> 48 & 0xffff, guid >>> 32 & 0xffff, guid >>> 16 & 0xffff,
                guid & 0xffff);
    }

    private static String transport(TransportType t) {
        return switch (t) {
            case IB -> "InfiniBand";
            case IWARP -> "iWARP";
            case USNIC -> "usNIC";
            case USNIC_UDP -> "usNIC UDP";
            case UNSPECIFIED -> "unspecified";
            default -> "invalid transport";
        };
    }

    /** {@code enum ibv_transport_type}'s C value. */
    private static int transportValue(TransportType t) {
        return switch (t) {
            case IB -> 0;
            case IWARP -> 1;
            case USNIC -> 2;
            case USNIC_UDP -> 3;
            case UNSPECIFIED -> 4;
            default -> -1;
        };
    }

    private static String portState(PortState s) {
        return switch (s) {
            case DOWN -> "PORT_DOWN";
            case INIT -> "PORT_INIT";
            case ARMED -> "PORT_ARMED";
            case ACTIVE -> "PORT_ACTIVE";
            default -> "invalid state";
        };
    }

    private static String mtu(Mtu m) {
        return Integer.toString(m.bytes());
    }

    /** ibv_read_sysfs_file: the file's text without the trailing newline, or null. */
    private static String sysfs(String dir, String file) {
        try {
            String s = Files.readString(Path.of(dir, file));
            return s.endsWith("\n") ? s.substring(0, s.length() - 1) : s;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
