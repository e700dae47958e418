package io.github.panamaverbs.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.samples.common.Options;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import org.junit.jupiter.api.Test;

/** The launcher's flags and errors, which need no device. */
class MainTest {
    @Test
    void flagsAndErrors() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertEquals(1, Main.run(new String[] {"rc-pingpong", "-x"}, new PrintStream(out), new PrintStream(err)));
        assertTrue(err.toString().contains("unknown option -x"), err.toString());
        assertEquals(1, Main.run(new String[] {"rc-pingpong", "-m", "1000"}, new PrintStream(out), new PrintStream(err)));
        assertEquals(1, Main.run(new String[] {"write-lat", "-n", "zz"}, new PrintStream(out), new PrintStream(err)));
        assertTrue(err.toString().contains("not a number"), err.toString());
        assertEquals(0, Main.run(new String[] {"srq-pingpong", "--help"}, new PrintStream(out), new PrintStream(err)));
        assertTrue(out.toString().contains("--num-qp"));
        assertEquals(1, Main.run(new String[] {"nope"}, new PrintStream(out), new PrintStream(err)));
        assertEquals(1, Main.run(new String[] {"send-lat", "-c", "XRC"}, new PrintStream(out), new PrintStream(err)));
        assertTrue(err.toString().contains("XRC is not RC, UC or UD"), err.toString());
        assertEquals(1, Main.run(new String[] {"write-bw", "-c", "UD"}, new PrintStream(out), new PrintStream(err)));
        assertTrue(err.toString().contains("UD connection only possible in SEND verb"), err.toString());
        assertEquals(0, Main.run(new String[] {"send-lat", "--help"}, new PrintStream(out), new PrintStream(err)));
        assertTrue(out.toString().contains("ib_send_lat") && out.toString().contains("default 236"), out.toString());
        assertEquals(1, Main.run(new String[] {"asyncwatch", "--count", "zz"}, new PrintStream(out), new PrintStream(err)));
        assertEquals(1, Main.run(new String[] {"asyncwatch", "--timeout", "0"}, new PrintStream(out), new PrintStream(err)));
        assertEquals(0, Main.run(new String[] {"asyncwatch", "--help"}, new PrintStream(out), new PrintStream(err)));
        assertTrue(out.toString().contains("--count") && out.toString().contains("--timeout"), out.toString());
        assertEquals(0x10, Options.parseNumber("0x10"));
        assertEquals(8, Options.parseNumber("010"));
    }
}
