package io.github.panamaverbs.internal;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Which providers' posts may be critical downcalls: those that post in user space, by their library's file. */
class DataPathTest {
    @Test
    void postsStayInUserSpaceOnlyForTheDoorbellProviders() {
        for (String file : new String[] {"/usr/lib/x86_64-linux-gnu/libmlx5.so.1.24.44.0",
                "/usr/lib/x86_64-linux-gnu/libibverbs/libbnxt_re-rdmav34.so", "/usr/lib/x86_64-linux-gnu/libefa.so.1.1.44.0",
                "/usr/lib/x86_64-linux-gnu/libmlx4.so.1.0.44.0", "/usr/lib/x86_64-linux-gnu/libibverbs/libirdma-rdmav34.so"}) {
            assertTrue(DataPath.isUserSpacePostLibrary(file), file);
        }
        for (String file : new String[] {"/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so",
                "/usr/lib/x86_64-linux-gnu/libibverbs/libsiw-rdmav34.so", "/tmp/pvb/libpvbench.so",
                "/usr/lib/x86_64-linux-gnu/libc.so.6", "/opt/libmlx5x/libfoo.so"}) {
            assertFalse(DataPath.isUserSpacePostLibrary(file), file);
        }
    }

    @Test
    void aFunctionOfLibcIsNoDoorbellProvider() {
        assertFalse(DataPath.postsInUserSpace(Native.LINKER.defaultLookup().find("sched_yield").orElseThrow()));
    }
}
