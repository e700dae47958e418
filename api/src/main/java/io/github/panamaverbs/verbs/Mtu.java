package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.CEnum;

/** Path MTU: {@code enum ibv_mtu}. */
public enum Mtu {
    /** {@code IBV_MTU_256} */
    MTU_256(1),
    /** {@code IBV_MTU_512} */
    MTU_512(2),
    /** {@code IBV_MTU_1024} */
    MTU_1024(3),
    /** {@code IBV_MTU_2048} */
    MTU_2048(4),
    /** {@code IBV_MTU_4096} */
    MTU_4096(5);

    private static final CEnum<Mtu> C = new CEnum<>(Mtu.class, Mtu::value);

    /** The C value, written out (it is the C ABI's) so that the enum loads without rdma-core; EnumValuesTest checks it. */
    final int value;

    Mtu(int value) {
        this.value = value;
    }

    /** {@return the C value of this constant, in {@code enum ibv_mtu}} */
    public int value() {
        return value;
    }

    /**
     * The constant whose C value is {@code value}.
     *
     * @param value a C value of {@code enum ibv_mtu}
     * @return the constant
     * @throws IllegalArgumentException if no constant has that value
     */
    public static Mtu of(int value) {
        return C.of(value);
    }

    /** {@return the MTU in bytes: 256 … 4096} */
    public int bytes() {
        return 128 << value;
    }

    /**
     * The MTU of {@code bytes} bytes.
     *
     * @param bytes 256, 512, 1024, 2048 or 4096
     * @return the MTU
     * @throws IllegalArgumentException for other sizes
     */
    public static Mtu ofBytes(int bytes) {
        for (Mtu m : values()) {
            if (m.bytes() == bytes) {
                return m;
            }
        }
        throw new IllegalArgumentException("MTU must be 256, 512, 1024, 2048 or 4096, not " + bytes);
    }
}
