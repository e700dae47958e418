package io.github.panamaverbs.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Native;
import java.lang.foreign.Arena;
import java.util.EnumSet;
import org.junit.jupiter.api.Test;

/** Argument checks and error text that need no device. */
class ArgumentsTest {

    @Test
    void verbsExceptionNamesVerbErrnoAndHint() {
        VerbsException e = Native.fail("ibv_reg_mr", Errno.ENOMEM, Native.MEMLOCK);
        assertEquals("ibv_reg_mr", e.verb());
        assertEquals(12, e.errno());
        assertEquals("ENOMEM", e.errnoName());
        assertEquals("Cannot allocate memory", e.errnoText());
        assertTrue(e.getMessage().startsWith("ibv_reg_mr failed: ENOMEM (12, Cannot allocate memory)"), e.getMessage());
        assertTrue(e.hint().contains("ulimit -l"), e.hint());
        assertTrue(Native.fail("ibv_open_device", Errno.ENOSYS, Device::openHint).getMessage().contains("no RDMA support"));
        assertEquals("errno 4242", Errno.name(4242));
        assertEquals("EOPNOTSUPP", Errno.name(95));
    }

    @Test
    void requestsCheckTheirArguments() {
        assertThrows(IllegalArgumentException.class, () -> new SendRequest(0));
        assertThrows(IllegalArgumentException.class, () -> new ReceiveRequest(-1));
        assertThrows(IllegalArgumentException.class, () -> new WorkCompletions(0));
        SendRequest r = new SendRequest(1);
        assertThrows(IllegalArgumentException.class, () -> r.atomic(0x1003, 1, 0, 0), "unaligned atomic");
        assertThrows(IllegalArgumentException.class, () -> r.next(r), "a cycle of one");
        assertThrows(IllegalArgumentException.class, () -> r.inlineData(java.lang.foreign.MemorySegment.ofArray(new byte[4])));
        try (Arena arena = Arena.ofConfined()) {
            r.inlineData(arena.allocate(16));
            assertEquals(EnumSet.of(SendFlag.INLINE), r.flags());
            assertEquals(1, r.sgeCount());
        }
    }

    @Test
    void sendFlagsAreSetInPlace() {
        SendRequest r = new SendRequest(2).id(77).opcode(SendOpcode.RDMA_WRITE).signaled(true).solicited(true);
        assertEquals(77, r.id());
        assertEquals(SendOpcode.RDMA_WRITE, r.opcode());
        assertEquals(EnumSet.of(SendFlag.SIGNALED, SendFlag.SOLICITED), r.flags());
        r.signaled(false);
        assertEquals(EnumSet.of(SendFlag.SOLICITED), r.flags());
    }

    @Test
    void emptyBatchHasNoEntries() {
        WorkCompletions wc = new WorkCompletions(4);
        assertEquals(0, wc.count());
        assertThrows(IndexOutOfBoundsException.class, () -> wc.wrId(0));
    }

    @Test
    void enumsMapToTheirCValues() {
        assertEquals(1024, Mtu.MTU_1024.bytes());
        assertEquals(Mtu.MTU_4096, Mtu.ofBytes(4096));
        assertThrows(IllegalArgumentException.class, () -> Mtu.ofBytes(1500));
        assertEquals(1 | 2 | 4 | 8, AccessFlag.mask(EnumSet.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_WRITE,
                AccessFlag.REMOTE_READ, AccessFlag.REMOTE_ATOMIC)));
        assertEquals(WcStatus.RETRY_EXC_ERR, WcStatus.of(12));
        assertEquals("transport retry counter exceeded", WcStatus.RETRY_EXC_ERR.description());
        assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, WcOpcode.of(129));
        assertEquals(QpState.RTS, QpState.of(3));
    }

    @Test
    void attributesSetTheirMaskBits() {
        QpAttributes a = new QpAttributes().state(QpState.INIT).port(1).pkeyIndex(0);
        assertEquals(1 | 16 | 32, a.mask(), "IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT");
        assertEquals(QpState.INIT, a.state());
        assertEquals(1, a.port());
    }
}
