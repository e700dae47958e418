package io.github.panamaverbs.verbs;

import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;

/**
 * The lifetime of a native object of another package of this module (the connection manager's
 * event channels and IDs): the same arena, closing rule and use-after-close checks as every other
 * {@link Resource}, with the destroy verb given by the owner.
 */
final class Handle extends Resource {
    private final Object owner;
    private final Consumer<MemorySegment> destroy;

    Handle(MemorySegment pointer, long size, Object owner, Consumer<MemorySegment> destroy, Resource... uses) {
        super(pointer, size, uses);
        this.owner = owner;
        this.destroy = destroy;
    }

    @Override
    void destroy(MemorySegment address) {
        destroy.accept(address);
    }

    @Override
    public String toString() {
        return owner.toString();
    }
}
