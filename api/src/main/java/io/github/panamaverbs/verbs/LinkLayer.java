package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;

/** The link layer under a port: {@code IBV_LINK_LAYER_*}. */
public enum LinkLayer {
    /** {@code IBV_LINK_LAYER_UNSPECIFIED} */
    UNSPECIFIED(Verbs.IBV_LINK_LAYER_UNSPECIFIED()),
    /** {@code IBV_LINK_LAYER_INFINIBAND} */
    INFINIBAND(Verbs.IBV_LINK_LAYER_INFINIBAND()),
    /** {@code IBV_LINK_LAYER_ETHERNET}: RoCE or iWARP */
    ETHERNET(Verbs.IBV_LINK_LAYER_ETHERNET());

    final int value;

    private static final LinkLayer[] VALUES = values();

    LinkLayer(int value) {
        this.value = value;
    }

    /** The C value of this constant. */
    public int value() {
        return value;
    }

    /** The constant whose C value is {@code value}; throws {@link IllegalArgumentException} if none. */
    public static LinkLayer of(int value) {
        for (LinkLayer v : VALUES) {
            if (v.value == value) {
                return v;
            }
        }
        throw new IllegalArgumentException("no LinkLayer with value " + value);
    }
}
