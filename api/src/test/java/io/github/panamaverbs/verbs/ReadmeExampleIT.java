package io.github.panamaverbs.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import org.junit.jupiter.api.Test;

/** The README's example, run on a real device: the written bytes arrive. */
@RequiresRdma
class ReadmeExampleIT {
    @Test
    void readmeExampleWritesHello(TestDevice dev) {
        assertEquals("hello, RDMA", ReadmeExampleTest.example(dev.name(), dev.gidIndex()));
    }
}
