package io.github.panamaverbs.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.PaddingLayout;
import java.lang.foreign.UnionLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Checks the generated Java layouts against the C compiler: for every field of the structs below,
 * a C probe compiled with gcc at test time prints {@code offsetof} and {@code sizeof}, and each must
 * equal the offset and size of the same field in the jextract layout. The probe is written from the
 * Java layouts themselves, so every generated field is checked, nested structs and unions included
 * (a field of an anonymous union is named in C without the union, as C does).
 */
class LayoutConformanceTest {

    /** The structs (and unions) that the API reads or writes. */
    static final List<String> TYPES = List.of(
            "ibv_device", "ibv_device_attr", "ibv_device_attr_ex", "ibv_port_attr", "ibv_gid",
            "ibv_context", "ibv_context_ops", "verbs_context", "ibv_pd", "ibv_mr", "ibv_cq", "ibv_cq_ex",
            "ibv_comp_channel", "ibv_qp", "ibv_qp_ex", "ibv_qp_init_attr", "ibv_qp_init_attr_ex",
            "ibv_qp_attr", "ibv_qp_cap", "ibv_ah_attr", "ibv_global_route", "ibv_send_wr", "ibv_recv_wr",
            "ibv_sge", "ibv_wc", "ibv_srq", "ibv_srq_init_attr", "ibv_srq_attr", "ibv_async_event",
            "ibv_ah", "ibv_query_device_ex_input", "ibv_odp_caps", "ibv_tso_caps", "ibv_rss_caps",
            "rdma_cm_id", "rdma_cm_event", "rdma_conn_param", "rdma_ud_param", "rdma_addrinfo",
            "rdma_event_channel", "rdma_route", "rdma_addr");

    record Field(String type, String path, long offset, long size) {
        String key() {
            return type + "." + path;
        }
    }

    @Test
    void everyFieldMatchesTheCompiler(@TempDir Path dir) throws Exception {
        List<Field> fields = new ArrayList<>();
        for (String type : TYPES) {
            GroupLayout layout = layoutOf(type);
            fields.add(new Field(type, "", 0, layout.byteSize()));
            collect(type, layout, "", 0, fields);
        }
        assertTrue(fields.size() > 200, "only " + fields.size() + " fields compared");

        Map<String, long[]> c = runProbe(dir, fields);
        List<String> mismatches = new ArrayList<>();
        for (Field f : fields) {
            long[] actual = c.get(f.key());
            if (actual == null) {
                mismatches.add(f.key() + ": not printed by the C probe");
            } else if (actual[0] != f.offset() || actual[1] != f.size()) {
                mismatches.add(String.format("%s: Java offset %d size %d, C offset %d size %d",
                        f.path().isEmpty() ? "sizeof " + f.type() : "struct " + f.type() + " field " + f.path(),
                        f.offset(), f.size(), actual[0], actual[1]));
            }
        }
        if (!mismatches.isEmpty()) {
            fail("layouts differ from C:\n  " + String.join("\n  ", mismatches));
        }
        System.out.println("layout conformance: " + fields.size() + " fields of " + TYPES.size()
                + " types match the C compiler");
    }

    @Test
    void aChangedOffsetIsCaught(@TempDir Path dir) throws Exception {
        // The probe must be able to fail: move one field by 8 bytes and expect the comparison to see it.
        GroupLayout layout = layoutOf("ibv_send_wr");
        List<Field> fields = new ArrayList<>();
        collect("ibv_send_wr", layout, "", 0, fields);
        Field f = fields.stream().filter(x -> x.path().equals("wr.rdma.rkey")).findFirst().orElseThrow();
        Map<String, long[]> c = runProbe(dir, List.of(f));
        assertEquals(f.offset(), c.get(f.key())[0]);
        Field moved = new Field(f.type(), f.path(), f.offset() + 8, f.size());
        assertTrue(c.get(moved.key())[0] != moved.offset());
    }

    static GroupLayout layoutOf(String type) throws ReflectiveOperationException {
        Class<?> k = Class.forName("io.github.panamaverbs.bindings." + type);
        return (GroupLayout) k.getMethod("layout").invoke(null);
    }

    /** Walks {@code layout}, adding one {@link Field} per named member, depth first. */
    static void collect(String type, GroupLayout layout, String prefix, long base, List<Field> out) {
        long offset = 0;
        for (MemoryLayout m : layout.memberLayouts()) {
            long at = layout instanceof UnionLayout ? 0 : offset;
            if (!(m instanceof PaddingLayout) && m.name().isPresent()) {
                String name = m.name().get();
                boolean anonymous = name.startsWith("$anon$");
                String path = anonymous ? prefix : prefix + name;
                if (!anonymous) {
                    out.add(new Field(type, path, base + at, m.byteSize()));
                }
                if (m instanceof GroupLayout g) {
                    collect(type, g, anonymous ? prefix : path + ".", base + at, out);
                }
            }
            if (!(layout instanceof UnionLayout)) {
                offset += m.byteSize();
            }
        }
    }

    /** Compiles and runs a C program printing "type.path offset size" for each field. */
    static Map<String, long[]> runProbe(Path dir, List<Field> fields) throws IOException, InterruptedException {
        StringBuilder src = new StringBuilder("""
                #include <stddef.h>
                #include <stdio.h>
                #include <infiniband/verbs.h>
                #include <rdma/rdma_cma.h>
                #define F(T, K, M) printf("%s.%s %zu %zu\\n", #T, #M, offsetof(K T, M), sizeof(((K T *)0)->M));
                #define S(T, K) printf("%s. 0 %zu\\n", #T, sizeof(K T));
                int main(void) {
                """);
        for (Field f : fields) {
            String kind = kindOf(f.type());
            if (f.path().isEmpty()) {
                src.append("S(").append(f.type()).append(", ").append(kind).append(")\n");
            } else {
                src.append("F(").append(f.type()).append(", ").append(kind).append(", ").append(f.path()).append(")\n");
            }
        }
        src.append("return 0;\n}\n");
        Path c = dir.resolve("probe.c");
        Path exe = dir.resolve("probe");
        Files.writeString(c, src);
        String out = run(dir, "gcc", "-std=gnu11", "-o", exe.toString(), c.toString());
        out = run(dir, exe.toString());
        Map<String, long[]> result = new LinkedHashMap<>();
        for (String line : out.split("\n")) {
            String[] w = line.trim().split(" ");
            if (w.length == 3) {
                result.put(w[0], new long[] {Long.parseLong(w[1]), Long.parseLong(w[2])});
            }
        }
        return result;
    }

    private static String kindOf(String type) {
        try {
            return layoutOf(type) instanceof UnionLayout ? "union" : "struct";
        } catch (ReflectiveOperationException e) {
            throw new AssertionError("no generated layout for " + type, e);
        }
    }

    private static String run(Path dir, String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            fail(String.join(" ", command) + " failed:\n" + out);
        }
        return out;
    }
}
