package io.github.panamaverbs.internal;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/** Linux errno values: symbolic names and {@code strerror} text. The one place errno is decoded. */
public final class Errno {
    public static final int EPERM = 1, ENOENT = 2, EINTR = 4, EIO = 5, EBADF = 9, EAGAIN = 11, ENOMEM = 12, EACCES = 13,
            EFAULT = 14, EBUSY = 16, EEXIST = 17, ENODEV = 19, EINVAL = 22, ENOSPC = 28, ENOSYS = 38,
            ENODATA = 61, ETIME = 62, EPROTO = 71, EOVERFLOW = 75, EOPNOTSUPP = 95, EADDRINUSE = 98,
            EADDRNOTAVAIL = 99, ENETUNREACH = 101, ECONNRESET = 104, ENOBUFS = 105, ETIMEDOUT = 110,
            ECONNREFUSED = 111, EHOSTUNREACH = 113;

    private static final String[] NAMES = new String[134];

    static {
        String table = """
            1 EPERM 2 ENOENT 3 ESRCH 4 EINTR 5 EIO 6 ENXIO 7 E2BIG 8 ENOEXEC 9 EBADF 10 ECHILD
            11 EAGAIN 12 ENOMEM 13 EACCES 14 EFAULT 15 ENOTBLK 16 EBUSY 17 EEXIST 18 EXDEV 19 ENODEV
            20 ENOTDIR 21 EISDIR 22 EINVAL 23 ENFILE 24 EMFILE 25 ENOTTY 26 ETXTBSY 27 EFBIG 28 ENOSPC
            29 ESPIPE 30 EROFS 31 EMLINK 32 EPIPE 33 EDOM 34 ERANGE 35 EDEADLK 36 ENAMETOOLONG 37 ENOLCK
            38 ENOSYS 39 ENOTEMPTY 40 ELOOP 42 ENOMSG 43 EIDRM 61 ENODATA 62 ETIME 71 EPROTO 74 EBADMSG
            75 EOVERFLOW 84 EILSEQ 88 ENOTSOCK 90 EMSGSIZE 92 ENOPROTOOPT 93 EPROTONOSUPPORT
            95 EOPNOTSUPP 97 EAFNOSUPPORT 98 EADDRINUSE 99 EADDRNOTAVAIL 100 ENETDOWN 101 ENETUNREACH
            102 ENETRESET 103 ECONNABORTED 104 ECONNRESET 105 ENOBUFS 106 EISCONN 107 ENOTCONN
            110 ETIMEDOUT 111 ECONNREFUSED 112 EHOSTDOWN 113 EHOSTUNREACH 114 EALREADY 115 EINPROGRESS
            121 EREMOTEIO 125 ECANCELED
            """;
        String[] words = table.trim().split("\\s+");
        for (int i = 0; i < words.length; i += 2) {
            NAMES[Integer.parseInt(words[i])] = words[i + 1];
        }
    }

    private static final MethodHandle STRERROR = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("strerror").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_INT));

    private Errno() {
    }

    /** The symbolic name of an errno value ({@code ENOMEM}), or {@code "errno N"} if unknown. */
    public static String name(int errno) {
        String n = errno > 0 && errno < NAMES.length ? NAMES[errno] : null;
        return n != null ? n : "errno " + errno;
    }

    /** The C library's {@code strerror} text for an errno value. */
    public static String describe(int errno) {
        try {
            MemorySegment s = (MemorySegment) STRERROR.invokeExact(errno);
            return s.reinterpret(256).getString(0);
        } catch (Throwable t) {
            return "errno " + errno;
        }
    }
}
