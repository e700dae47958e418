package io.github.panamaverbs.jmh;

/** The JNI twin of the FFM call-overhead benchmark ({@code libpvjni.so}, jmh/src/main/c/pvjni.c). */
final class JniNoop {
    static {
        System.load(C.DIR.resolve("libpvjni.so").toAbsolutePath().toString());
    }

    private JniNoop() {
    }

    static native void noop();
}
