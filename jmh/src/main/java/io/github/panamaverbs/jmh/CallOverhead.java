package io.github.panamaverbs.jmh;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

/**
 * What one call into C costs, with no device: a no-op C function through a plain FFM downcall, a
 * {@code critical} downcall (no thread-state transition) and a JNI native method (what DiSNI uses).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 10, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class CallOverhead {
    @Benchmark
    public void ffm() throws Throwable {
        C.NOOP.invokeExact();
    }

    @Benchmark
    public void ffmCritical() throws Throwable {
        C.NOOP_CRITICAL.invokeExact();
    }

    @Benchmark
    public void jni() {
        JniNoop.noop();
    }
}
