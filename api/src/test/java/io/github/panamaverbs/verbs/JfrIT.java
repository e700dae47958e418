package io.github.panamaverbs.verbs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.cm.CmReadmeExampleTest;
import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;

/**
 * The Flight Recorder events on the device: a recording made around a connection, a transfer, a
 * failed verb, an async event and a connection-manager exchange, read back with the consumer API
 * and each event's fields asserted; and nothing recorded per work request or poll.
 */
@RequiresRdma
class JfrIT {
    private static final String P = "io.github.panamaverbs.";

    private static List<RecordedEvent> read(Recording r) throws Exception {
        Path file = Files.createTempFile("jfrit", ".jfr");
        try {
            r.dump(file);
            return RecordingFile.readAllEvents(file).stream()
                    .filter(e -> e.getEventType().getName().startsWith(P))
                    .sorted(java.util.Comparator.comparing(RecordedEvent::getStartTime)).toList();
        } finally {
            Files.delete(file);
        }
    }

    private static List<RecordedEvent> of(List<RecordedEvent> all, String name) {
        return all.stream().filter(e -> e.getEventType().getName().equals(P + name)).toList();
    }

    @Test
    void theControlPathIsRecordedAndTheDataPathIsNot(TestDevice dev) throws Exception {
        int writes = 200;
        String error;
        int qpA;
        String qpName;
        int lkeyA;
        dev.open().close(); // the library registers its periodic event when it first opens a device
        try (Recording r = new Recording()) {
            r.enable(P + "QueuePairState");
            r.enable(P + "MemoryRegistration");
            r.enable(P + "AsyncEvent");
            r.enable(P + "VerbError");
            r.enable(P + "PortCounter");
            r.start();
            try (Pair p = new Pair(dev, QpType.RC)) {
                qpA = p.a.qpNumber();
                qpName = p.a.toString();
                lkeyA = p.mrA.lkey();
                for (int i = 0; i < writes; i++) {
                    p.mrA.segment().set(JAVA_BYTE, i, (byte) (i + 1));
                    p.a.postSend(new SendRequest(1).opcode(SendOpcode.RDMA_WRITE).signaled(true).sge(p.mrA, 0, writes)
                            .rdma(p.mrB.address(), p.mrB.rkey()));
                    assertEquals(WcStatus.SUCCESS, p.await(p.cqA, 1).status(0));
                }
                assertEquals(-1, p.mrA.segment().asSlice(0, writes).mismatch(p.mrB.segment().asSlice(0, writes)));
                VerbsException e = assertThrows(VerbsException.class,
                        () -> p.a.modify(new QpAttributes().state(QpState.INIT)));   // RTS -> INIT: invalid
                error = e.getMessage();
                p.a.modify(new QpAttributes().state(QpState.SQD).sqDrainedNotify(true));
                Optional<AsyncEvent> ev = p.ctx.nextAsyncEvent(Duration.ofSeconds(10));
                assertEquals(AsyncEventType.SQ_DRAINED, ev.orElseThrow().type());
            }
            r.stop();
            List<RecordedEvent> all = read(r);

            List<String> moves = of(all, "QueuePairState").stream().filter(e -> e.getInt("qpNumber") == qpA)
                    .map(e -> e.getString("from") + ">" + e.getString("to")).toList();
            assertEquals(List.of("RESET>INIT", "INIT>RTR", "RTR>RTS", "RTS>SQD"), moves,
                    "the transitions of QP " + qpA + ", the failed one not among them");
            RecordedEvent move = of(all, "QueuePairState").get(0);
            assertEquals(dev.name(), move.getString("device"));
            assertEquals("RC", move.getString("type"));

            RecordedEvent reg = of(all, "MemoryRegistration").stream().filter(e -> e.getInt("lkey") == lkeyA)
                    .findFirst().orElseThrow(() -> new AssertionError("no registration event for lkey " + lkeyA));
            assertEquals("ibv_reg_mr", reg.getString("verb"));
            assertEquals(Pair.BUFFER, reg.getLong("bytes"));
            assertEquals(dev.name(), reg.getString("device"));
            assertTrue(reg.getString("access").contains("REMOTE_WRITE"), reg.getString("access"));
            assertTrue(reg.getDuration().toNanos() > 0, "pinning takes time");

            List<RecordedEvent> errors = of(all, "VerbError");
            assertEquals(1, errors.size(), "one failed verb: " + errors);
            assertEquals("ibv_modify_qp", errors.get(0).getString("verb"));
            assertEquals(22, errors.get(0).getInt("errno"));
            assertEquals("EINVAL", errors.get(0).getString("errnoName"));
            assertEquals(error, errors.get(0).getString("message"));

            List<RecordedEvent> async = of(all, "AsyncEvent");
            assertEquals(1, async.size(), async.toString());
            assertEquals("SQ_DRAINED", async.get(0).getString("type"));
            assertEquals(qpName, async.get(0).getString("element"));

            // Nothing per post or poll: the 200 writes left no event but what is asserted above.
            assertEquals(all.size(), of(all, "QueuePairState").size() + of(all, "MemoryRegistration").size()
                    + errors.size() + async.size() + of(all, "PortCounter").size(),
                    all.stream().map(e -> e.getEventType().getName()).collect(Collectors.toSet()).toString());

            // The port's counters, at the recording's start and end: the device counted the writes.
            if (dev.name().startsWith("rxe")) {
                List<Long> sent = of(all, "PortCounter").stream()
                        .filter(e -> e.getString("device").equals(dev.name()) && e.getString("counter").equals("sent_pkts"))
                        .map(e -> e.getLong("value")).toList();
                assertTrue(sent.size() >= 2, "sent_pkts at the start and the end: " + sent);
                assertTrue(sent.get(sent.size() - 1) - sent.get(0) >= writes,
                        "rxe sent at least one packet per write: " + sent);
                assertEquals("hw_counters", of(all, "PortCounter").stream()
                        .filter(e -> e.getString("counter").equals("sent_pkts")).findFirst().orElseThrow().getString("group"));
            }
        }
    }

