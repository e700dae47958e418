package io.github.panamaverbs.cm;

import io.github.panamaverbs.bindings.rdma_conn_param;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * What {@link CmId#connect(ConnectionParameters)} and {@link CmId#accept(ConnectionParameters)}
 * offer the peer: {@code struct rdma_conn_param}. The defaults are librdmacm's for a NULL
 * parameter (the device's maximum read/atomic depths: 255 asks for it; 7 RNR retries, which is
 * "retry forever"; no private data) except the transport retry count: 6, not 7, because Soft-RoCE
 * treats 7 as "retry forever", so a peer whose host died would never be reported. With 6 the
 * sender's requests complete with {@code RETRY_EXC_ERR} after the retries (about half a second on
 * Soft-RoCE), the same default as {@link io.github.panamaverbs.verbs.ConnectOptions}.
 * Mutable and not thread-safe; the values are read when the parameters are passed to
 * {@code connect} or {@code accept}.
 */
public final class ConnectionParameters {
    /** librdmacm's "the device's maximum" for the depths. */
    public static final int DEVICE_MAX = 0xFF;

    byte[] privateData = new byte[0];
    int responderResources = DEVICE_MAX;
    int initiatorDepth = DEVICE_MAX;
    int retryCount = 6;
    int rnrRetryCount = 7;
    boolean flowControl;

    /** The defaults: librdmacm's, with 6 transport retries. */
    public ConnectionParameters() {
    }

    /** {@return a copy of these parameters, for a change that must not reach the original} */
    ConnectionParameters copy() {
        ConnectionParameters c = new ConnectionParameters();
        c.privateData = privateData;
        c.responderResources = responderResources;
        c.initiatorDepth = initiatorDepth;
        c.retryCount = retryCount;
        c.rnrRetryCount = rnrRetryCount;
        c.flowControl = flowControl;
        return c;
    }

    private static int range(String field, int value, int max) {
        if (value < 0 || value > max) {
            throw new IllegalArgumentException(field + " must be in [0, " + max + "], not " + value);
        }
        return value;
    }

    /**
     * Bytes the peer receives with the request or reply; the limits depend on the transport (see
     * {@link CmId}) and are checked by {@code connect} and {@code accept}.
     *
     * @param data the private data (copied)
     * @return these parameters
     */
    public ConnectionParameters privateData(byte[] data) {
        this.privateData = Objects.requireNonNull(data, "data").clone();
        return this;
    }

    /**
     * {@code responder_resources}: RDMA reads/atomics the peer may have outstanding on us.
     *
     * @param n the depth, 0 to 255 ({@link #DEVICE_MAX}: the device's maximum)
     * @return these parameters
     * @throws IllegalArgumentException if {@code n} is out of range
     */
    public ConnectionParameters responderResources(int n) {
        this.responderResources = range("responderResources", n, 255);
        return this;
    }

    /**
     * {@code initiator_depth}: RDMA reads/atomics we may have outstanding on the peer.
     *
     * @param n the depth, 0 to 255 ({@link #DEVICE_MAX}: the device's maximum)
     * @return these parameters
     * @throws IllegalArgumentException if {@code n} is out of range
     */
    public ConnectionParameters initiatorDepth(int n) {
        this.initiatorDepth = range("initiatorDepth", n, 255);
        return this;
    }

    /**
     * {@code retry_count}: transport retries.
     *
     * @param n the retries, 0 to 7
     * @return these parameters
     * @throws IllegalArgumentException if {@code n} is out of range
     */
    public ConnectionParameters retryCount(int n) {
        this.retryCount = range("retryCount", n, 7);
        return this;
    }

    /**
     * {@code rnr_retry_count}: receiver-not-ready retries.
     *
     * @param n the retries, 0 to 7 (7: forever)
     * @return these parameters
     * @throws IllegalArgumentException if {@code n} is out of range
     */
    public ConnectionParameters rnrRetryCount(int n) {
        this.rnrRetryCount = range("rnrRetryCount", n, 7);
        return this;
    }

    /**
     * {@code flow_control}: whether hardware flow control is available; exchanged with the peer, not
     * used to configure the queue pair.
     *
     * @param on whether it is available
     * @return these parameters
     */
    public ConnectionParameters flowControl(boolean on) {
        this.flowControl = on;
        return this;
    }

    /** {@return the private data (a copy)} */
    public byte[] privateData() {
        return privateData.clone();
    }

    /** A {@code struct rdma_conn_param} in {@code arena}, its private data beside it. */
    MemorySegment toC(Arena arena) {
        MemorySegment p = arena.allocate(rdma_conn_param.layout());
        if (privateData.length > 0) {
            MemorySegment data = arena.allocate(privateData.length);
            MemorySegment.copy(MemorySegment.ofArray(privateData), 0, data, 0, privateData.length);
            rdma_conn_param.private_data(p, data);
        }
        rdma_conn_param.private_data_len(p, (byte) privateData.length);
        rdma_conn_param.responder_resources(p, (byte) responderResources);
        rdma_conn_param.initiator_depth(p, (byte) initiatorDepth);
        rdma_conn_param.flow_control(p, (byte) (flowControl ? 1 : 0));
        rdma_conn_param.retry_count(p, (byte) retryCount);
        rdma_conn_param.rnr_retry_count(p, (byte) rnrRetryCount);
        return p;
    }
}
