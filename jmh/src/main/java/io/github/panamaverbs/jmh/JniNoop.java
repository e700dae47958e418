package io.github.panamaverbs.jmh;

/** The JNI twins of the FFM call-overhead and call-shape benchmarks ({@code libpvjni.so}, jmh/src/main/c/pvjni.c). */
final class JniNoop {
    static {
        System.load(C.DIR.resolve("libpvjni.so").toAbsolutePath().toString());
    }

    private JniNoop() {
    }

    static native void noop();

    /** {@code ((poll_cq_fn) fn)(cq, n, wc)}: the poll shape of CallShapes. */
    static native int poll(long fn, long cq, int n, long wc);

    /** {@code ((post_send_fn) fn)(qp, wr, bad)}: the post shape of CallShapes. */
    static native int post(long fn, long qp, long wr, long bad);
}
