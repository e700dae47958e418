package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.ibv_device_attr;
import io.github.panamaverbs.bindings.ibv_cq_moderation_caps;
import io.github.panamaverbs.bindings.ibv_device_attr_ex;
import io.github.panamaverbs.bindings.ibv_odp_caps;
import io.github.panamaverbs.bindings.ibv_packet_pacing_caps;
import io.github.panamaverbs.bindings.ibv_rss_caps;
import io.github.panamaverbs.bindings.ibv_tm_caps;
import io.github.panamaverbs.bindings.ibv_tso_caps;
import io.github.panamaverbs.internal.Snapshot;
import java.lang.foreign.MemorySegment;

/**
 * What a device can do: {@code struct ibv_device_attr_ex} as {@code ibv_query_device_ex} fills it
 * (or {@code ibv_query_device} where the provider has no extended query). A snapshot taken by
 * {@link Context#queryDevice()}; accessors are named after the C fields.
 */
public final class DeviceAttributes {
    private final MemorySegment attr;
    private final MemorySegment orig;

    DeviceAttributes(MemorySegment attr) {
        this.attr = Snapshot.copy(attr, ibv_device_attr_ex.sizeof());
        this.orig = ibv_device_attr_ex.orig_attr(this.attr);
    }

    /** {@return {@code fw_ver}: the firmware version text} */
    public String firmwareVersion() {
        return ibv_device_attr.fw_ver(orig).getString(0);
    }

    /** {@return {@code node_guid}: the node GUID, in host byte order} */
    public long nodeGuid() {
        return Long.reverseBytes(ibv_device_attr.node_guid(orig));
    }

    /** {@return {@code sys_image_guid}: the system image GUID, in host byte order} */
    public long sysImageGuid() {
        return Long.reverseBytes(ibv_device_attr.sys_image_guid(orig));
    }

    /** {@return {@code max_mr_size}: the largest memory region that can be registered, in bytes} */
    public long maxMrSize() {
        return ibv_device_attr.max_mr_size(orig);
    }

    /** {@return {@code page_size_cap}: the memory page sizes the device supports, a bit per size} */
    public long pageSizeCap() {
        return ibv_device_attr.page_size_cap(orig);
    }

    /** {@return {@code vendor_id}: the IEEE vendor ID} */
    public int vendorId() {
        return ibv_device_attr.vendor_id(orig);
    }

    /** {@return {@code vendor_part_id}: the vendor's part ID} */
    public int vendorPartId() {
        return ibv_device_attr.vendor_part_id(orig);
    }

    /** {@return {@code hw_ver}: the hardware version} */
    public int hwVer() {
        return ibv_device_attr.hw_ver(orig);
    }

    /** {@return {@code max_qp}: the most queue pairs} */
    public int maxQp() {
        return ibv_device_attr.max_qp(orig);
    }

    /** {@return {@code max_qp_wr}: the most outstanding work requests on one work queue} */
    public int maxQpWr() {
        return ibv_device_attr.max_qp_wr(orig);
    }

    /** {@return {@code device_cap_flags}: the {@code IBV_DEVICE_*} capability bits} */
    public int deviceCapFlags() {
        return ibv_device_attr.device_cap_flags(orig);
    }

    /** {@return {@code max_sge}: the most scatter/gather entries per work request (other than RDMA reads)} */
    public int maxSge() {
        return ibv_device_attr.max_sge(orig);
    }

    /** {@return {@code max_sge_rd}: the most scatter/gather entries per RDMA read} */
    public int maxSgeRd() {
        return ibv_device_attr.max_sge_rd(orig);
    }

    /** {@return {@code max_cq}: the most completion queues} */
    public int maxCq() {
        return ibv_device_attr.max_cq(orig);
    }

    /** {@return {@code max_cqe}: the most entries of one completion queue} */
    public int maxCqe() {
        return ibv_device_attr.max_cqe(orig);
    }

    /** {@return {@code max_mr}: the most memory regions} */
    public int maxMr() {
        return ibv_device_attr.max_mr(orig);
    }

    /** {@return {@code max_pd}: the most protection domains} */
    public int maxPd() {
        return ibv_device_attr.max_pd(orig);
    }

    /** {@return {@code max_qp_rd_atom}: the most RDMA reads and atomics outstanding on a queue pair as their target} */
    public int maxQpRdAtom() {
        return ibv_device_attr.max_qp_rd_atom(orig);
    }

    /** {@return {@code max_ee_rd_atom}: the same per EE context (reliable datagram, which Linux does not support)} */
    public int maxEeRdAtom() {
        return ibv_device_attr.max_ee_rd_atom(orig);
    }

    /** {@return {@code max_res_rd_atom}: the device's resources for incoming RDMA reads and atomics, all queue pairs together} */
    public int maxResRdAtom() {
        return ibv_device_attr.max_res_rd_atom(orig);
    }

