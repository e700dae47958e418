package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.ibv_port_attr;
import java.lang.foreign.MemorySegment;

/**
 * The state and properties of a port: {@code struct ibv_port_attr}, in full, as the inline
 * {@code ibv_query_port} of current headers gets it (the exported symbol fills only an older,
 * shorter struct). A snapshot taken by {@link Context#queryPort(int)}; accessors are named after the
 * C fields.
 */
public final class PortAttributes {
    private final MemorySegment attr;

    PortAttributes(MemorySegment attr) {
        this.attr = Snapshot.copy(attr, ibv_port_attr.sizeof());
    }

    /** {@code state}. */
    public PortState state() {
        return PortState.of(ibv_port_attr.state(attr));
    }

    /** {@code max_mtu}. */
    public Mtu maxMtu() {
        return Mtu.of(ibv_port_attr.max_mtu(attr));
    }

    /** {@code active_mtu}. */
    public Mtu activeMtu() {
        return Mtu.of(ibv_port_attr.active_mtu(attr));
    }

    /** {@code gid_tbl_len}. */
    public int gidTblLen() {
        return ibv_port_attr.gid_tbl_len(attr);
    }

    /** {@code port_cap_flags}. */
    public int portCapFlags() {
        return ibv_port_attr.port_cap_flags(attr);
    }

    /** {@code max_msg_sz}. */
    public int maxMsgSz() {
        return ibv_port_attr.max_msg_sz(attr);
    }

    /** {@code bad_pkey_cntr}. */
    public int badPkeyCntr() {
        return ibv_port_attr.bad_pkey_cntr(attr);
    }

    /** {@code qkey_viol_cntr}. */
    public int qkeyViolCntr() {
        return ibv_port_attr.qkey_viol_cntr(attr);
    }

    /** {@code pkey_tbl_len}. */
    public int pkeyTblLen() {
        return Short.toUnsignedInt(ibv_port_attr.pkey_tbl_len(attr));
    }

    /** {@code lid}. */
    public int lid() {
        return Short.toUnsignedInt(ibv_port_attr.lid(attr));
    }

    /** {@code sm_lid}. */
    public int smLid() {
        return Short.toUnsignedInt(ibv_port_attr.sm_lid(attr));
    }

    /** {@code lmc}. */
    public int lmc() {
        return Byte.toUnsignedInt(ibv_port_attr.lmc(attr));
    }

    /** {@code max_vl_num}. */
    public int maxVlNum() {
        return Byte.toUnsignedInt(ibv_port_attr.max_vl_num(attr));
    }

    /** {@code sm_sl}. */
    public int smSl() {
        return Byte.toUnsignedInt(ibv_port_attr.sm_sl(attr));
    }

    /** {@code subnet_timeout}. */
    public int subnetTimeout() {
        return Byte.toUnsignedInt(ibv_port_attr.subnet_timeout(attr));
    }

    /** {@code init_type_reply}. */
    public int initTypeReply() {
        return Byte.toUnsignedInt(ibv_port_attr.init_type_reply(attr));
    }

    /** {@code active_width}. */
    public int activeWidth() {
        return Byte.toUnsignedInt(ibv_port_attr.active_width(attr));
    }

    /** {@code active_speed}. */
    public int activeSpeed() {
        return Byte.toUnsignedInt(ibv_port_attr.active_speed(attr));
    }

    /** {@code phys_state}. */
    public int physState() {
        return Byte.toUnsignedInt(ibv_port_attr.phys_state(attr));
    }

    /** {@code link_layer}. */
    public LinkLayer linkLayer() {
        return LinkLayer.of(Byte.toUnsignedInt(ibv_port_attr.link_layer(attr)));
    }

    /** {@code flags}. */
    public int flags() {
        return Byte.toUnsignedInt(ibv_port_attr.flags(attr));
    }

    /** {@code port_cap_flags2}. */
    public int portCapFlags2() {
        return Short.toUnsignedInt(ibv_port_attr.port_cap_flags2(attr));
    }

    @Override
    public String toString() {
        return "PortAttributes[state=" + state() + ", active_mtu=" + activeMtu().bytes() + ", lid=" + lid()
                + ", gid_tbl_len=" + gidTblLen() + ", link_layer=" + linkLayer() + "]";
    }
}
