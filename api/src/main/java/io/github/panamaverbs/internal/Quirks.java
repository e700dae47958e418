package io.github.panamaverbs.internal;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The one table of provider and kernel bugs that the API works around: what each is, how it is
 * detected, the release that fixed it (or that none has), and the test that shows it. Each check is
 * made once per object (a queue, a context), when it is created, never per operation; the
 * diagnostics ({@code Doctor}) report the same table.
 *
 * <p>A provider is recognised by the library its function pointers point into ({@code librxe-},
 * {@code libsiw-}, as mapped in {@code /proc/self/maps}); an rdma-core release by libibverbs's file
 * name ({@code libibverbs.so.1.14.44.0}: rdma-core 44).
 */
public enum Quirks {
    /**
     * Soft-RoCE's {@code ibv_next_poll} ends the poll itself when the queue is empty (the next
     * {@code ibv_end_poll} would unlock a lock not held). rdma-core 55 fixed it.
     * Test: {@code ExtendedCompletionQueueIT}.
     */
    RXE_EMPTY_NEXT_POLL_ENDS_POLL(Provider.RXE, 55,
            "librxe's next_poll ends the poll on an empty queue; the API then skips end_poll"),
    /**
     * Soft-RoCE's {@code ibv_wr_set_sge_list} sets the total length to the number of entries times
     * the first entry's length. rdma-core 64 fixed it. Test: {@code SendBatchIT}.
     */
    RXE_SGE_LIST_TOTAL(Provider.RXE, 64,
            "librxe's wr_set_sge_list miscounts entries of different lengths; the API refuses such lists"),
    /**
     * Soft-RoCE's kernel driver ({@code rxe_mw.c}, every release through Linux 7.3-rc7: no fix
     * upstream) checks only for the INVALID state before invalidating a type 2 memory window, while
     * an invalidation leaves it FREE with its queue pair and region pointers cleared: invalidating one
     * that is not bound (never bound, or already invalidated, by {@code LOCAL_INV} or by the peer's
     * {@code SEND_WITH_INV}) dereferences NULL in {@code rxe_invalidate_mw}, a kernel panic; a peer
     * that holds the rkey can trigger it remotely. The API refuses type 2 windows on Soft-RoCE
     * unless {@link #UNSAFE_RXE_TYPE2_WINDOWS} is set, and refuses every local invalidation of one that
     * it knows is not bound under that key. Test: {@code ReliabilityIT.type2WindowMisuseIsRefused}.
     */
    RXE_TYPE2_WINDOW_INVALIDATE_PANIC(Provider.RXE, Integer.MAX_VALUE,
            "rxe's kernel driver panics on an invalidation of a type 2 memory window that is not bound "
                    + "(Linux 6.1 to 7.3 at least, no fix upstream): type 2 windows are refused on Soft-RoCE "
                    + "unless -D" + "panamaverbs.unsafe.rxeType2Windows=true"),
    /**
     * Soft-RoCE's kernel driver treats a transport retry count of 7 as "retry for ever" (InfiniBand
     * gives that meaning only to the RNR retry count): a dead peer is never reported. No fix. The API
     * refuses 7 on Soft-RoCE. Test: {@code ReliabilityIT.retryCountSevenIsRefusedOnSoftRoce}.
     */
    RXE_RETRY_COUNT_SEVEN_IS_FOREVER(Provider.RXE, Integer.MAX_VALUE,
            "rxe retries for ever with a retry count of 7; the API refuses 7 there"),
    /**
     * SoftiWARP's user-mapped send queue: a request posted once the queue pair is in ERROR is never
     * flushed (the kernel flushes only what its post call is handed, and a user queue pair hands it
     * nothing), so it never completes. No fix. The API refuses posts on a SoftiWARP queue pair that it
     * knows is in ERR. Test: {@code CmIT.aSendAfterDisconnectIsRefusedOnSoftiwarp}.
     */
    SIW_POST_IN_ERROR_NEVER_COMPLETES(Provider.SIW, Integer.MAX_VALUE,
            "siw never completes a request posted in ERROR; the API refuses posts it knows to be in ERR");

    /** The system property that allows type 2 memory windows on Soft-RoCE despite {@link #RXE_TYPE2_WINDOW_INVALIDATE_PANIC}. */
    public static final String UNSAFE_RXE_TYPE2_WINDOWS = "panamaverbs.unsafe.rxeType2Windows";