    /** {@return {@code max_qp_init_rd_atom}: the most RDMA reads and atomics a queue pair may have outstanding as their initiator} */
    public int maxQpInitRdAtom() {
        return ibv_device_attr.max_qp_init_rd_atom(orig);
    }

    /** {@return {@code max_ee_init_rd_atom}: the same per EE context (reliable datagram, which Linux does not support)} */
    public int maxEeInitRdAtom() {
        return ibv_device_attr.max_ee_init_rd_atom(orig);
    }

    /** {@return {@code atomic_cap}: the atomics support, an {@code enum ibv_atomic_cap} value (0: none, 1: atomic within this device, 2: atomic with other devices too)} */
    public int atomicCap() {
        return ibv_device_attr.atomic_cap(orig);
    }

    /** {@return {@code max_ee}: the most EE contexts (reliable datagram, which Linux does not support)} */
    public int maxEe() {
        return ibv_device_attr.max_ee(orig);
    }

    /** {@return {@code max_rdd}: the most reliable datagram domains (which Linux does not support)} */
    public int maxRdd() {
        return ibv_device_attr.max_rdd(orig);
    }

    /** {@return {@code max_mw}: the most memory windows} */
    public int maxMw() {
        return ibv_device_attr.max_mw(orig);
    }

    /** {@return {@code max_raw_ipv6_qp}: the most raw IPv6 datagram queue pairs} */
    public int maxRawIpv6Qp() {
        return ibv_device_attr.max_raw_ipv6_qp(orig);
    }

    /** {@return {@code max_raw_ethy_qp}: the most raw Ethertype datagram queue pairs} */
    public int maxRawEthyQp() {
        return ibv_device_attr.max_raw_ethy_qp(orig);
    }

    /** {@return {@code max_mcast_grp}: the most multicast groups} */
    public int maxMcastGrp() {
        return ibv_device_attr.max_mcast_grp(orig);
    }

    /** {@return {@code max_mcast_qp_attach}: the most queue pairs attached to one multicast group} */
    public int maxMcastQpAttach() {
        return ibv_device_attr.max_mcast_qp_attach(orig);
    }

    /** {@return {@code max_total_mcast_qp_attach}: the most queue pairs attached to multicast groups, all groups together} */
    public int maxTotalMcastQpAttach() {
        return ibv_device_attr.max_total_mcast_qp_attach(orig);
    }

    /** {@return {@code max_ah}: the most address handles} */
    public int maxAh() {
        return ibv_device_attr.max_ah(orig);
    }

    /** {@return {@code max_fmr}: the most fast memory regions (an obsolete feature)} */
    public int maxFmr() {
        return ibv_device_attr.max_fmr(orig);
    }

    /** {@return {@code max_map_per_fmr}: the most mappings of a fast memory region before it must be unmapped (obsolete)} */
    public int maxMapPerFmr() {
        return ibv_device_attr.max_map_per_fmr(orig);
    }

    /** {@return {@code max_srq}: the most shared receive queues} */
    public int maxSrq() {
        return ibv_device_attr.max_srq(orig);
    }

    /** {@return {@code max_srq_wr}: the most work requests of one shared receive queue} */
    public int maxSrqWr() {
        return ibv_device_attr.max_srq_wr(orig);
    }

    /** {@return {@code max_srq_sge}: the most scatter/gather entries per receive of a shared receive queue} */
    public int maxSrqSge() {
        return ibv_device_attr.max_srq_sge(orig);
    }

    /** {@return {@code max_pkeys}: the number of partition keys of each port} */
    public int maxPkeys() {
        return Short.toUnsignedInt(ibv_device_attr.max_pkeys(orig));
    }

    /** {@return {@code local_ca_ack_delay}: the local ACK delay, an exponent: 4.096 µs × 2<sup>value</sup>} */
    public int localCaAckDelay() {
        return Byte.toUnsignedInt(ibv_device_attr.local_ca_ack_delay(orig));
    }

    /** {@return {@code phys_port_cnt}: the number of physical ports, numbered from 1} */
    public int physPortCnt() {
        return Byte.toUnsignedInt(ibv_device_attr.phys_port_cnt(orig));
    }

    /** {@return {@code completion_timestamp_mask}: the valid bits of a completion's timestamp (0 where the provider has no {@code ibv_query_device_ex})} */
    public long completionTimestampMask() {
        return ibv_device_attr_ex.completion_timestamp_mask(attr);
    }

    /** {@return {@code hca_core_clock}: the frequency of the clock of completion timestamps, in kHz (0 where the provider has no {@code ibv_query_device_ex})} */
    public long hcaCoreClock() {
        return ibv_device_attr_ex.hca_core_clock(attr);
    }