    @Test
    void connectionManagerEventsAreRecorded(TestDevice dev) throws Exception {
        String ip = System.getenv("RDMA_RXE_IP");
        assertTrue(ip != null && !ip.isEmpty(), "RDMA_RXE_IP is unset (run under scripts/with-rdma)");
        try (Recording r = new Recording()) {
            r.enable(P + "CmEvent");
            r.start();
            assertEquals("SUCCESS: hello over rdma_cm",
                    CmReadmeExampleTest.exchange(new InetSocketAddress(InetAddress.getByName(ip), 20_871)));
            r.stop();
            List<RecordedEvent> cm = of(read(r), "CmEvent");
            List<String> types = cm.stream().map(e -> e.getString("type")).toList();
            for (String t : List.of("ADDR_RESOLVED", "ROUTE_RESOLVED", "CONNECT_REQUEST", "ESTABLISHED")) {
                assertTrue(types.contains(t), t + " in " + types);
            }
            RecordedEvent request = cm.get(types.indexOf("CONNECT_REQUEST"));
            assertEquals(0, request.getInt("status"));
            assertEquals("TCP", request.getString("portSpace"));
            assertTrue(request.getInt("remoteQpNumber") > 0, "the client's QP number");
        }
    }

    @Test
    void theReadmeExampleRecordsARegistrationAndAFailedVerb(TestDevice dev) throws Exception {
        List<String> lines = JfrExampleTest.example(dev.name());
        assertEquals(2, lines.size(), lines.toString());
        assertTrue(lines.get(0).startsWith("ibv_reg_mr of 1048576 bytes [LOCAL_WRITE, REMOTE_WRITE] in PT"), lines.get(0));
        assertEquals("ibv_create_cq failed: EINVAL", lines.get(1));
    }
}
