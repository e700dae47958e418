package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.bindings.ibv_send_wr;
import io.github.panamaverbs.internal.Native;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The typed data path without a device, on {@link StandInProvider}: a poll reaches the provider's
 * poll_cq (libc's {@code sched_yield}, which returns 0 and takes no arguments: the poll is a critical
 * downcall, which may not call back into Java), a post its post_send (a Java upcall that records the
 * request's id), and after close both throw.
 */
class StandInProviderTest {
    private static final AtomicLong LAST_WR_ID = new AtomicLong();

    private static int post(MemorySegment qp, MemorySegment wr, MemorySegment bad) {
        LAST_WR_ID.set(ibv_send_wr.wr_id(wr.reinterpret(ibv_send_wr.sizeof())));
        return 0;
    }

    private static MemorySegment stub(String name, FunctionDescriptor fd, Arena arena) throws Exception {
        var type = fd.toMethodType();
        return Native.LINKER.upcallStub(MethodHandles.lookup().findStatic(StandInProviderTest.class, name, type), fd, arena);
    }

    @Test
    void theTypedDataPathReachesTheStandInAndStopsAtClose() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment poll = Native.LINKER.defaultLookup().find("sched_yield").orElseThrow();
            MemorySegment post = stub("post", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS), arena);
            StandInProvider p = new StandInProvider(poll, post, 256, 256);
            WorkCompletions batch = new WorkCompletions(16);
            SendRequest request = new SendRequest(1).opcode(SendOpcode.SEND).id(77);
            assertEquals(0, p.completionQueue().poll(batch));
            p.queuePair().postSend(request);
            assertEquals(77, LAST_WR_ID.get());
            IllegalStateException busy = assertThrows(IllegalStateException.class, () -> p.completionQueue().close());
            assertTrue(busy.getMessage().contains("still in use by [QueuePair"), busy.getMessage());
            p.close();
            assertEquals(p.queuePair() + " is closed",
                    assertThrows(IllegalStateException.class, () -> p.queuePair().postSend(request)).getMessage());
            assertEquals(p.completionQueue() + " is closed",
                    assertThrows(IllegalStateException.class, () -> p.completionQueue().poll(batch)).getMessage());
        }
    }
}
