package io.github.panamaverbs.internal;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.panamaverbs.verbs.VerbsException;
import org.junit.jupiter.api.Test;

/** A missing rdma-core library gives a VerbsException that names it and its packages (simulated). */
class NativeLibrariesTest {
    private static final String ABSENT = "libpanamaverbs-absent.so.1";

    @Test
    void missingLibibverbsNamesTheLibraryAndItsPackages() {
        VerbsException e = NativeLibraries.check(NativeLibraries.LIBIBVERBS, ABSENT);
        assertNotNull(e, ABSENT + " loaded?");
        String m = e.getMessage();
        assertTrue(m.contains("libibverbs.so.1 was not found"), m);
        assertTrue(m.contains("apt-get install libibverbs1 ibverbs-providers rdma-core"), m);
        assertTrue(m.contains("dnf install libibverbs rdma-core"), m);
        assertTrue(m.contains("LD_LIBRARY_PATH"), m);
        assertEquals(Errno.ENOENT, e.errno());
        assertTrue(e.verb().contains(ABSENT), e.verb());
    }

    @Test
    void missingLibrdmacmNamesTheLibraryAndItsPackages() {
        VerbsException e = NativeLibraries.check(NativeLibraries.LIBRDMACM, ABSENT);
        assertNotNull(e);
        String m = e.getMessage();
        assertTrue(m.contains("librdmacm.so.1 was not found"), m);
        assertTrue(m.contains("apt-get install librdmacm1 rdma-core"), m);
        assertTrue(m.contains("dnf install librdmacm rdma-core"), m);
    }

    @Test
    void aLibraryThatLoadsIsNoProblem() {
        assumeTrue(NativeLibraries.loads(NativeLibraries.LIBIBVERBS), "rdma-core is not installed on this host");
        assertNull(NativeLibraries.check(NativeLibraries.LIBIBVERBS, NativeLibraries.LIBIBVERBS));
        assertFalse(NativeLibraries.loads(ABSENT));
        assertDoesNotThrow(NativeLibraries::require);
    }
}
