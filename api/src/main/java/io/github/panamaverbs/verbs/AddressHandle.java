package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_ah;
import io.github.panamaverbs.bindings.ibv_ah_attr;
import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Native;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Objects;

/**
 * An address handle ({@code struct ibv_ah}): the destination of UD sends, named in
 * {@link SendRequest#datagram(AddressHandle, int, int)}.
 */
public final class AddressHandle extends Resource {
    private static final MethodHandle CREATE = Native.withErrno(
            Verbs.ibv_create_ah$address(), Verbs.ibv_create_ah$descriptor());
    private static final MethodHandle DESTROY = Native.withErrno(
            Verbs.ibv_destroy_ah$address(), Verbs.ibv_destroy_ah$descriptor());

    private final AddressVector destination;

    AddressHandle(ProtectionDomain pd, AddressVector destination) {
        super(create(pd, destination), ibv_ah.sizeof(), pd);
        this.destination = destination;
    }

    private static MemorySegment create(ProtectionDomain pd, AddressVector destination) {
        Objects.requireNonNull(destination, "destination");
        MemorySegment pdHandle = checkOpen(pd);
        try {
            return Native.call(c -> {
                MemorySegment attr = c.allocate(ibv_ah_attr.layout());
                destination.writeTo(attr);
                return Native.create("ibv_create_ah", e -> e == Errno.EINVAL && destination.grh() == null
                        ? "RoCE needs a global route (AddressVector.global)" : null,
                        x -> (MemorySegment) CREATE.invokeExact(x.errno(), pdHandle, attr));
            });
        } catch (IllegalStateException e) {
            throw closed(e, pd);
        }
    }

    /** {@return where it points: the address vector it was created from} */
    public AddressVector destination() {
        return destination;
    }

    @Override
    void destroy(MemorySegment address) {
        Native.check("ibv_destroy_ah", Native.NO_HINT, c -> (int) DESTROY.invokeExact(c.errno(), address));
    }

    @Override
    public String toString() {
        return "AddressHandle[" + destination + "]";
    }
}
