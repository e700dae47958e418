package io.github.panamaverbs.cm;

import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.verbs.AddressVector;

/**
 * One connection-manager event ({@code struct rdma_cm_event}), copied out and acknowledged
 * ({@code rdma_ack_cm_event}) by the API before it is returned: users never acknowledge.
 *
 * @param type               what happened
 * @param status             0, a negative errno (ADDR_ERROR, UNREACHABLE, ...) or, for REJECTED on
 *                           InfiniBand/RoCE, the positive IB CM reject reason (8: nobody listens on that port;
 *                           28: the peer's application rejected); on iWARP -111 (ECONNREFUSED)
 * @param id                 the ID it concerns; for CONNECT_REQUEST the new ID of the incoming connection
 * @param listener           for CONNECT_REQUEST, the listening ID; else null
 * @param privateData        the peer's private data, copied out of the C event (empty if none; the
 *                           accessor returns a fresh copy each time). On InfiniBand/RoCE its
 *                           length is the protocol's fixed field (56 bytes in a request, 196 in an
 *                           accept, 148 in a reject), zero-padded: carry your own length inside
 * @param responderResources the peer's offered RDMA read/atomic depth, from our point of view
 * @param initiatorDepth     the peer's initiator depth, from our point of view
 * @param remoteQpNumber     the peer's queue pair number (connect requests and replies; datagram events)
 * @param qkey               the peer's Q_Key (datagram events); 0 otherwise
 * @param addressVector      where to send datagrams: for a {@link PortSpace#UDP} ESTABLISHED event the
 *                           peer, for MULTICAST_JOIN the group (create an
 *                           {@link io.github.panamaverbs.verbs.AddressHandle} from it); null otherwise
 */
public record CmEvent(CmEventType type, int status, CmId id, CmId listener, byte[] privateData,
                      int responderResources, int initiatorDepth, int remoteQpNumber, int qkey,
                      AddressVector addressVector) {

    /** {@return a copy of the peer's private data (empty if none)} */
    @Override
    public byte[] privateData() {
        return privateData.clone();
    }

    /** {@return the status in words: the errno's name and text, or the reject reason; {@code "0"} for none} */
    public String statusText() {
        if (status == 0) {
            return "0";
        }
        if (type == CmEventType.REJECTED && status > 0) {
            return "reject reason " + status + (status == 8 ? " (no listener on that port)"
                    : status == 28 ? " (rejected by the peer's application)" : "");
        }
        return status < 0 ? Errno.name(-status) + " (" + Errno.describe(-status) + ")" : Integer.toString(status);
    }

    @Override
    public String toString() {
        return "CmEvent[" + type + (status != 0 ? ", status " + statusText() : "") + ", " + id
                + (privateData.length > 0 ? ", " + privateData.length + " bytes of private data" : "") + "]";
    }
}
