package io.github.panamaverbs.samples.apps;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** What the channel layer's samples promise without a device. */
class AppsTest {
    /** Issue 29's measure: the key-value service, server and client with their argument parsing, a third of the ~400 hand-written lines. */
    @Test
    void theKeyValueSampleIsAtMost130Lines() throws Exception {
        long lines = Files.readAllLines(Path.of("src/main/java/io/github/panamaverbs/samples/apps/KeyValue.java")).size();
        assertTrue(lines <= 130, "KeyValue.java has " + lines + " lines (at most 130: a third of the hand-written ~400)");
    }
}
