package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.CEnum;

/** The link layer under a port: {@code IBV_LINK_LAYER_*}. */
public enum LinkLayer {
    /** {@code IBV_LINK_LAYER_UNSPECIFIED} */
    UNSPECIFIED(0),
    /** {@code IBV_LINK_LAYER_INFINIBAND} */
    INFINIBAND(1),
    /** {@code IBV_LINK_LAYER_ETHERNET}: RoCE or iWARP */
    ETHERNET(2);

    private static final CEnum<LinkLayer> C = new CEnum<>(LinkLayer.class, LinkLayer::value);

    /** The C value, written out (it is the C ABI's) so that the enum loads without rdma-core; EnumValuesTest checks it. */
    final int value;

    LinkLayer(int value) {
        this.value = value;
    }

    /** {@return the C value of this constant, in {@code IBV_LINK_LAYER_*}} */
    public int value() {
        return value;
    }

    /**
     * The constant whose C value is {@code value}.
     *
     * @param value a C value of {@code IBV_LINK_LAYER_*}
     * @return the constant
     * @throws IllegalArgumentException if no constant has that value
     */
    public static LinkLayer of(int value) {
        return C.of(value);
    }
}
