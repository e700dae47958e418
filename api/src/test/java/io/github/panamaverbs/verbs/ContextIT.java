package io.github.panamaverbs.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Device and port attributes and the GID table, each checked against what {@code ibv_devinfo -v} prints. */
@RequiresRdma
class ContextIT {

    /** {@code ibv_devinfo -v -d NAME}, as "field" → "value" (the first occurrence of each field). */
    static Map<String, String> devinfo(String device) throws Exception {
        Process p = new ProcessBuilder("ibv_devinfo", "-v", "-d", device).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        Map<String, String> fields = new HashMap<>();
        Matcher m = Pattern.compile("^\\s*([A-Za-z_0-9]+):\\s*(.*?)\\s*$", Pattern.MULTILINE).matcher(out);
        while (m.find()) {
            fields.putIfAbsent(m.group(1), m.group(2));
        }
        Matcher gid = Pattern.compile("GID\\[\\s*(\\d+)\\]:\\s*([0-9a-f:.]+)(?:, (.+?))?\\s*$", Pattern.MULTILINE).matcher(out);
        while (gid.find()) {
            fields.put("GID" + gid.group(1), gid.group(2) + (gid.group(3) == null ? "" : " " + gid.group(3)));
        }
        return fields;
    }

    private static long number(String text) {
        String t = text.split("\\s")[0];
        return t.startsWith("0x") ? Long.parseUnsignedLong(t.substring(2), 16) : Long.parseLong(t);
    }

    @Test
    void deviceAttributesMatchDevinfo(TestDevice dev) throws Exception {
        Map<String, String> c = devinfo(dev.name());
        try (Context ctx = dev.open()) {
            DeviceAttributes a = ctx.queryDevice();
            assertEquals(c.get("fw_ver"), a.firmwareVersion());
            assertEquals(c.get("node_guid"), Device.formatGuid(a.nodeGuid()));
            assertEquals(c.get("sys_image_guid"), Device.formatGuid(a.sysImageGuid()));
            assertEquals(number(c.get("vendor_id")), a.vendorId());
            assertEquals(number(c.get("vendor_part_id")), a.vendorPartId());
            assertEquals(number(c.get("phys_port_cnt")), a.physPortCnt());
            assertEquals(number(c.get("max_mr_size")), a.maxMrSize());
            assertEquals(number(c.get("page_size_cap")), a.pageSizeCap());
            assertEquals(number(c.get("max_qp")), a.maxQp());
            assertEquals(number(c.get("max_qp_wr")), a.maxQpWr());
            assertEquals(number(c.get("max_sge")), a.maxSge());
            assertEquals(number(c.get("max_cq")), a.maxCq());
            assertEquals(number(c.get("max_cqe")), a.maxCqe());
            assertEquals(number(c.get("max_mr")), a.maxMr());
            assertEquals(number(c.get("max_pd")), a.maxPd());
            assertEquals(number(c.get("max_qp_rd_atom")), a.maxQpRdAtom());
            assertEquals(number(c.get("max_srq")), a.maxSrq());
            assertEquals(number(c.get("max_srq_wr")), a.maxSrqWr());
            assertEquals(number(c.get("max_pkeys")), a.maxPkeys());
            assertEquals(number(c.get("local_ca_ack_delay")), a.localCaAckDelay());
            assertEquals(number(c.get("device_cap_flags")), Integer.toUnsignedLong(a.deviceCapFlags()));
        }
    }