    /** A provider library of rdma-core, by the start of its file name. */
    public enum Provider {
        RXE("/librxe-"), SIW("/libsiw-");

        private final String file;

        Provider(String file) {
            this.file = file;
        }
    }

    private final Provider provider;
    private final int fixedInRelease;
    private final String summary;

    Quirks(Provider provider, int fixedInRelease, String summary) {
        this.provider = provider;
        this.fixedInRelease = fixedInRelease;
        this.summary = summary;
    }

    /** {@return the provider it affects} */
    public Provider provider() {
        return provider;
    }

    /** {@return the first rdma-core release without it, or {@link Integer#MAX_VALUE} when none has it fixed} */
    public int fixedInRelease() {
        return fixedInRelease;
    }

    /** {@return one line: what it is and what the API does about it} */
    public String summary() {
        return summary;
    }

    /**
     * Whether this quirk affects the object whose provider function is {@code fn}: the provider
     * matches, and (for a quirk of rdma-core's provider library) the loaded rdma-core is older than
     * the release that fixed it. Reads {@code /proc/self/maps}: call it once per object.
     */
    public boolean affects(MemorySegment fn) {
        return affecting(fn).contains(this);
    }

    /** Every quirk that affects the objects whose provider function is {@code fn}: {@code /proc/self/maps} read once. */
    public static Set<Quirks> affecting(MemorySegment fn) {
        Optional<String> file = mappedFile(fn.address());
        Set<Quirks> found = EnumSet.noneOf(Quirks.class);
        int loaded = rdmaCoreRelease();
        for (Quirks q : values()) {
            if (file.map(f -> f.contains(q.provider.file)).orElse(false)
                    && (q.fixedInRelease == Integer.MAX_VALUE || (loaded > 0 && loaded < q.fixedInRelease))) {
                found.add(q);
            }
        }
        return Collections.unmodifiableSet(found);
    }

    /** Whether {@link #UNSAFE_RXE_TYPE2_WINDOWS} is set to true (read at each allocation). */
    public static boolean unsafeRxeType2WindowsAllowed() {
        return Boolean.getBoolean(UNSAFE_RXE_TYPE2_WINDOWS);
    }

    /** The rdma-core release of the libibverbs this process loaded (44 for libibverbs.so.1.14.44.0); -1 if unknown. */
    public static int rdmaCoreRelease() {
        return Release.LOADED;
    }

    /** The release, read once (the library's file does not change while it is loaded). */
    private static final class Release {
        static final int LOADED = read();

        private static int read() {
            return loadedFile(NativeLibraries.LIBIBVERBS).map(f -> {
                Matcher m = Pattern.compile("\\.so\\.\\d+\\.\\d+\\.(\\d+)\\.\\d+$").matcher(f.getFileName().toString());
                return m.find() ? Integer.parseInt(m.group(1)) : -1;
            }).orElse(-1);
        }
    }

    /** The file a library was loaded from, from /proc/self/maps (it stays mapped: the bindings hold it). */
    public static Optional<Path> loadedFile(String library) {
        String stem = library.substring(0, library.indexOf(".so") + 3);
        try (Arena arena = Arena.ofConfined()) {
            SymbolLookup.libraryLookup(library, arena);
            try (Stream<String> lines = Files.lines(Path.of("/proc/self/maps"))) {
                return lines.map(l -> l.substring(l.lastIndexOf(' ') + 1)).filter(p -> p.contains("/" + stem))
                        .findFirst().map(Path::of).map(Quirks::realPath);
            }
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** The file mapped at {@code address} in this process (a provider's library, for a function pointer), if any. */
    public static Optional<String> mappedFile(long address) {
        try (Stream<String> lines = Files.lines(Path.of("/proc/self/maps"))) {
            return lines.map(l -> l.split("\\s+", 6)).filter(f -> f.length == 6 && f[5].startsWith("/")).filter(f -> {
                String[] range = f[0].split("-");
                return Long.compareUnsigned(address, Long.parseUnsignedLong(range[0], 16)) >= 0
                        && Long.compareUnsigned(address, Long.parseUnsignedLong(range[1], 16)) < 0;
            }).map(f -> f[5]).findFirst();
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    private static Path realPath(Path p) {
        try {
            return p.toRealPath();
        } catch (IOException e) {
            return p;
        }
    }
}
