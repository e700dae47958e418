package io.github.panamaverbs.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The closing rule, without a device: lifetimes over plain native memory, whose destroyer records
 * what it freed (or fails when told to). A thread "in a call" is one in a downcall that takes the
 * handle as an argument ({@code poll(handle, 0, ms)}, which sleeps), as a post or poll is.
 */
class LifetimeTest {
    private static final MethodHandle SLEEPING_CALL = Native.LINKER.downcallHandle(
            Native.LINKER.defaultLookup().find("poll").orElseThrow(), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));

    /** What the destroyers freed, in order, by owner name. */
    private final List<String> destroyed = new CopyOnWriteArrayList<>();
    /** The owners whose next destroy fails. */
    private final List<String> failNext = new CopyOnWriteArrayList<>();

    private Lifetime lifetime(String name, Lifetime... uses) {
        MemorySegment object = Arena.global().allocate(16);
        return new Lifetime(new Owner(name), object, 16, address -> {
            assertEquals(object.address(), address.address(), "the destroyer gets the object's address");
            if (failNext.remove(name)) {
                throw new IllegalArgumentException("destroy of " + name + " failed");
            }
            destroyed.add(name);
        }, uses);
    }

    record Owner(String name) {
        @Override
        public String toString() {
            return name;
        }
    }

    record OtherOwner(String name) {
    }

    @Test
    void aParentClosesOnlyAfterWhatUsesIt() {
        Lifetime pd = lifetime("pd");
        Lifetime cq = lifetime("cq");
        Lifetime qp = lifetime("qp", pd, cq, null, pd);
        IllegalStateException e = assertThrows(IllegalStateException.class, pd::close);
        assertEquals("cannot close pd: still in use by [qp]; close those first", e.getMessage());
        assertThrows(IllegalStateException.class, cq::close);
        assertTrue(pd.isOpen() && cq.isOpen() && qp.isOpen());
        assertFalse(pd.isClosed());
        assertEquals(List.of(), destroyed);
        qp.close();
        pd.close();
        cq.close();
        assertEquals(List.of("qp", "pd", "cq"), destroyed);
        assertTrue(pd.isClosed() && !pd.isOpen());
    }

    @Test
    void closingTwiceAndUseAfterCloseThrowNamingTheObject() {
        Lifetime cq = lifetime("cq");
        MemorySegment ptr = cq.ptr();
        cq.close();
        assertEquals("cq is already closed", assertThrows(IllegalStateException.class, cq::close).getMessage());
        assertEquals("cq is closed", assertThrows(IllegalStateException.class, cq::handle).getMessage());
        assertEquals("cq is closed", assertThrows(IllegalStateException.class, () -> cq.read(s -> s.get(JAVA_INT, 0))).getMessage());
        // the data path's form: FFM refuses the stale segment, in Java, and the refusal is named
        IllegalStateException ffm = assertThrows(IllegalStateException.class, () -> ptr.get(JAVA_INT, 0));
        IllegalStateException named = cq.closed(ffm);
        assertEquals("cq is closed", named.getMessage());
        assertSame(ffm, named.getCause());
        IllegalStateException call = assertThrows(IllegalStateException.class,
                () -> cq.check("poll", Native.NO_HINT, c -> (int) SLEEPING_CALL.invokeExact(ptr, 0L, 0)));
        assertEquals("cq is closed", call.getMessage());
        assertThrows(IllegalStateException.class, () -> cq.addUser(lifetime("qp")));
        assertEquals(1, destroyed.size());
    }

    @Test
    void aChildOfAClosedParentIsRefusedAndLinksNothing() {
        Lifetime pd = lifetime("pd");
        Lifetime cq = lifetime("cq");
        cq.close();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> lifetime("qp", pd, cq));
        assertEquals("cq is closed", e.getMessage());
        pd.close(); // the refused child was unlinked from pd too
        assertEquals(List.of("cq", "pd"), destroyed);
    }

    @Test
    void aFailedDestroyLeavesTheObjectOpenUsableAndClosable() {
        Lifetime parent = lifetime("context");
        Lifetime mr = lifetime("mr", parent);
        long address = mr.handle().address();
        failNext.add("mr");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, mr::close);
        assertEquals("destroy of mr failed", e.getMessage());
        assertFalse(mr.isClosed());
        assertTrue(mr.isOpen());
        assertEquals(address, mr.handle().address());
        assertEquals(0, mr.handle().get(JAVA_INT, 0)); // readable again, through the new arena
        assertThrows(IllegalStateException.class, parent::close); // still a user
        mr.close();
        parent.close();
        assertEquals(List.of("mr", "context"), destroyed);
    }

    @Test
    void abandonDestroysAndUnlinksAndKeepsTheDestroysFailure() {
        Lifetime pd = lifetime("pd");
        Lifetime qp = lifetime("qp", pd);
        RuntimeException failure = new RuntimeException("constructor failed");
        failNext.add("qp");
        qp.abandon(failure);
        assertEquals("destroy of qp failed", failure.getSuppressed()[0].getMessage());
        assertTrue(qp.isClosed());
        assertThrows(IllegalStateException.class, qp::handle);
        pd.close();
        assertEquals(List.of("pd"), destroyed);

        Lifetime pd2 = lifetime("pd2");
        lifetime("mr", pd2).abandon(new RuntimeException());
        pd2.close();
        assertEquals(List.of("pd", "mr", "pd2"), destroyed);
    }

    @Test
    void usersAreCountedByTheirOwnersType() {
        Lifetime cq = lifetime("cq");
        Lifetime a = lifetime("qp1", cq);
        lifetime("qp2", cq);
        Lifetime other = new Lifetime(new OtherOwner("window"), Arena.global().allocate(8), 8, x -> { }, cq);
        assertEquals(2, cq.countUsers(Owner.class));
        assertEquals(1, cq.countUsers(OtherOwner.class));
        a.close();
        other.close();
        assertEquals(1, cq.countUsers(Owner.class));
        assertEquals(0, cq.countUsers(OtherOwner.class));
    }

    @Test
    void aCallOfAnotherThreadIsWaitedForAndItsNextCallThrows() throws Exception {
        Lifetime qp = lifetime("qp");
        CountDownLatch inCall = new CountDownLatch(1);
        CountDownLatch closed = new CountDownLatch(1);
        AtomicReference<Throwable> next = new AtomicReference<>();
        Thread poster = Thread.ofPlatform().start(() -> {
            inCall.countDown();
            try {
                qp.check("poll", Native.NO_HINT, c -> (int) SLEEPING_CALL.invokeExact(qp.ptr(), 0L, 300));
            } catch (Throwable t) {
                next.set(new AssertionError("the call in progress must complete", t));
                return;
            }
            try {
                // the next call, once close has returned (a call made at once could win the race with
                // close's retry, which succeeds only in a gap between this thread's calls)
                closed.await();
                qp.check("poll", Native.NO_HINT, c -> (int) SLEEPING_CALL.invokeExact(qp.ptr(), 0L, 0));
                next.set(new AssertionError("the call after close reached C"));
            } catch (IllegalStateException e) {
                next.set(e);
            } catch (InterruptedException e) {
                next.set(e);
            }
        });
        inCall.await();
        Thread.sleep(50); // into the call
        long start = System.nanoTime();
        qp.close();
        long waitedMillis = (System.nanoTime() - start) / 1_000_000;
        closed.countDown();
        poster.join();
        assertTrue(waitedMillis >= 100, "close waited for the call: " + waitedMillis + " ms");
        assertTrue(next.get() instanceof IllegalStateException, String.valueOf(next.get()));
        assertEquals("qp is closed", next.get().getMessage());
        assertEquals(List.of("qp"), destroyed);
    }

    @Test
    void aCallLongerThanTheRetryLeavesTheObjectOpen() throws Exception {
        Lifetime cq = lifetime("cq");
        CountDownLatch inCall = new CountDownLatch(1);
        Thread blocked = Thread.ofPlatform().start(() -> {
            inCall.countDown();
            cq.check("poll", Native.NO_HINT, c -> (int) SLEEPING_CALL.invokeExact(cq.ptr(), 0L, 1000 * Lifetime.CLOSE_RETRY_SECONDS + 700));
        });
        inCall.await();
        Thread.sleep(50);
        IllegalStateException e = assertThrows(IllegalStateException.class, cq::close);
        assertEquals("cannot close cq: another thread has been in calls that use it for 2 s (a blocked post or poll?); "
                + "stop that thread first", e.getMessage());
        assertFalse(cq.isClosed());
        assertTrue(cq.isOpen());
        assertEquals(List.of(), destroyed);
        blocked.join();
        cq.close();
        assertEquals(List.of("cq"), destroyed);
    }

    @Test
    void aCloseRacingAChildsCreationEndsOneWayOrTheOther() throws Exception {
        for (int round = 0; round < 300; round++) {
            int i = round;
            Lifetime parent = lifetime("pd" + i);
            AtomicReference<Object> child = new AtomicReference<>();
            CountDownLatch go = new CountDownLatch(1);
            Thread creator = Thread.ofPlatform().start(() -> {
                try {
                    go.await();
                    child.set(lifetime("mr" + i, parent));
                } catch (IllegalStateException | InterruptedException e) {
                    child.set(e);
                }
            });
            go.countDown();
            boolean closed;
            try {
                parent.close();
                closed = true;
            } catch (IllegalStateException e) {
                assertEquals("cannot close pd" + i + ": still in use by [mr" + i + "]; close those first", e.getMessage());
                closed = false;
            }
            creator.join();
            if (closed) {
                assertTrue(child.get() instanceof IllegalStateException, "a child of a closed parent: " + child.get());
                assertEquals("pd" + i + " is closed", ((IllegalStateException) child.get()).getMessage());
            } else {
                Lifetime mr = (Lifetime) child.get();
                mr.close();
                parent.close();
            }
            assertTrue(parent.isClosed());
        }
    }

    @Test
    void theInvolvedObjectThatClosedIsNamed() {
        Lifetime pd = lifetime("pd");
        Lifetime cq = lifetime("cq");
        cq.close();
        IllegalStateException cause = new IllegalStateException("Already closed");
        assertEquals("cq is closed", Lifetime.closed(cause, pd, null, cq).getMessage());
        assertSame(cause, Lifetime.closed(cause, pd));
        assertSame(cause, pd.closed(cause));
    }
}
