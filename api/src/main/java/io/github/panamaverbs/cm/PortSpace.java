package io.github.panamaverbs.cm;

import io.github.panamaverbs.bindings.Verbs;

/** The port space of a connection ID: {@code enum rdma_port_space}. */
public enum PortSpace {
    /** {@code RDMA_PS_TCP}: reliable connections (an RC queue pair), like TCP. */
    TCP(Verbs.RDMA_PS_TCP()),
    /** {@code RDMA_PS_UDP}: datagrams (a UD queue pair), like UDP; no connection. */
    UDP(Verbs.RDMA_PS_UDP());

    final int value;

    PortSpace(int value) {
        this.value = value;
    }

    /** {@return the C value of this constant, in {@code enum rdma_port_space}} */
    public int value() {
        return value;
    }
}
