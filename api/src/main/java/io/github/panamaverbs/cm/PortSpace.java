package io.github.panamaverbs.cm;

/** The port space of a connection ID: {@code enum rdma_port_space}. */
public enum PortSpace {
    /** {@code RDMA_PS_TCP}: reliable connections (an RC queue pair), like TCP. */
    TCP(0x0106),
    /** {@code RDMA_PS_UDP}: datagrams (a UD queue pair), like UDP; no connection. */
    UDP(0x0111);

    /** The C value, written out (it is the C ABI's) so that the enum loads without rdma-core; EnumValuesTest checks it. */
    final int value;

    PortSpace(int value) {
        this.value = value;
    }

    /** {@return the C value of this constant, in {@code enum rdma_port_space}} */
    public int value() {
        return value;
    }
}
