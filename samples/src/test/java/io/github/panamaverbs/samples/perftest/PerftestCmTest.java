package io.github.panamaverbs.samples.perftest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.github.panamaverbs.samples.common.SampleException;
import io.github.panamaverbs.verbs.Gid;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** perftest -R's per-QP message: {@code struct pingpong_dest}, 56 bytes in network order. */
class PerftestCmTest {
    @Test
    void pingpongDestLayout() {
        byte[] raw = new byte[16];
        for (int i = 0; i < 16; i++) {
            raw[i] = (byte) (0xa0 + i);
        }
        PerftestLink.Key k = new PerftestLink.Key(0x1234, 16, 0x11, 0xabcdef, 0x89abcdef, 0x7f66e02fd002L, Gid.of(raw), 7);
        byte[] m = k.encodeDest();
        assertEquals(56, m.length);
        assertEquals("00001234" + "00000010" + "00000011" + "00abcdef" + "89abcdef" + "00000000" + "00007f66e02fd002"
                + "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf" + "00000007" + "00000000", HexFormat.of().formatHex(m));
        assertEquals(k, PerftestLink.Key.parseDest(m));
        assertArrayEquals(new byte[56], PerftestLink.Key.NONE.encodeDest());
        assertThrows(SampleException.class, () -> PerftestLink.Key.parseDest(new byte[16]));
    }
}
