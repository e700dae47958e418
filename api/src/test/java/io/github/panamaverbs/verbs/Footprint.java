package io.github.panamaverbs.verbs;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * What this process holds, for leak checks: the device's verbs objects as iproute2's
 * {@code rdma resource show} counts them (pd, cq, qp, mr, ctx, srq, cm_id; device-wide, so compare
 * two readings of one process), the open file descriptors ({@code /proc/self/fd}) and the resident
 * set size ({@code VmRSS} of {@code /proc/self/status}).
 *
 * @param rdma   the counts of {@code rdma resource show} for the device, by object type
 * @param fds    the number of open file descriptors
 * @param rssKiB the resident set size in KiB
 */
record Footprint(Map<String, Integer> rdma, int fds, long rssKiB) {

    /** Reads all three for {@code device} (e.g. {@code rxe0}). */
    static Footprint of(String device) {
        return new Footprint(rdma(device), openFds(), currentRssKiB());
    }

    /**
     * The per-type counts of {@code rdma resource show} for {@code device}: its line reads
     * {@code 0: rxe0: pd 1 cq 2 qp 1 cm_id 0 mr 2 ctx 1 srq 0}.
     */
    static Map<String, Integer> rdma(String device) {
        String out;
        try {
            Process p = new ProcessBuilder("rdma", "resource", "show").redirectErrorStream(true).start();
            out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException("rdma resource show failed: " + out);
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot run 'rdma resource show' (iproute2's rdma tool)", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        for (String line : out.split("\n")) {
            String[] t = line.trim().split("\\s+");
            if (t.length >= 2 && t[1].equals(device + ":")) {
                Map<String, Integer> counts = new LinkedHashMap<>();
                for (int i = 2; i + 1 < t.length; i += 2) {
                    counts.put(t[i], Integer.parseInt(t[i + 1]));
                }
                return counts;
            }
        }
        throw new IllegalStateException("no line for " + device + " in 'rdma resource show': " + out);
    }

    /** The number of entries of {@code /proc/self/fd} (the directory stream's own descriptor included). */
    static int openFds() {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return (int) fds.count();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The open file descriptors of this process that belong to the RDMA stack: those whose link
     * names {@code infiniband} ({@code /dev/infiniband/uverbsN}, {@code /dev/infiniband/rdma_cm}, the
     * {@code anon_inode:[infinibandevent]} of async events and completion channels). Unlike
     * {@link #openFds()}, not moved by other parts of the JVM, such as a finished child process's pipes
     * closed whenever the GC runs.
     */
    static int openRdmaFds() {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return (int) fds.filter(fd -> {
                try {
                    return Files.readSymbolicLink(fd).toString().contains("infiniband");
                } catch (IOException e) {
                    return false; // closed meanwhile (e.g. the listing's own descriptor)
                }
            }).count();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@code VmRSS} of {@code /proc/self/status}, in KiB. */
    static long currentRssKiB() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        throw new IllegalStateException("no VmRSS in /proc/self/status");
    }

    /** The verbs object counts as one short string: {@code pd 0 cq 0 qp 1 mr 0 ctx 0 srq 0}. */
    static String format(Map<String, Integer> counts) {
        StringBuilder sb = new StringBuilder();
        counts.forEach((k, v) -> sb.append(sb.isEmpty() ? "" : " ").append(k).append(' ').append(v));
        return sb.toString();
    }
}