    /** {@return {@code device_cap_flags_ex}: the extended {@code IBV_DEVICE_*} capability bits (0 where the provider has no {@code ibv_query_device_ex})} */
    public long deviceCapFlagsEx() {
        return ibv_device_attr_ex.device_cap_flags_ex(attr);
    }

    /** {@return {@code max_dm_size}: the most device memory that can be allocated, in bytes (0 where the provider has no {@code ibv_query_device_ex})} */
    public long maxDmSize() {
        return ibv_device_attr_ex.max_dm_size(attr);
    }

    /** {@return {@code phys_port_cnt_ex}: the number of physical ports, for devices with more than 255 (0 where the provider has no {@code ibv_query_device_ex})} */
    public int physPortCntEx() {
        return ibv_device_attr_ex.phys_port_cnt_ex(attr);
    }

    /** {@return {@code odp_caps.general_caps}: on-demand paging support, {@code IBV_ODP_SUPPORT*} bits (0 where the provider has no {@code ibv_query_device_ex})} */
    public long odpGeneralCaps() {
        return ibv_device_attr_ex.odp_caps(attr).get(java.lang.foreign.ValueLayout.JAVA_LONG, 0);
    }

    // The rest of ibv_device_attr_ex, as ibv_devinfo -v prints it (0 where the provider has no
    // ibv_query_device_ex). Added for the samples' devinfo.

    /** {@return {@code odp_caps.per_transport_caps.rc_odp_caps}: the {@code IBV_ODP_SUPPORT_*} bits for RC (0 where the provider has no {@code ibv_query_device_ex})} */
    public int odpRcCaps() {
        return ibv_odp_caps.per_transport_caps.rc_odp_caps(odpPerTransport());
    }

    /** {@return {@code odp_caps.per_transport_caps.uc_odp_caps}: the {@code IBV_ODP_SUPPORT_*} bits for UC (0 where the provider has no {@code ibv_query_device_ex})} */
    public int odpUcCaps() {
        return ibv_odp_caps.per_transport_caps.uc_odp_caps(odpPerTransport());
    }

    /** {@return {@code odp_caps.per_transport_caps.ud_odp_caps}: the {@code IBV_ODP_SUPPORT_*} bits for UD (0 where the provider has no {@code ibv_query_device_ex})} */
    public int odpUdCaps() {
        return ibv_odp_caps.per_transport_caps.ud_odp_caps(odpPerTransport());
    }

    private MemorySegment odpPerTransport() {
        return ibv_odp_caps.per_transport_caps(ibv_device_attr_ex.odp_caps(attr));
    }

    /** {@return {@code xrc_odp_caps}: the {@code IBV_ODP_SUPPORT_*} bits for XRC (0 where the provider has no {@code ibv_query_device_ex})} */
    public int xrcOdpCaps() {
        return ibv_device_attr_ex.xrc_odp_caps(attr);
    }

    /** {@return {@code raw_packet_caps}: the {@code IBV_RAW_PACKET_CAP_*} bits (0 where the provider has no {@code ibv_query_device_ex})} */
    public int rawPacketCaps() {
        return ibv_device_attr_ex.raw_packet_caps(attr);
    }

    /** {@return {@code tso_caps.max_tso}: the largest TCP segmentation offload payload, in bytes (0 where the provider has no {@code ibv_query_device_ex})} */
    public int tsoMaxTso() {
        return ibv_tso_caps.max_tso(ibv_device_attr_ex.tso_caps(attr));
    }

    /** {@return {@code tso_caps.supported_qpts}: the queue pair types that support TSO, a bit per {@code ibv_qp_type} (0 where the provider has no {@code ibv_query_device_ex})} */
    public int tsoSupportedQpts() {
        return ibv_tso_caps.supported_qpts(ibv_device_attr_ex.tso_caps(attr));
    }

    /** {@return {@code rss_caps.max_rwq_indirection_tables}: the most receive work queue indirection tables (0 where the provider has no {@code ibv_query_device_ex})} */
    public int rssMaxRwqIndirectionTables() {
        return ibv_rss_caps.max_rwq_indirection_tables(ibv_device_attr_ex.rss_caps(attr));
    }

    /** {@return {@code rss_caps.max_rwq_indirection_table_size}: the most entries of one indirection table (0 where the provider has no {@code ibv_query_device_ex})} */
    public int rssMaxRwqIndirectionTableSize() {
        return ibv_rss_caps.max_rwq_indirection_table_size(ibv_device_attr_ex.rss_caps(attr));
    }

    /** {@return {@code rss_caps.rx_hash_function}: the supported receive hash functions, {@code IBV_RX_HASH_FUNC_*} bits (0 where the provider has no {@code ibv_query_device_ex})} */
    public int rssRxHashFunction() {
        return Byte.toUnsignedInt(ibv_rss_caps.rx_hash_function(ibv_device_attr_ex.rss_caps(attr)));
    }

