package io.github.panamaverbs.verbs.testing;

import io.github.panamaverbs.internal.Quirks;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * For a test class that binds type 2 memory windows on Soft-RoCE, where the API refuses them unless
 * asked ({@code Quirks.RXE_TYPE2_WINDOW_INVALIDATE_PANIC}: its kernel panics on an invalidation of one
 * that is not bound, which these tests never make): the opt-in is set for the class, and cleared after.
 */
public final class AllowType2Windows implements BeforeAllCallback, AfterAllCallback {
    @Override
    public void beforeAll(ExtensionContext context) {
        System.setProperty(Quirks.UNSAFE_RXE_TYPE2_WINDOWS, "true");
    }

    @Override
    public void afterAll(ExtensionContext context) {
        System.clearProperty(Quirks.UNSAFE_RXE_TYPE2_WINDOWS);
    }
}
