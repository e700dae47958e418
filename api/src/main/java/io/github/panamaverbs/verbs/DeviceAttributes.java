package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.ibv_device_attr;
import io.github.panamaverbs.bindings.ibv_cq_moderation_caps;
import io.github.panamaverbs.bindings.ibv_device_attr_ex;
import io.github.panamaverbs.bindings.ibv_odp_caps;
import io.github.panamaverbs.bindings.ibv_packet_pacing_caps;
import io.github.panamaverbs.bindings.ibv_rss_caps;
import io.github.panamaverbs.bindings.ibv_tm_caps;
import io.github.panamaverbs.bindings.ibv_tso_caps;
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

    /** {@code fw_ver}: the firmware version text. */
    public String firmwareVersion() {
        return ibv_device_attr.fw_ver(orig).getString(0);
    }

    /** {@code node_guid}, in host byte order. */
    public long nodeGuid() {
        return Long.reverseBytes(ibv_device_attr.node_guid(orig));
    }

    /** {@code sys_image_guid}, in host byte order. */
    public long sysImageGuid() {
        return Long.reverseBytes(ibv_device_attr.sys_image_guid(orig));
    }

    /** {@code max_mr_size}. */
    public long maxMrSize() {
        return ibv_device_attr.max_mr_size(orig);
    }

    /** {@code page_size_cap}. */
    public long pageSizeCap() {
        return ibv_device_attr.page_size_cap(orig);
    }

    /** {@code vendor_id}. */
    public int vendorId() {
        return ibv_device_attr.vendor_id(orig);
    }

    /** {@code vendor_part_id}. */
    public int vendorPartId() {
        return ibv_device_attr.vendor_part_id(orig);
    }

    /** {@code hw_ver}. */
    public int hwVer() {
        return ibv_device_attr.hw_ver(orig);
    }

    /** {@code max_qp}. */
    public int maxQp() {
        return ibv_device_attr.max_qp(orig);
    }

    /** {@code max_qp_wr}. */
    public int maxQpWr() {
        return ibv_device_attr.max_qp_wr(orig);
    }

    /** {@code device_cap_flags}. */
    public int deviceCapFlags() {
        return ibv_device_attr.device_cap_flags(orig);
    }

    /** {@code max_sge}. */
    public int maxSge() {
        return ibv_device_attr.max_sge(orig);
    }

    /** {@code max_sge_rd}. */
    public int maxSgeRd() {
        return ibv_device_attr.max_sge_rd(orig);
    }

    /** {@code max_cq}. */
    public int maxCq() {
        return ibv_device_attr.max_cq(orig);
    }

    /** {@code max_cqe}. */
    public int maxCqe() {
        return ibv_device_attr.max_cqe(orig);
    }

    /** {@code max_mr}. */
    public int maxMr() {
        return ibv_device_attr.max_mr(orig);
    }

    /** {@code max_pd}. */
    public int maxPd() {
        return ibv_device_attr.max_pd(orig);
    }

    /** {@code max_qp_rd_atom}. */
    public int maxQpRdAtom() {
        return ibv_device_attr.max_qp_rd_atom(orig);
    }

    /** {@code max_ee_rd_atom}. */
    public int maxEeRdAtom() {
        return ibv_device_attr.max_ee_rd_atom(orig);
    }

    /** {@code max_res_rd_atom}. */
    public int maxResRdAtom() {
        return ibv_device_attr.max_res_rd_atom(orig);
    }

    /** {@code max_qp_init_rd_atom}. */
    public int maxQpInitRdAtom() {
        return ibv_device_attr.max_qp_init_rd_atom(orig);
    }

    /** {@code max_ee_init_rd_atom}. */
    public int maxEeInitRdAtom() {
        return ibv_device_attr.max_ee_init_rd_atom(orig);
    }

    /** {@code atomic_cap}. */
    public int atomicCap() {
        return ibv_device_attr.atomic_cap(orig);
    }

    /** {@code max_ee}. */
    public int maxEe() {
        return ibv_device_attr.max_ee(orig);
    }

    /** {@code max_rdd}. */
    public int maxRdd() {
        return ibv_device_attr.max_rdd(orig);
    }

    /** {@code max_mw}. */
    public int maxMw() {
        return ibv_device_attr.max_mw(orig);
    }

    /** {@code max_raw_ipv6_qp}. */
    public int maxRawIpv6Qp() {
        return ibv_device_attr.max_raw_ipv6_qp(orig);
    }

    /** {@code max_raw_ethy_qp}. */
    public int maxRawEthyQp() {
        return ibv_device_attr.max_raw_ethy_qp(orig);
    }

    /** {@code max_mcast_grp}. */
    public int maxMcastGrp() {
        return ibv_device_attr.max_mcast_grp(orig);
    }

    /** {@code max_mcast_qp_attach}. */
    public int maxMcastQpAttach() {
        return ibv_device_attr.max_mcast_qp_attach(orig);
    }

    /** {@code max_total_mcast_qp_attach}. */
    public int maxTotalMcastQpAttach() {
        return ibv_device_attr.max_total_mcast_qp_attach(orig);
    }

    /** {@code max_ah}. */
    public int maxAh() {
        return ibv_device_attr.max_ah(orig);
    }

    /** {@code max_fmr}. */
    public int maxFmr() {
        return ibv_device_attr.max_fmr(orig);
    }

    /** {@code max_map_per_fmr}. */
    public int maxMapPerFmr() {
        return ibv_device_attr.max_map_per_fmr(orig);
    }

    /** {@code max_srq}. */
    public int maxSrq() {
        return ibv_device_attr.max_srq(orig);
    }

    /** {@code max_srq_wr}. */
    public int maxSrqWr() {
        return ibv_device_attr.max_srq_wr(orig);
    }

    /** {@code max_srq_sge}. */
    public int maxSrqSge() {
        return ibv_device_attr.max_srq_sge(orig);
    }

    /** {@code max_pkeys}. */
    public int maxPkeys() {
        return Short.toUnsignedInt(ibv_device_attr.max_pkeys(orig));
    }

    /** {@code local_ca_ack_delay}. */
    public int localCaAckDelay() {
        return Byte.toUnsignedInt(ibv_device_attr.local_ca_ack_delay(orig));
    }

    /** {@code phys_port_cnt}. */
    public int physPortCnt() {
        return Byte.toUnsignedInt(ibv_device_attr.phys_port_cnt(orig));
    }

    /** {@code completion_timestamp_mask} (0 where the provider has no {@code ibv_query_device_ex}). */
    public long completionTimestampMask() {
        return ibv_device_attr_ex.completion_timestamp_mask(attr);
    }

    /** {@code hca_core_clock} (0 where the provider has no {@code ibv_query_device_ex}). */
    public long hcaCoreClock() {
        return ibv_device_attr_ex.hca_core_clock(attr);
    }

    /** {@code device_cap_flags_ex} (0 where the provider has no {@code ibv_query_device_ex}). */
    public long deviceCapFlagsEx() {
        return ibv_device_attr_ex.device_cap_flags_ex(attr);
    }

    /** {@code max_dm_size} (0 where the provider has no {@code ibv_query_device_ex}). */
    public long maxDmSize() {
        return ibv_device_attr_ex.max_dm_size(attr);
    }

    /** {@code phys_port_cnt_ex} (0 where the provider has no {@code ibv_query_device_ex}). */
    public int physPortCntEx() {
        return ibv_device_attr_ex.phys_port_cnt_ex(attr);
    }

    /** {@code odp_caps.general_caps}: on-demand paging support. */
    public long odpGeneralCaps() {
        return ibv_device_attr_ex.odp_caps(attr).get(java.lang.foreign.ValueLayout.JAVA_LONG, 0);
    }

    // The rest of ibv_device_attr_ex, as ibv_devinfo -v prints it (0 where the provider has no
    // ibv_query_device_ex). Added for the samples' devinfo.

    /** {@code odp_caps.per_transport_caps.rc_odp_caps}: {@code IBV_ODP_SUPPORT_*} bits for RC. */
    public int odpRcCaps() {
        return ibv_odp_caps.per_transport_caps.rc_odp_caps(odpPerTransport());
    }

    /** {@code odp_caps.per_transport_caps.uc_odp_caps}. */
    public int odpUcCaps() {
        return ibv_odp_caps.per_transport_caps.uc_odp_caps(odpPerTransport());
    }

    /** {@code odp_caps.per_transport_caps.ud_odp_caps}. */
    public int odpUdCaps() {
        return ibv_odp_caps.per_transport_caps.ud_odp_caps(odpPerTransport());
    }

    private MemorySegment odpPerTransport() {
        return ibv_odp_caps.per_transport_caps(ibv_device_attr_ex.odp_caps(attr));
    }

    /** {@code xrc_odp_caps}. */
    public int xrcOdpCaps() {
        return ibv_device_attr_ex.xrc_odp_caps(attr);
    }

    /** {@code raw_packet_caps}: {@code IBV_RAW_PACKET_CAP_*} bits. */
    public int rawPacketCaps() {
        return ibv_device_attr_ex.raw_packet_caps(attr);
    }

    /** {@code tso_caps.max_tso}. */
    public int tsoMaxTso() {
        return ibv_tso_caps.max_tso(ibv_device_attr_ex.tso_caps(attr));
    }

    /** {@code tso_caps.supported_qpts}: a bit per {@code ibv_qp_type}. */
    public int tsoSupportedQpts() {
        return ibv_tso_caps.supported_qpts(ibv_device_attr_ex.tso_caps(attr));
    }

    /** {@code rss_caps.max_rwq_indirection_tables}. */
    public int rssMaxRwqIndirectionTables() {
        return ibv_rss_caps.max_rwq_indirection_tables(ibv_device_attr_ex.rss_caps(attr));
    }

    /** {@code rss_caps.max_rwq_indirection_table_size}. */
    public int rssMaxRwqIndirectionTableSize() {
        return ibv_rss_caps.max_rwq_indirection_table_size(ibv_device_attr_ex.rss_caps(attr));
    }

    /** {@code rss_caps.rx_hash_function}. */
    public int rssRxHashFunction() {
        return Byte.toUnsignedInt(ibv_rss_caps.rx_hash_function(ibv_device_attr_ex.rss_caps(attr)));
    }

    /** {@code rss_caps.rx_hash_fields_mask}. */
    public long rssRxHashFieldsMask() {
        return ibv_rss_caps.rx_hash_fields_mask(ibv_device_attr_ex.rss_caps(attr));
    }

    /** {@code rss_caps.supported_qpts}. */
    public int rssSupportedQpts() {
        return ibv_rss_caps.supported_qpts(ibv_device_attr_ex.rss_caps(attr));
    }

    /** {@code max_wq_type_rq}. */
    public int maxWqTypeRq() {
        return ibv_device_attr_ex.max_wq_type_rq(attr);
    }

    /** {@code packet_pacing_caps.qp_rate_limit_min}, kbps. */
    public int packetPacingRateLimitMin() {
        return ibv_packet_pacing_caps.qp_rate_limit_min(ibv_device_attr_ex.packet_pacing_caps(attr));
    }

    /** {@code packet_pacing_caps.qp_rate_limit_max}, kbps. */
    public int packetPacingRateLimitMax() {
        return ibv_packet_pacing_caps.qp_rate_limit_max(ibv_device_attr_ex.packet_pacing_caps(attr));
    }

    /** {@code packet_pacing_caps.supported_qpts}. */
    public int packetPacingSupportedQpts() {
        return ibv_packet_pacing_caps.supported_qpts(ibv_device_attr_ex.packet_pacing_caps(attr));
    }

    /** {@code tm_caps.max_rndv_hdr_size}. */
    public int tmMaxRndvHdrSize() {
        return ibv_tm_caps.max_rndv_hdr_size(ibv_device_attr_ex.tm_caps(attr));
    }

    /** {@code tm_caps.max_num_tags}: 0 where tag matching is not supported. */
    public int tmMaxNumTags() {
        return ibv_tm_caps.max_num_tags(ibv_device_attr_ex.tm_caps(attr));
    }

    /** {@code tm_caps.flags}. */
    public int tmFlags() {
        return ibv_tm_caps.flags(ibv_device_attr_ex.tm_caps(attr));
    }

    /** {@code tm_caps.max_ops}. */
    public int tmMaxOps() {
        return ibv_tm_caps.max_ops(ibv_device_attr_ex.tm_caps(attr));
    }

    /** {@code tm_caps.max_sge}. */
    public int tmMaxSge() {
        return ibv_tm_caps.max_sge(ibv_device_attr_ex.tm_caps(attr));
    }

    /** {@code cq_mod_caps.max_cq_count}. */
    public int cqModerationMaxCount() {
        return Short.toUnsignedInt(ibv_cq_moderation_caps.max_cq_count(ibv_device_attr_ex.cq_mod_caps(attr)));
    }

    /** {@code cq_mod_caps.max_cq_period}, microseconds. */
    public int cqModerationMaxPeriod() {
        return Short.toUnsignedInt(ibv_cq_moderation_caps.max_cq_period(ibv_device_attr_ex.cq_mod_caps(attr)));
    }

    @Override
    public String toString() {
        return "DeviceAttributes[fw_ver=" + firmwareVersion() + ", max_qp=" + maxQp() + ", max_cqe=" + maxCqe()
                + ", max_mr_size=" + maxMrSize() + ", phys_port_cnt=" + physPortCnt() + "]";
    }
}
