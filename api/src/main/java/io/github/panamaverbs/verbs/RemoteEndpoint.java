package io.github.panamaverbs.verbs;

import java.nio.ByteBuffer;

/**
 * What a peer needs to connect its queue pair to ours, exchanged out of band (over TCP, a file, …)
 * before RDMA traffic can flow: the port's LID (InfiniBand; 0 on RoCE), the queue pair number, the
 * first packet sequence number and the GID (RoCE, or IB across subnets).
 *
 * @param lid the local identifier of the port (16 bits)
 * @param qpn the queue pair number (24 bits)
 * @param psn the first packet sequence number (24 bits)
 * @param gid the GID, {@link Gid#ZERO} when not used
 */
public record RemoteEndpoint(int lid, int qpn, int psn, Gid gid) {
    /** The size of {@link #toBytes()}: 2 + 4 + 4 + 16. */
    public static final int BYTES = 26;

    /**
     * Checks the ranges.
     *
     * @throws IllegalArgumentException if {@code lid}, {@code qpn} or {@code psn} is out of range
     */
    public RemoteEndpoint {
        if (lid < 0 || lid > 0xffff) {
            throw new IllegalArgumentException("LID out of range: " + lid);
        }
        if (qpn < 0 || qpn > 0xffffff) {
            throw new IllegalArgumentException("QPN out of range: " + qpn);
        }
        if (psn < 0 || psn > 0xffffff) {
            throw new IllegalArgumentException("PSN out of range: " + psn);
        }
        if (gid == null) {
            gid = Gid.ZERO;
        }
    }

    /** {@return {@link #BYTES} bytes in network order: lid, qpn, psn, gid} */
    public byte[] toBytes() {
        return ByteBuffer.allocate(BYTES).putShort((short) lid).putInt(qpn).putInt(psn).put(gid.bytes()).array();
    }

    /**
     * The inverse of {@link #toBytes()}.
     *
     * @param bytes {@link #BYTES} bytes, as {@link #toBytes()} writes them
     * @return the endpoint
     * @throws IllegalArgumentException if {@code bytes} is not {@link #BYTES} long, or a field is out of range
     */
    public static RemoteEndpoint fromBytes(byte[] bytes) {
        if (bytes.length != BYTES) {
            throw new IllegalArgumentException("an endpoint has " + BYTES + " bytes, not " + bytes.length);
        }
        ByteBuffer b = ByteBuffer.wrap(bytes);
        int lid = Short.toUnsignedInt(b.getShort());
        int qpn = b.getInt();
        int psn = b.getInt();
        byte[] gid = new byte[16];
        b.get(gid);
        return new RemoteEndpoint(lid, qpn, psn, Gid.of(gid));
    }

    /** {@return whether the peer has a GID (it is not {@link Gid#ZERO}), so that a GRH can reach it (RoCE)} */
    public boolean needsGrh() {
        return !gid.isZero();
    }
}