    /** {@return {@code rss_caps.rx_hash_fields_mask}: the packet fields the receive hash may use, {@code IBV_RX_HASH_*} bits (0 where the provider has no {@code ibv_query_device_ex})} */
    public long rssRxHashFieldsMask() {
        return ibv_rss_caps.rx_hash_fields_mask(ibv_device_attr_ex.rss_caps(attr));
    }

    /** {@return {@code rss_caps.supported_qpts}: the queue pair types that support receive-side scaling, a bit per {@code ibv_qp_type} (0 where the provider has no {@code ibv_query_device_ex})} */
    public int rssSupportedQpts() {
        return ibv_rss_caps.supported_qpts(ibv_device_attr_ex.rss_caps(attr));
    }

    /** {@return {@code max_wq_type_rq}: the most receive work queues (0 where the provider has no {@code ibv_query_device_ex})} */
    public int maxWqTypeRq() {
        return ibv_device_attr_ex.max_wq_type_rq(attr);
    }

    /** {@return {@code packet_pacing_caps.qp_rate_limit_min}: the lowest rate limit of a queue pair, in kbps (0 where the provider has no {@code ibv_query_device_ex})} */
    public int packetPacingRateLimitMin() {
        return ibv_packet_pacing_caps.qp_rate_limit_min(ibv_device_attr_ex.packet_pacing_caps(attr));
    }

    /** {@return {@code packet_pacing_caps.qp_rate_limit_max}: the highest rate limit of a queue pair, in kbps (0 where the provider has no {@code ibv_query_device_ex})} */
    public int packetPacingRateLimitMax() {
        return ibv_packet_pacing_caps.qp_rate_limit_max(ibv_device_attr_ex.packet_pacing_caps(attr));
    }

    /** {@return {@code packet_pacing_caps.supported_qpts}: the queue pair types that support packet pacing, a bit per {@code ibv_qp_type} (0 where the provider has no {@code ibv_query_device_ex})} */
    public int packetPacingSupportedQpts() {
        return ibv_packet_pacing_caps.supported_qpts(ibv_device_attr_ex.packet_pacing_caps(attr));
    }

    /** {@return {@code tm_caps.max_rndv_hdr_size}: the largest rendezvous header of tag matching, in bytes (0 where the provider has no {@code ibv_query_device_ex})} */
    public int tmMaxRndvHdrSize() {
        return ibv_tm_caps.max_rndv_hdr_size(ibv_device_attr_ex.tm_caps(attr));
    }

    /** {@return {@code tm_caps.max_num_tags}: the most tags of tag matching; 0 where it is not supported} */
    public int tmMaxNumTags() {
        return ibv_tm_caps.max_num_tags(ibv_device_attr_ex.tm_caps(attr));
    }

    /** {@return {@code tm_caps.flags}: the {@code IBV_TM_CAP_*} bits of tag matching (0 where the provider has no {@code ibv_query_device_ex})} */
    public int tmFlags() {
        return ibv_tm_caps.flags(ibv_device_attr_ex.tm_caps(attr));
    }

    /** {@return {@code tm_caps.max_ops}: the most outstanding tag list operations (0 where the provider has no {@code ibv_query_device_ex})} */
    public int tmMaxOps() {
        return ibv_tm_caps.max_ops(ibv_device_attr_ex.tm_caps(attr));
    }

    /** {@return {@code tm_caps.max_sge}: the most scatter/gather entries of a tagged receive (0 where the provider has no {@code ibv_query_device_ex})} */
    public int tmMaxSge() {
        return ibv_tm_caps.max_sge(ibv_device_attr_ex.tm_caps(attr));
    }

    /** {@return {@code cq_mod_caps.max_cq_count}: the largest count of completion queue moderation: an event may wait for up to that many completions (0 where the provider has no {@code ibv_query_device_ex})} */
    public int cqModerationMaxCount() {
        return Short.toUnsignedInt(ibv_cq_moderation_caps.max_cq_count(ibv_device_attr_ex.cq_mod_caps(attr)));
    }

    /** {@return {@code cq_mod_caps.max_cq_period}: the longest period of completion queue moderation: an event may wait that long, in microseconds (0 where the provider has no {@code ibv_query_device_ex})} */
    public int cqModerationMaxPeriod() {
        return Short.toUnsignedInt(ibv_cq_moderation_caps.max_cq_period(ibv_device_attr_ex.cq_mod_caps(attr)));
    }

    @Override
    public String toString() {
        return "DeviceAttributes[fw_ver=" + firmwareVersion() + ", max_qp=" + maxQp() + ", max_cqe=" + maxCqe()
                + ", max_mr_size=" + maxMrSize() + ", phys_port_cnt=" + physPortCnt() + "]";
    }
}
