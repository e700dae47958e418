package io.github.panamaverbs.verbs;

import java.util.Set;

/**
 * How {@link QueuePair#connect(RemoteEndpoint, ConnectOptions)} brings a queue pair to RTS: the local
 * port and GID index, the path MTU and the timers and retry counts of RTR and RTS. The defaults are
 * those of rdma-core's {@code ibv_rc_pingpong} (MTU 1024, timeout 14, retry 7, RNR retry 7, min RNR
 * timer 12, one outstanding read/atomic each way).
 */
public final class ConnectOptions {
    int port = 1;
    int gidIndex = -1;
    Mtu mtu = Mtu.MTU_1024;
    int serviceLevel;
    int hopLimit = 1;
    int trafficClass;
    int timeout = 14;
    int retryCount = 7;
    int rnrRetry = 7;
    int minRnrTimer = 12;
    int maxRdAtomic = 1;
    int maxDestRdAtomic = 1;
    int pkeyIndex;
    Set<AccessFlag> access;

    /** Defaults on {@code port}, with no GRH (InfiniBand within a subnet). */
    public static ConnectOptions port(int port) {
        ConnectOptions o = new ConnectOptions();
        o.port = port;
        return o;
    }

    /** The local port, from 1. */
    public int port() {
        return port;
    }

    /** The local GID index, or -1 for no GRH. */
    public int gidIndex() {
        return gidIndex;
    }

    /** Send a GRH from local GID {@code index}: needed on RoCE (perftest's {@code -x}, pingpong's {@code -g}). */
    public ConnectOptions gidIndex(int index) {
        if (index < -1 || index > 255) {
            throw new IllegalArgumentException("GID index out of range: " + index);
        }
        this.gidIndex = index;
        return this;
    }

    /** The path MTU. */
    public ConnectOptions mtu(Mtu mtu) {
        this.mtu = mtu;
        return this;
    }

    /** The service level (IB) / priority. */
    public ConnectOptions serviceLevel(int sl) {
        this.serviceLevel = sl;
        return this;
    }

    /** The GRH hop limit. */
    public ConnectOptions hopLimit(int hopLimit) {
        this.hopLimit = hopLimit;
        return this;
    }

    /** The GRH traffic class. */
    public ConnectOptions trafficClass(int trafficClass) {
        this.trafficClass = trafficClass;
        return this;
    }

    /** The local ACK timeout exponent. */
    public ConnectOptions timeout(int timeout) {
        this.timeout = timeout;
        return this;
    }

    /** Transport retries before {@link WcStatus#RETRY_EXC_ERR}. */
    public ConnectOptions retryCount(int retryCount) {
        this.retryCount = retryCount;
        return this;
    }

    /** Receiver-not-ready retries (7: forever). */
    public ConnectOptions rnrRetry(int rnrRetry) {
        this.rnrRetry = rnrRetry;
        return this;
    }

    /** Minimum RNR NAK timer. */
    public ConnectOptions minRnrTimer(int minRnrTimer) {
        this.minRnrTimer = minRnrTimer;
        return this;
    }

    /** Outstanding RDMA reads and atomics, each direction. */
    public ConnectOptions readAtomicDepth(int n) {
        this.maxRdAtomic = n;
        this.maxDestRdAtomic = n;
        return this;
    }

    /** The remote operations peers may do on this queue pair; default: all its type allows. */
    public ConnectOptions access(Set<AccessFlag> access) {
        this.access = Set.copyOf(access);
        return this;
    }

    /** The partition key index. */
    public ConnectOptions pkeyIndex(int index) {
        this.pkeyIndex = index;
        return this;
    }
}