    @Test
    void portAttributesMatchDevinfo(TestDevice dev) throws Exception {
        Map<String, String> c = devinfo(dev.name());
        try (Context ctx = dev.open()) {
            PortAttributes p = ctx.queryPort(dev.port());
            assertEquals(PortState.ACTIVE, p.state());
            assertTrue(c.get("state").startsWith("PORT_ACTIVE"), c.get("state"));
            assertEquals(number(c.get("max_mtu")), p.maxMtu().bytes());
            assertEquals(number(c.get("active_mtu")), p.activeMtu().bytes());
            assertEquals(number(c.get("sm_lid")), p.smLid());
            assertEquals(number(c.get("port_lid")), p.lid());
            assertEquals(number(c.get("port_lmc")), p.lmc());
            assertEquals(number(c.get("max_msg_sz")), Integer.toUnsignedLong(p.maxMsgSz()));
            assertEquals(number(c.get("port_cap_flags")), Integer.toUnsignedLong(p.portCapFlags()));
            assertEquals(number(c.get("gid_tbl_len")), p.gidTblLen());
            assertEquals(number(c.get("pkey_tbl_len")), p.pkeyTblLen());
            assertEquals(c.get("link_layer"), switch (p.linkLayer()) {
                case ETHERNET -> "Ethernet";
                case INFINIBAND -> "InfiniBand";
                default -> "Unknown";
            });
        }
    }

    @Test
    void gidTableMatchesDevinfo(TestDevice dev) throws Exception {
        Map<String, String> c = devinfo(dev.name());
        try (Context ctx = dev.open()) {
            List<GidEntry> table = ctx.gidTable();
            assertFalse(table.isEmpty());
            for (GidEntry e : table) {
                String printed = c.get("GID" + e.index());
                assertTrue(printed != null, "GID " + e.index() + " in ibv_devinfo -v");
                assertTrue(printed.startsWith(e.gid().toString()), printed + " vs " + e.gid());
                String type = switch (e.type()) {
                    case ROCE_V2 -> "RoCE v2";
                    case ROCE_V1 -> "RoCE v1";
                    case IB -> "";
                };
                assertTrue(printed.endsWith(type), printed + " is " + type);
                assertEquals(e.gid(), ctx.queryGid(e.port(), e.index()));
            }
            GidEntry used = table.stream().filter(e -> e.index() == dev.gidIndex()).findFirst().orElseThrow();
            if (used.type() == GidType.ROCE_V2 && dev.name().startsWith("rxe")) {
                assertTrue(used.gid().ipv4().isPresent(), "the harness's GID index is IPv4-mapped: " + used.gid());
                String ip = System.getenv("RDMA_IP");
                if (ip != null) {
                    assertEquals(ip, used.gid().ipv4().get().getHostAddress());
                }
            }
        }
    }

    @Test
    void protectionDomainRegionAndCompletionQueue(TestDevice dev) throws Exception {
        try (Context ctx = dev.open();
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             Arena arena = Arena.ofShared()) {
            MemorySegment buffer = arena.allocate(3 << 20, 4096); // several pages, not a power of two
            try (MemoryRegion mr = pd.register(arena, buffer)) {
                assertEquals(buffer.address(), mr.address());
                assertEquals(buffer.byteSize(), mr.length());
                assertEquals(java.util.Set.of(AccessFlag.LOCAL_WRITE), mr.access(), "least privilege by default");
                assertTrue(mr.lkey() != 0);
            }
            try (MemoryRegion mr = pd.register(arena, buffer, AccessFlag.REMOTE_READ, AccessFlag.REMOTE_WRITE)) {
                assertTrue(mr.access().contains(AccessFlag.REMOTE_WRITE));
                MemorySegment other = arena.allocate(8192, 4096);
                try {
                    mr.reregister(arena, other, java.util.EnumSet.of(AccessFlag.LOCAL_WRITE));
                    assertEquals(other.address(), mr.address());
                    assertEquals(8192, mr.length());
                } catch (VerbsException e) {
                    // rxe has no rereg_mr: the error must say so, and the region keeps its old memory.
                    assertEquals("ibv_rereg_mr", e.verb());
                    assertEquals("EOPNOTSUPP", e.errnoName());
                    assertEquals(buffer.address(), mr.address());
                }
            }
            try (CompletionQueue cq = ctx.createCompletionQueue(100)) {
                assertTrue(cq.capacity() >= 100);
                assertEquals(0, cq.poll(new WorkCompletions(8)), "a new CQ is empty");
                cq.resize(500);
                assertTrue(cq.capacity() >= 500, "resized to " + cq.capacity());
            }
        }
    }
}
