package io.github.panamaverbs.verbs;

import java.util.Objects;
import java.util.Set;

/**
 * How a queue pair is brought to RTS by {@link QueuePair#connect(RemoteEndpoint, ConnectOptions)} or
 * step by step ({@link QueuePair#toInit}, {@link QueuePair#toRtr}, {@link QueuePair#toRts}): the
 * local port and GID index, the path MTU, the Q_Key of a UD queue pair, and the timers and retry
 * counts of RTR and RTS. Every setter checks its range and names the field it refuses.
 *
 * <p>The defaults are those of rdma-core's {@code ibv_rc_pingpong} (MTU 1024, ACK timeout 14, RNR
 * retry 7, min RNR timer 12, one outstanding read/atomic each way) except the retry count: 6, not 7.
 * Some providers (Soft-RoCE) treat a retry count of 7 as "retry forever", so a peer that died would
 * never be reported; with 6 retries of a 67 ms timeout (4.096 µs × 2<sup>14</sup>) a dead peer turns
 * the outstanding requests into {@link WcStatus#RETRY_EXC_ERR} after about half a second. A lower
 * timeout or count reports it sooner, at the risk of giving up on a peer that is only slow.
 *
 * <p>Mutable and not thread-safe: {@link #copy()} it to derive other options.
 */
public final class ConnectOptions {
    int port = 1;
    int gidIndex = -1;
    Mtu mtu = Mtu.MTU_1024;
    int serviceLevel;
    int hopLimit = 1;
    int trafficClass;
    int timeout = 14;
    int retryCount = 6;
    int rnrRetry = 7;
    int minRnrTimer = 12;
    int maxRdAtomic = 1;
    int maxDestRdAtomic = 1;
    int pkeyIndex;
    int qkey;
    Set<AccessFlag> access;

    private ConnectOptions() {
    }

    /**
     * Defaults on {@code port}, with no GRH (InfiniBand within a subnet).
     *
     * @param port the local port, 1 to 255
     * @return new options
     * @throws IllegalArgumentException if {@code port} is out of range
     */
    public static ConnectOptions port(int port) {
        ConnectOptions o = new ConnectOptions();
        o.port = range("port", port, 1, 255);
        return o;
    }

