package io.github.panamaverbs.samples.ibverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.github.panamaverbs.samples.common.SampleException;
import io.github.panamaverbs.verbs.Gid;
import io.github.panamaverbs.verbs.RemoteEndpoint;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** The ping-pongs' wire message, which needs no device. */
class WireTest {
    @Test
    void wireMessageIsTheCToolsFormat() {
        Gid gid = Gid.of(HexFormat.of().parseHex("00000000000000000000ffff0a4d0001"));
        byte[] msg = Wire.encode(new RemoteEndpoint(0, 0x11, 0xabcdef, gid));
        assertEquals(52, msg.length);
        assertEquals("0000:000011:abcdef:00000000000000000000ffff0a4d0001", new String(msg, 0, 51, StandardCharsets.US_ASCII));
        assertEquals(0, msg[51]);
        RemoteEndpoint back = Wire.decode(msg);
        assertEquals(0x11, back.qpn());
        assertEquals(0xabcdef, back.psn());
        assertEquals(gid, back.gid());
        assertThrows(SampleException.class, () -> Wire.decode("garbage".getBytes(StandardCharsets.US_ASCII)));
    }
}
