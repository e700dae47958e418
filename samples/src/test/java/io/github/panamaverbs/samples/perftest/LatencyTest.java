package io.github.panamaverbs.samples.perftest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The latency tools' statistics, which need no device. */
class LatencyTest {
    @Test
    void statisticsArePerftests() {
        // Round trips of 10 us x 7, 20, 50, 30: sorted, the top two (30, 50) are dropped, but perftest's
        // t_max is delta[n] of the remaining n = 8, the first dropped one; halved for writes.
        long[] posted = new long[11];
        for (int i = 1; i < posted.length; i++) {
            posted[i] = posted[i - 1] + (i == 3 ? 20_000 : i == 5 ? 50_000 : i == 7 ? 30_000 : 10_000);
        }
        Latency.Stats s = Latency.Stats.of(posted, 2);
        assertEquals(5.0, s.min());
        assertEquals(5.0, s.typical());
        assertEquals(5.625, s.avg());
        assertEquals(15.0, s.max());
        assertEquals(15.0, s.p99());
        assertTrue(s.min() <= s.typical() && s.typical() <= s.p99() && s.p99() <= s.max());
    }
}
