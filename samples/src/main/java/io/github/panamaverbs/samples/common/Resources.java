package io.github.panamaverbs.samples.common;

import java.util.ArrayDeque;
import java.util.Deque;

/** Closes what was added, last first, as the API's closing rule wants; keeps the first failure. */
public final class Resources implements AutoCloseable {
    private final Deque<AutoCloseable> stack = new ArrayDeque<>();

    public <T extends AutoCloseable> T add(T resource) {
        stack.push(resource);
        return resource;
    }

    @Override
    public void close() {
        RuntimeException first = null;
        while (!stack.isEmpty()) {
            try {
                stack.pop().close();
            } catch (Exception e) {
                if (first == null) {
                    first = e instanceof RuntimeException r ? r : new RuntimeException(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
