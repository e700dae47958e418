package io.github.panamaverbs.internal;

import io.github.panamaverbs.verbs.VerbsException;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.util.List;

/**
 * The two rdma-core libraries the bindings load: checked here first, so that a host without them
 * gets a {@link VerbsException} naming the library and the package that provides it, instead of
 * the {@link ExceptionInInitializerError} (and later {@link NoClassDefFoundError}) that the
 * generated bindings' static initializer would throw. Not exported.
 *
 * <p>Of the bindings, only the class {@code Verbs} loads the libraries, in its static initializer;
 * the struct classes ({@code ibv_send_wr}, {@code ibv_wc}, …) initialize only {@code Verbs$shared},
 * which declares the C layouts and loads nothing (a static field or method initializes the class
 * that declares it, JLS 12.4.1). So:
 * <ul>
 *   <li>{@link #require()} is called by the entry points that reach C first ({@code Device.list},
 *       {@code Device.open}, {@code EventChannel.create}, {@code WcStatus.description}) before
 *       {@code Verbs} is initialized; every native object comes from one of those, and the classes
 *       that hold downcall handles are initialized only through such objects (or keep their handles
 *       in a holder class initialized after the check).</li>
 *   <li>What a program uses before that (the enums, the work requests, {@code WorkCompletions},
 *       {@code QpAttributes}, the options and parameters) never calls into {@code Verbs}: the C
 *       constants it needs are written out as int literals, checked against the bindings by
 *       {@code EnumValuesTest}; its native memory is laid out by the struct classes alone.</li>
 * </ul>
 * {@code MissingLibraryTest} runs a JVM with each library hidden to hold both to this.
 */
public final class NativeLibraries {
    /** The verbs library, rdma-core's {@code libibverbs}. */
    public static final String LIBIBVERBS = "libibverbs.so.1";
    /** The connection manager library, rdma-core's {@code librdmacm}. */
    public static final String LIBRDMACM = "librdmacm.so.1";
    /** The libraries, in the order the bindings load them. */
    public static final List<String> ALL = List.of(LIBIBVERBS, LIBRDMACM);

    private NativeLibraries() {
    }

    /** Checked once: a library does not come or go while the JVM runs. */
    private static final class Checked {
        static final String MISSING = firstMissing();

        private static String firstMissing() {
            for (String library : ALL) {
                if (!loads(library)) {
                    return library;
                }
            }
            return null;
        }
    }

    /**
     * Throws unless both libraries can be loaded.
     *
     * @throws VerbsException naming the missing library and the packages that provide it
     */
    public static void require() {
        String missing = Checked.MISSING;
        if (missing != null) {
            throw missing(missing, missing);
        }
    }

    /** Whether {@code library} can be loaded ({@code dlopen} by its name, as the bindings do). */
    public static boolean loads(String library) {
        try (Arena arena = Arena.ofConfined()) {
            SymbolLookup.libraryLookup(library, arena);
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /**
     * The exception for {@code library} missing, found by trying to load {@code probe} (the same
     * name, except in tests, which simulate an absent library with a name that does not exist):
     * {@code null} if {@code probe} loads.
     */
    static VerbsException check(String library, String probe) {
        return loads(probe) ? null : missing(library, probe);
    }

    private static VerbsException missing(String library, String probe) {
        return new VerbsException("dlopen(\"" + probe + "\")", Errno.ENOENT, library + " was not found: " + install(library)
                + "; or, if it is installed outside the loader's path, add its directory to LD_LIBRARY_PATH");
    }

    /** What provides {@code library}, as the command that installs it on Debian/Ubuntu and on RHEL/Fedora. */
    public static String install(String library) {
        return switch (library) {
            case LIBIBVERBS -> "install rdma-core's verbs library and its device providers: "
                    + "'sudo apt-get install libibverbs1 ibverbs-providers rdma-core' (Debian, Ubuntu) or "
                    + "'sudo dnf install libibverbs rdma-core' (RHEL, Fedora)";
            case LIBRDMACM -> "install rdma-core's connection manager library: "
                    + "'sudo apt-get install librdmacm1 rdma-core' (Debian, Ubuntu) or "
                    + "'sudo dnf install librdmacm rdma-core' (RHEL, Fedora)";
            default -> "install the package that provides " + library;
        };
    }
}
