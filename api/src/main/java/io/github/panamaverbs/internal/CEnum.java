package io.github.panamaverbs.internal;

import java.util.Arrays;
import java.util.EnumSet;
import java.util.Set;
import java.util.function.ToIntFunction;

/**
 * The one place where a Java enum meets its C values: value to constant (a dense table where the
 * values are small, allocation-free, for the polling path) and flag set to bit mask and back.
 * Each enum of the API holds one, built from its {@code value()} accessor:
 * <pre>{@code
 * private static final CEnum<QpState> C = new CEnum<>(QpState.class, QpState::value);
 * public static QpState of(int value) { return C.of(value); }
 * }</pre>
 */
public final class CEnum<E extends Enum<E>> {
    private static final int DENSE_LIMIT = 1024;

    private final Class<E> type;
    private final E[] constants;
    private final ToIntFunction<E> value;
    /** constant by C value, where every value is in [0, DENSE_LIMIT); else null. */
    private final E[] dense;

    public CEnum(Class<E> type, ToIntFunction<E> value) {
        this.type = type;
        this.constants = type.getEnumConstants();
        this.value = value;
        int max = Arrays.stream(constants).mapToInt(value).max().orElse(0);
        int min = Arrays.stream(constants).mapToInt(value).min().orElse(0);
        if (min >= 0 && max < DENSE_LIMIT) {
            @SuppressWarnings("unchecked")
            E[] table = (E[]) java.lang.reflect.Array.newInstance(type, max + 1);
            for (E e : constants) {
                if (table[value.applyAsInt(e)] == null) {
                    table[value.applyAsInt(e)] = e;
                }
            }
            this.dense = table;
        } else {
            this.dense = null;
        }
    }

    /** The constant whose C value is {@code v}, or null. */
    public E find(int v) {
        if (dense != null) {
            return v >= 0 && v < dense.length ? dense[v] : null;
        }
        for (E e : constants) {
            if (value.applyAsInt(e) == v) {
                return e;
            }
        }
        return null;
    }

    /** The constant whose C value is {@code v}; {@link IllegalArgumentException} naming the enum if none. */
    public E of(int v) {
        E e = find(v);
        if (e == null) {
            throw new IllegalArgumentException("no " + type.getSimpleName() + " has the C value " + v);
        }
        return e;
    }

    /** The constant whose C value is {@code v}, or {@code fallback}. */
    public E of(int v, E fallback) {
        E e = find(v);
        return e != null ? e : fallback;
    }

    /** The C bit mask of {@code flags}. */
    public int mask(Set<E> flags) {
        int m = 0;
        for (E f : flags) {
            m |= value.applyAsInt(f);
        }
        return m;
    }

    /** The flags whose bits are set in {@code mask}. */
    public EnumSet<E> flags(int mask) {
        EnumSet<E> s = EnumSet.noneOf(type);
        for (E f : constants) {
            int bit = value.applyAsInt(f);
            if (bit != 0 && (mask & bit) == bit) {
                s.add(f);
            }
        }
        return s;
    }
}
