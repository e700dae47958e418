package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_ah;
import io.github.panamaverbs.bindings.ibv_ah_attr;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

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
    final MemorySegment ah;

    AddressHandle(ProtectionDomain pd, AddressVector destination) {
        super(create(pd, destination), ibv_ah.sizeof(), pd);
        this.destination = destination;
        this.ah = handle();
    }

    private static MemorySegment create(ProtectionDomain pd, AddressVector destination) {
        MemorySegment pdHandle = checkOpen(pd);
        try (Arena call = Arena.ofConfined()) {
            MemorySegment attr = call.allocate(ibv_ah_attr.layout());
            destination.writeTo(attr);
            MemorySegment errno = Native.errnoSegment(call);
            MemorySegment ah = (MemorySegment) CREATE.invokeExact(errno, pdHandle, attr);
            if (ah.address() == 0) {
                int e = Native.errno(errno);
                throw new VerbsException("ibv_create_ah", e, e == Errno.EINVAL && destination.grh() == null
                        ? "RoCE needs a global route (AddressVector.global)" : null);
            }
            return ah;
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    /** Where it points. */
    public AddressVector destination() {
        return destination;
    }

    @Override
    void destroy(MemorySegment address) {
        Native.destroy("ibv_destroy_ah", DESTROY, address);
    }

    @Override
    public String toString() {
        return "AddressHandle[" + destination + "]";
    }
}
