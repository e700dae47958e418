package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.ibv_ah_attr;
import io.github.panamaverbs.bindings.ibv_global_route;
import java.lang.foreign.MemorySegment;

/**
 * Where packets go: {@code struct ibv_ah_attr}. Used to create a UD {@link AddressHandle} and, inside
 * {@link QpAttributes#addressVector(AddressVector)}, as the path of a connected queue pair.
 *
 * <p>On InfiniBand a destination is a LID; on RoCE every packet carries a GRH, so a
 * {@link GlobalRoute} naming the peer's GID and the local GID index is required.
 *
 * @param port        the local port number, from 1
 * @param dlid        the destination LID (0 on RoCE)
 * @param serviceLevel the service level (IB) / priority
 * @param srcPathBits source path bits (LMC)
 * @param staticRate  {@code enum ibv_rate}; 0 for the port's rate
 * @param grh         the global route, or null for none
 */
public record AddressVector(int port, int dlid, int serviceLevel, int srcPathBits, int staticRate, GlobalRoute grh) {

    /**
     * The global routing header: {@code struct ibv_global_route}.
     *
     * @param dgid         the destination GID
     * @param sgidIndex    which entry of the local GID table to send from
     * @param hopLimit     the IP TTL / hop limit
     * @param trafficClass the IP traffic class
     * @param flowLabel    the 20-bit IPv6 flow label
     */
    public record GlobalRoute(Gid dgid, int sgidIndex, int hopLimit, int trafficClass, int flowLabel) {
        /**
         * Checks the ranges.
         *
         * @throws IllegalArgumentException if {@code dgid} is null or a field is out of range
         */
        public GlobalRoute {
            if (dgid == null) {
                throw new IllegalArgumentException("a global route needs a destination GID");
            }
            if (sgidIndex < 0 || sgidIndex > 255 || hopLimit < 0 || hopLimit > 255 || trafficClass < 0
                    || trafficClass > 255 || flowLabel < 0 || flowLabel > 0xfffff) {
                throw new IllegalArgumentException("GRH field out of range: " + this);
            }
        }
    }

    /**
     * Checks the ranges.
     *
     * @throws IllegalArgumentException if {@code port}, {@code dlid} or {@code serviceLevel} is out of range
     */
    public AddressVector {
        if (port < 1 || port > 255) {
            throw new IllegalArgumentException("port numbers run from 1 to 255, not " + port);
        }
        if (dlid < 0 || dlid > 0xffff || serviceLevel < 0 || serviceLevel > 15) {
            throw new IllegalArgumentException("LID or service level out of range: " + dlid + ", " + serviceLevel);
        }
    }

    /**
     * An InfiniBand destination: a LID, no GRH.
     *
     * @param port         the local port number, from 1
     * @param dlid         the destination LID
     * @param serviceLevel the service level, 0 to 15
     * @return the address vector
     * @throws IllegalArgumentException if an argument is out of range
     */
    public static AddressVector ib(int port, int dlid, int serviceLevel) {
        return new AddressVector(port, dlid, serviceLevel, 0, 0, null);
    }

    /**
     * A RoCE (or cross-subnet IB) destination: a GRH to {@code dgid}, sent from {@code sgidIndex}.
     *
     * @param port      the local port number, from 1
     * @param dgid      the destination GID
     * @param sgidIndex the local GID index to send from
     * @param hopLimit  the IP TTL / hop limit, 0 to 255
     * @return the address vector
     * @throws IllegalArgumentException if {@code dgid} is null or an argument is out of range
     */
    public static AddressVector global(int port, Gid dgid, int sgidIndex, int hopLimit) {
        return new AddressVector(port, 0, 0, 0, 0, new GlobalRoute(dgid, sgidIndex, hopLimit, 0, 0));
    }

    /** Writes this into the {@code struct ibv_ah_attr} at {@code ah}. */
    void writeTo(MemorySegment ah) {
        ah.fill((byte) 0);
        ibv_ah_attr.dlid(ah, (short) dlid);
        ibv_ah_attr.sl(ah, (byte) serviceLevel);
        ibv_ah_attr.src_path_bits(ah, (byte) srcPathBits);
        ibv_ah_attr.static_rate(ah, (byte) staticRate);
        ibv_ah_attr.port_num(ah, (byte) port);
        if (grh != null) {
            ibv_ah_attr.is_global(ah, (byte) 1);
            MemorySegment g = ibv_ah_attr.grh(ah);
            grh.dgid().write(g, ibv_global_route.dgid$offset());
            ibv_global_route.flow_label(g, grh.flowLabel());
            ibv_global_route.sgid_index(g, (byte) grh.sgidIndex());
            ibv_global_route.hop_limit(g, (byte) grh.hopLimit());
            ibv_global_route.traffic_class(g, (byte) grh.trafficClass());
        }
    }

    static AddressVector readFrom(MemorySegment ah) {
        GlobalRoute grh = null;
        if (ibv_ah_attr.is_global(ah) != 0) {
            MemorySegment g = ibv_ah_attr.grh(ah);
            grh = new GlobalRoute(Gid.read(g, ibv_global_route.dgid$offset()),
                    Byte.toUnsignedInt(ibv_global_route.sgid_index(g)), Byte.toUnsignedInt(ibv_global_route.hop_limit(g)),
                    Byte.toUnsignedInt(ibv_global_route.traffic_class(g)), ibv_global_route.flow_label(g));
        }
        int port = Byte.toUnsignedInt(ibv_ah_attr.port_num(ah));
        return new AddressVector(Math.max(1, port), Short.toUnsignedInt(ibv_ah_attr.dlid(ah)),
                Byte.toUnsignedInt(ibv_ah_attr.sl(ah)), Byte.toUnsignedInt(ibv_ah_attr.src_path_bits(ah)),
                Byte.toUnsignedInt(ibv_ah_attr.static_rate(ah)), grh);
    }
}
