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
import java.util.concurrent.atomic.AtomicReference;
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

    /** A stand-in whose poll is libc's sched_yield and whose post records the request's id, its upcall in {@code arena}. */
    private static StandInProvider provider(Arena arena) throws Exception {
        MemorySegment poll = Native.LINKER.defaultLookup().find("sched_yield").orElseThrow();
        MemorySegment post = stub("post", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS), arena);
        return new StandInProvider(poll, post, 256, 256);
    }

    @Test
    void theTypedDataPathReachesTheStandInAndStopsAtClose() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            StandInProvider p = provider(arena);
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

    @Test
    void aConfinedViewIsTheOwnersOnlyAndHoldsItsQueueOpen() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            StandInProvider p = provider(arena);
            WorkCompletions batch = new WorkCompletions(16);
            SendRequest request = new SendRequest(1).opcode(SendOpcode.SEND).id(78);
            CompletionQueue.Confined poller = p.completionQueue().confined();
            QueuePair.Confined sender = p.queuePair().confined();
            assertEquals(0, poller.poll(batch));
            sender.postSend(request);
            assertEquals(78, LAST_WR_ID.get());
            ReceiveRequest receive = new ReceiveRequest(1).id(79);
            sender.postReceive(receive);
            assertEquals(79, LAST_WR_ID.get());

            // a caller's arena goes through the checked form: a closed one is refused, by name
            Arena callers = Arena.ofShared();
            WorkCompletions own = new WorkCompletions(4, callers);
            assertEquals(0, poller.poll(own));
            callers.close();
            assertTrue(assertThrows(IllegalStateException.class, () -> poller.poll(own)).getMessage().contains("has been freed"));

            // another thread may neither use nor close the views
            AtomicReference<Throwable> other = new AtomicReference<>();
            Thread t = Thread.ofPlatform().name("intruder").start(() -> {
                other.set(catching(() -> poller.poll(batch)));
                other.compareAndSet(null, new AssertionError("another thread polled"));
            });
            t.join();
            assertTrue(other.get() instanceof IllegalStateException, String.valueOf(other.get()));
            assertTrue(other.get().getMessage().contains("is confined to thread #" + Thread.currentThread().threadId()), other.get().getMessage());
            assertTrue(other.get().getMessage().contains("\"intruder\""), other.get().getMessage());
            Thread closer = Thread.ofPlatform().start(() -> other.set(catching(sender::close)));
            closer.join();
            assertTrue(other.get() instanceof IllegalStateException, String.valueOf(other.get()));

            // the queues cannot close under their open views, from any thread
            IllegalStateException held = assertThrows(IllegalStateException.class, () -> p.queuePair().close());
            assertTrue(held.getMessage().contains("still in use by [QueuePair.Confined[standin0, qpn 0x11, thread #"), held.getMessage());
            poller.close();
            sender.close();
            assertTrue(poller.isClosed() && sender.isClosed());
            assertEquals(poller + " is already closed", assertThrows(IllegalStateException.class, poller::close).getMessage());
            assertEquals(poller + " is closed", assertThrows(IllegalStateException.class, () -> poller.poll(batch)).getMessage());
            assertEquals(sender + " is closed", assertThrows(IllegalStateException.class, () -> sender.postSend(request)).getMessage());
            p.close();
            assertThrows(IllegalStateException.class, () -> p.completionQueue().confined());
        }
    }

    @Test
    void theViewsOfAThreadThatEndedCloseWithTheirQueues() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            StandInProvider p = provider(arena);
            AtomicReference<CompletionQueue.Confined> poller = new AtomicReference<>();
            AtomicReference<QueuePair.Confined> sender = new AtomicReference<>();
            Thread worker = Thread.ofVirtual().start(() -> {
                poller.set(p.completionQueue().confined());
                sender.set(p.queuePair().confined());
                sender.get().postSend(new SendRequest(1).opcode(SendOpcode.SEND).id(80));
            }); // ends without closing its views
            worker.join();
            assertEquals(80, LAST_WR_ID.get());
            assertTrue(!poller.get().isClosed() && !sender.get().isClosed());
            // another thread may close a view whose owner has ended ...
            sender.get().close();
            assertTrue(sender.get().isClosed());
            assertEquals(sender.get() + " is already closed", assertThrows(IllegalStateException.class, sender.get()::close).getMessage());
            // ... and its queue's close closes it: nothing can be in a call through it
            p.close();
            assertTrue(poller.get().isClosed() && p.completionQueue().isClosed());
            assertEquals(poller.get() + " is already closed", assertThrows(IllegalStateException.class, poller.get()::close).getMessage());
            IllegalStateException use = assertThrows(IllegalStateException.class, () -> poller.get().poll(new WorkCompletions(1)));
            assertTrue(use.getMessage().contains("is confined to virtual thread #" + worker.threadId()), use.getMessage());
        }
    }

    private static Throwable catching(Runnable r) {
        try {
            r.run();
            return null;
        } catch (Throwable e) {
            return e;
        }
    }
}