    private static int range(String field, int value, int min, int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(field + " must be in [" + min + ", " + max + "], not " + value);
        }
        return value;
    }

    /** {@return a copy, to change without touching this one} */
    public ConnectOptions copy() {
        ConnectOptions o = new ConnectOptions();
        o.port = port;
        o.gidIndex = gidIndex;
        o.mtu = mtu;
        o.serviceLevel = serviceLevel;
        o.hopLimit = hopLimit;
        o.trafficClass = trafficClass;
        o.timeout = timeout;
        o.retryCount = retryCount;
        o.rnrRetry = rnrRetry;
        o.minRnrTimer = minRnrTimer;
        o.maxRdAtomic = maxRdAtomic;
        o.maxDestRdAtomic = maxDestRdAtomic;
        o.pkeyIndex = pkeyIndex;
        o.qkey = qkey;
        o.access = access;
        return o;
    }

    /** {@return the local port, from 1} */
    public int port() {
        return port;
    }

    /** {@return the local GID index, or -1 for no GRH} */
    public int gidIndex() {
        return gidIndex;
    }

    /**
     * Send a GRH from local GID {@code index}: needed on RoCE (perftest's {@code -x}, pingpong's {@code -g}).
     *
     * @param index the local GID index, 0 to 255; -1 for no GRH
     * @return these options
     * @throws IllegalArgumentException if {@code index} is out of range
     */
    public ConnectOptions gidIndex(int index) {
        this.gidIndex = range("gidIndex", index, -1, 255);
        return this;
    }

    /**
     * The path MTU, at most the port's active MTU.
     *
     * @param mtu the path MTU
     * @return these options
     */
    public ConnectOptions mtu(Mtu mtu) {
        this.mtu = Objects.requireNonNull(mtu, "mtu");
        return this;
    }

    /**
     * The service level (IB) / priority.
     *
     * @param sl the service level, 0 to 15
     * @return these options
     * @throws IllegalArgumentException if {@code sl} is out of range
     */
    public ConnectOptions serviceLevel(int sl) {
        this.serviceLevel = range("serviceLevel", sl, 0, 15);
        return this;
    }

    /**
     * The GRH hop limit.
     *
     * @param hopLimit the hop limit, 0 to 255
     * @return these options
     * @throws IllegalArgumentException if {@code hopLimit} is out of range
     */
    public ConnectOptions hopLimit(int hopLimit) {
        this.hopLimit = range("hopLimit", hopLimit, 0, 255);
        return this;
    }

    /**
     * The GRH traffic class.
     *
     * @param trafficClass the traffic class, 0 to 255
     * @return these options
     * @throws IllegalArgumentException if {@code trafficClass} is out of range
     */
    public ConnectOptions trafficClass(int trafficClass) {
        this.trafficClass = range("trafficClass", trafficClass, 0, 255);
        return this;
    }

    /**
     * The local ACK timeout exponent: 4.096 µs × 2<sup>timeout</sup> (0: wait forever). RC only.
     *
     * @param timeout the exponent, 0 to 31
     * @return these options
     * @throws IllegalArgumentException if {@code timeout} is out of range
     */
    public ConnectOptions timeout(int timeout) {
        this.timeout = range("timeout", timeout, 0, 31);
        return this;
    }

    /**
     * Transport retries before {@link WcStatus#RETRY_EXC_ERR}. RC only.
     *
     * @param retryCount the retries, 0 to 7 (7 is "forever" on some providers)
     * @return these options
     * @throws IllegalArgumentException if {@code retryCount} is out of range
     */
    public ConnectOptions retryCount(int retryCount) {
        this.retryCount = range("retryCount", retryCount, 0, 7);
        return this;
    }

    /**
     * Receiver-not-ready retries, before {@link WcStatus#RNR_RETRY_EXC_ERR}. RC only.
     *
     * @param rnrRetry the retries, 0 to 7 (7: forever)
     * @return these options
     * @throws IllegalArgumentException if {@code rnrRetry} is out of range
     */
    public ConnectOptions rnrRetry(int rnrRetry) {
        this.rnrRetry = range("rnrRetry", rnrRetry, 0, 7);
        return this;
    }

    /**
     * Minimum RNR NAK timer: how long a peer that found no receive posted waits before it retries. RC only.
     *
     * @param minRnrTimer the timer code, 0 to 31 (an index into the IB spec's table of delays)
     * @return these options
     * @throws IllegalArgumentException if {@code minRnrTimer} is out of range
     */
    public ConnectOptions minRnrTimer(int minRnrTimer) {
        this.minRnrTimer = range("minRnrTimer", minRnrTimer, 0, 31);
        return this;
    }

    /**
     * Outstanding RDMA reads and atomics, in each direction (initiator and responder depth). RC only.
     *
     * @param n the depth, 0 to 255
     * @return these options
     * @throws IllegalArgumentException if {@code n} is out of range
     */
    public ConnectOptions readAtomicDepth(int n) {
        this.maxRdAtomic = range("readAtomicDepth", n, 0, 255);
        this.maxDestRdAtomic = n;
        return this;
    }

    /**
     * The remote operations peers may do on this queue pair (RC and UC); default: all its type
     * allows (RC: write, read and atomics; UC: write).
     *
     * @param access the remote access rights (copied)
     * @return these options
     * @throws NullPointerException if {@code access} or an element is null
     */
    public ConnectOptions access(Set<AccessFlag> access) {
        this.access = Set.copyOf(Objects.requireNonNull(access, "access"));
        return this;
    }

    /**
     * The partition key index.
     *
     * @param index the index, 0 to 65535
     * @return these options
     * @throws IllegalArgumentException if {@code index} is out of range
     */
    public ConnectOptions pkeyIndex(int index) {
        this.pkeyIndex = range("pkeyIndex", index, 0, 0xffff);
        return this;
    }

    /**
     * The Q_Key of a UD queue pair (set in INIT); datagrams whose Q_Key differs are dropped.
     *
     * @param qkey the Q_Key
     * @return these options
     */
    public ConnectOptions qkey(int qkey) {
        this.qkey = qkey;
        return this;
    }
}
