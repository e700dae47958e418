package io.github.panamaverbs.samples.ibverbs;

import static io.github.panamaverbs.samples.SampleRuns.c;
import static io.github.panamaverbs.samples.SampleRuns.java;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.samples.SampleRuns.Run;
import io.github.panamaverbs.verbs.testing.RequiresRdma;
import io.github.panamaverbs.verbs.testing.TestDevice;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code devinfo} and {@code devices} on a real device (scripts/with-rdma -- scripts/run-it,
 * IT_MODULES=samples): devinfo line for line against rdma-core's ibv_devinfo, with and without -v.
 */
@RequiresRdma
class DevInfoIT {
    private static String device;

    /** The device by the api's rule (RDMA_DEVICE or the first with an ACTIVE port; see DeviceDetection). */
    @BeforeAll
    static void device(TestDevice d) {
        device = d.name();
    }

    @Test
    void devinfoMatchesIbvDevinfo() throws Exception {
        for (String flags : List.of("", "-v")) {
            List<String> args = new ArrayList<>(List.of("ibv_devinfo", "-d", device));
            Run c = c(flags.isEmpty() ? args.toArray(String[]::new) : concat(args, flags));
            Run j = java(flags.isEmpty() ? new String[] {"devinfo", "-d", device} : new String[] {"devinfo", "-d", device, flags});
            assertEquals(0, c.status(), c.err());
            assertEquals(0, j.status(), j.err());
            List<String> cl = sortGids(c.out().lines().toList());
            List<String> jl = sortGids(j.out().lines().toList());
            for (int i = 0; i < Math.max(cl.size(), jl.size()); i++) {
                String a = i < cl.size() ? cl.get(i) : "<none>";
                String b = i < jl.size() ? jl.get(i) : "<none>";
                assertEquals(a, b, "line " + (i + 1) + " of devinfo " + flags + " differs from ibv_devinfo");
            }
        }
        Run list = java("devinfo", "-l");
        assertTrue(list.out().contains("\t" + device + "\n"), list.out());
        Run devices = java("devices");
        assertTrue(devices.out().contains(device), devices.out());
    }

    private static String[] concat(List<String> a, String b) {
        List<String> l = new ArrayList<>(a);
        l.add(b);
        return l.toArray(String[]::new);
    }

    /** GID lines may come in another order; everything else must be line for line the same. */
    private static List<String> sortGids(List<String> lines) {
        List<String> result = new ArrayList<>(lines);
        List<Integer> at = new ArrayList<>();
        List<String> gids = new ArrayList<>();
        for (int i = 0; i < result.size(); i++) {
            if (result.get(i).contains("GID[")) {
                at.add(i);
                gids.add(result.get(i));
            }
        }
        gids.sort(null);
        for (int i = 0; i < at.size(); i++) {
            result.set(at.get(i), gids.get(i));
        }
        return result;
    }
}
