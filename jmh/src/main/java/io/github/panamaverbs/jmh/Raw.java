package io.github.panamaverbs.jmh;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.bindings.ibv_context;
import io.github.panamaverbs.bindings.ibv_context_ops;
import io.github.panamaverbs.bindings.ibv_cq;
import io.github.panamaverbs.bindings.ibv_qp;
import io.github.panamaverbs.bindings.ibv_send_wr;
import io.github.panamaverbs.bindings.ibv_sge;
import io.github.panamaverbs.bindings.ibv_wc;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The raw variant: the generated bindings (struct layouts and accessors of {@code ibv_context},
 * {@code ibv_context_ops}, {@code ibv_send_wr}, {@code ibv_sge}, {@code ibv_wc}) and downcalls of
 * the provider's function pointers, with no API in between. Honours {@code -Dpanamaverbs.critical}
 * like the API does.
 */
final class Raw {
    private static final String MODE = System.getProperty("panamaverbs.critical", "poll");
    /** As the API: poll_cq critical unless "none" (or "false"), post_send only with "all" (or "true"). */
    static final MethodHandle POLL_CQ = handle(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS),
            !MODE.equals("none") && !MODE.equals("false"));
    static final MethodHandle POST = handle(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS),
            MODE.equals("all") || MODE.equals("true"));

    final MemorySegment pollFn;
    final MemorySegment postSendFn;
    final MemorySegment[] cq = new MemorySegment[2];
    final MemorySegment[] qp = new MemorySegment[2];
    final MemorySegment wc;
    final MemorySegment badWr;

    Raw(C.Pair pair, Arena arena, int wcEntries) {
        MemorySegment ctx = MemorySegment.ofAddress(pair.ctx).reinterpret(ibv_context.sizeof());
        MemorySegment ops = ibv_context.ops(ctx);
        pollFn = ibv_context_ops.poll_cq(ops);
        postSendFn = ibv_context_ops.post_send(ops);
        for (int i = 0; i < 2; i++) {
            cq[i] = MemorySegment.ofAddress(pair.cq[i]).reinterpret(ibv_cq.sizeof());
            qp[i] = MemorySegment.ofAddress(pair.qp[i]).reinterpret(ibv_qp.sizeof());
        }
        wc = ibv_wc.allocateArray(wcEntries, arena);
        badWr = arena.allocate(ADDRESS);
    }

    /** A signaled RDMA write of {@code size} bytes from QP a's buffer into b's, built once. */
    static MemorySegment write(C.Pair pair, Arena arena, int size, long remoteOffset, MemorySegment next,
                               boolean signaled) {
        MemorySegment sge = ibv_sge.allocate(arena);
        ibv_sge.addr(sge, pair.buf[0]);
        ibv_sge.length(sge, size);
        ibv_sge.lkey(sge, pair.lkey[0]);
        MemorySegment wr = ibv_send_wr.allocate(arena);
        ibv_send_wr.wr_id(wr, 1);
        ibv_send_wr.next(wr, next);
        ibv_send_wr.sg_list(wr, sge);
        ibv_send_wr.num_sge(wr, 1);
        ibv_send_wr.opcode(wr, Verbs.IBV_WR_RDMA_WRITE());
        ibv_send_wr.send_flags(wr, signaled ? Verbs.IBV_SEND_SIGNALED() : 0);
        MemorySegment rdma = ibv_send_wr.wr.rdma(ibv_send_wr.wr(wr));
        ibv_send_wr.wr.rdma.remote_addr(rdma, pair.buf[1] + remoteOffset);
        ibv_send_wr.wr.rdma.rkey(rdma, pair.rkey[1]);
        return wr;
    }

    private static MethodHandle handle(FunctionDescriptor d, boolean critical) {
        return critical ? C.LINKER.downcallHandle(d, Linker.Option.critical(false)) : C.LINKER.downcallHandle(d);
    }

    int poll(int side, int entries) {
        try {
            return (int) POLL_CQ.invokeExact(pollFn, cq[side], entries, wc);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    void postSend(int side, MemorySegment wr) {
        int rc;
        try {
            rc = (int) POST.invokeExact(postSendFn, qp[side], wr, badWr);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        if (rc != 0) {
            throw new IllegalStateException("post_send failed: " + rc);
        }
    }

    /** Polls until one completion arrives (at most one is read); fails on an error status. */
    void awaitOne(int side) {
        int n;
        while ((n = poll(side, 1)) == 0) {
            Thread.onSpinWait();
        }
        if (n < 0 || ibv_wc.status(wc) != Verbs.IBV_WC_SUCCESS()) {
            throw new IllegalStateException("poll_cq " + n + ", status " + ibv_wc.status(wc));
        }
    }
}
