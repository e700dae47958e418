package io.github.panamaverbs.verbs;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_context;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * An open RDMA device: {@code struct ibv_context}. Everything else — protection domains, completion
 * queues, queue pairs — is created from a context, and must be closed before it.
 * Get one from {@link Device#open(String)}.
 */
public final class Context extends Resource {
    private static final MethodHandle CLOSE_DEVICE = Native.withErrno(
            Verbs.ibv_close_device$address(), Verbs.ibv_close_device$descriptor());

    private final Device device;

    Context(MemorySegment context, Device device) {
        super(context, ibv_context.sizeof());
        this.device = device;
    }

    /** The device this context was opened on. */
    public Device device() {
        return device;
    }

    @Override
    void destroy(MemorySegment address) {
        try (Arena call = Arena.ofConfined()) {
            MemorySegment errno = Native.errnoSegment(call);
            int rc = (int) CLOSE_DEVICE.invokeExact(errno, address);
            Native.check("ibv_close_device", rc, errno);
        } catch (Throwable t) {
            throw Native.rethrow(t);
        }
    }

    @Override
    public String toString() {
        return "Context[" + device.name() + "]";
    }
}
