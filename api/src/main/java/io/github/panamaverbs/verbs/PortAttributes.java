package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.ibv_port_attr;
import io.github.panamaverbs.internal.Snapshot;
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

    /** {@return {@code state}: the logical port state; {@link PortState#ACTIVE} when it can carry traffic} */
    public PortState state() {
        return PortState.of(ibv_port_attr.state(attr));
    }

    /** {@return {@code max_mtu}: the largest MTU the port supports} */
    public Mtu maxMtu() {
        return Mtu.of(ibv_port_attr.max_mtu(attr));
    }

    /** {@return {@code active_mtu}: the MTU in use, the largest a queue pair's path MTU may be} */
    public Mtu activeMtu() {
        return Mtu.of(ibv_port_attr.active_mtu(attr));
    }

    /** {@return {@code gid_tbl_len}: the length of the port's GID table} */
    public int gidTblLen() {
        return ibv_port_attr.gid_tbl_len(attr);
    }

    /** {@return {@code port_cap_flags}: the {@code IBV_PORT_*} capability bits} */
    public int portCapFlags() {
        return ibv_port_attr.port_cap_flags(attr);
    }

    /** {@return {@code max_msg_sz}: the longest message, in bytes} */
    public int maxMsgSz() {
        return ibv_port_attr.max_msg_sz(attr);
    }

    /** {@return {@code bad_pkey_cntr}: how many packets had a bad partition key} */
    public int badPkeyCntr() {
        return ibv_port_attr.bad_pkey_cntr(attr);
    }

    /** {@return {@code qkey_viol_cntr}: how many packets had a Q_Key that did not match} */
    public int qkeyViolCntr() {
        return ibv_port_attr.qkey_viol_cntr(attr);
    }

    /** {@return {@code pkey_tbl_len}: the length of the port's partition key table} */
    public int pkeyTblLen() {
        return Short.toUnsignedInt(ibv_port_attr.pkey_tbl_len(attr));
    }

    /** {@return {@code lid}: the port's base LID (InfiniBand; 0 on RoCE and iWARP)} */
    public int lid() {
        return Short.toUnsignedInt(ibv_port_attr.lid(attr));
    }

    /** {@return {@code sm_lid}: the LID of the subnet manager (InfiniBand)} */
    public int smLid() {
        return Short.toUnsignedInt(ibv_port_attr.sm_lid(attr));
    }

    /** {@return {@code lmc}: the LID mask control: the port has 2<sup>lmc</sup> LIDs from {@link #lid()} on} */
    public int lmc() {
        return Byte.toUnsignedInt(ibv_port_attr.lmc(attr));
    }

    /** {@return {@code max_vl_num}: the number of virtual lanes, as the IB spec encodes it (1: one, 2: two, 3: four, 4: eight, 5: fifteen)} */
    public int maxVlNum() {
        return Byte.toUnsignedInt(ibv_port_attr.max_vl_num(attr));
    }

    /** {@return {@code sm_sl}: the service level to reach the subnet manager with} */
    public int smSl() {
        return Byte.toUnsignedInt(ibv_port_attr.sm_sl(attr));
    }

    /** {@return {@code subnet_timeout}: the subnet propagation delay, an exponent: 4.096 µs × 2<sup>value</sup>} */
    public int subnetTimeout() {
        return Byte.toUnsignedInt(ibv_port_attr.subnet_timeout(attr));
    }

    /** {@return {@code init_type_reply}: how the subnet manager initialized the port} */
    public int initTypeReply() {
        return Byte.toUnsignedInt(ibv_port_attr.init_type_reply(attr));
    }

    /** {@return {@code active_width}: the active link width, an {@code IBV_WIDTH_*} code (1: 1x, 2: 4x, 4: 8x, 8: 12x, 16: 2x)} */
    public int activeWidth() {
        return Byte.toUnsignedInt(ibv_port_attr.active_width(attr));
    }

    /** {@return {@code active_speed}: the active link speed, an {@code IBV_SPEED_*} code} */
    public int activeSpeed() {
        return Byte.toUnsignedInt(ibv_port_attr.active_speed(attr));
    }

    /** {@return {@code phys_state}: the physical port state, as the IB spec encodes it (5: link up)} */
    public int physState() {
        return Byte.toUnsignedInt(ibv_port_attr.phys_state(attr));
    }

    /** {@return {@code link_layer}: InfiniBand, or Ethernet (RoCE and iWARP)} */
    public LinkLayer linkLayer() {
        return LinkLayer.of(Byte.toUnsignedInt(ibv_port_attr.link_layer(attr)));
    }

    /** {@return {@code flags}: the {@code IBV_QPF_*} bits} */
    public int flags() {
        return Byte.toUnsignedInt(ibv_port_attr.flags(attr));
    }

    /** {@return {@code port_cap_flags2}: more capability bits, {@code IBV_PORT_*2}} */
    public int portCapFlags2() {
        return Short.toUnsignedInt(ibv_port_attr.port_cap_flags2(attr));
    }

    @Override
    public String toString() {
        return "PortAttributes[state=" + state() + ", active_mtu=" + activeMtu().bytes() + ", lid=" + lid()
                + ", gid_tbl_len=" + gidTblLen() + ", link_layer=" + linkLayer() + "]";
    }
}
