package io.github.panamaverbs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The provider-quirk table without a device: how a provider is recognised, and what each entry says. */
class QuirksTest {
    @Test
    void aFunctionOutsideEveryProviderHasNoQuirks() {
        MemorySegment strlen = Linker.nativeLinker().defaultLookup().find("strlen").orElseThrow();
        String file = Quirks.mappedFile(strlen.address()).orElseThrow();
        assertTrue(file.contains("libc"), file);
        assertEquals(Set.of(), Quirks.affecting(strlen));
        for (Quirks q : Quirks.values()) {
            assertFalse(q.affects(strlen), q.name());
        }
        assertEquals(java.util.Optional.empty(), Quirks.mappedFile(0));
    }

    @Test
    void everyEntryNamesItsProviderAndSaysWhatTheApiDoes() {
        Set<Quirks.Provider> providers = EnumSet.noneOf(Quirks.Provider.class);
        for (Quirks q : Quirks.values()) {
            providers.add(q.provider());
            assertTrue(q.summary().length() > 40, q.name());
            assertTrue(q.fixedInRelease() > 0, q.name());
        }
        assertEquals(EnumSet.allOf(Quirks.Provider.class), providers, "a provider without a quirk has no business in the table");
        assertEquals(Integer.MAX_VALUE, Quirks.RXE_TYPE2_WINDOW_INVALIDATE_PANIC.fixedInRelease(), "no fix upstream");
        assertFalse(Quirks.unsafeRxeType2WindowsAllowed(), "off unless asked for");
    }
}
