package io.github.panamaverbs.verbs;

import io.github.panamaverbs.internal.Errno;
import io.github.panamaverbs.internal.Jfr;

/**
 * A verb failed in C. With {@link io.github.panamaverbs.cm.ConnectionException}, one of the two
 * failures of RDMA itself, under {@link RdmaException}.
 *
 * <p>It carries the name of the C verb that failed ({@code ibv_open_device}, {@code ibv_reg_mr}, …),
 * the {@code errno} it reported, that errno's symbolic name ({@code ENOMEM}) and {@code strerror}
 * text, and a hint where a common cause is known (the memlock limit, no device, a port that is down).
 * Where a verb fails without an errno (a provider that returns NULL and sets nothing), {@link #errno()}
 * is 0.
 *
 * <p>Misuse that Java can see before calling C (a closed handle, a buffer outside its region, a
 * bad argument) is reported with the usual Java exceptions instead: {@link IllegalStateException},
 * {@link IndexOutOfBoundsException}, {@link IllegalArgumentException}.
 */
public final class VerbsException extends RdmaException {
    private static final long serialVersionUID = 1L;

    /** The C verb that failed. */
    private final String verb;
    /** The errno it reported, or 0. */
    private final int errno;
    /** The likely cause, or null. */
    private final String hint;

    /**
     * Creates an exception for {@code verb} failing with {@code errno}.
     *
     * @param verb  the C function that failed, e.g. {@code ibv_reg_mr}
     * @param errno the errno value it reported, or 0 if none
     * @param hint  what probably caused it and what to do, or {@code null}
     */
    public VerbsException(String verb, int errno, String hint) {
        super(message(verb, errno, hint));
        this.verb = verb;
        this.errno = errno;
        this.hint = hint;
        Jfr.VerbError event = new Jfr.VerbError();
        if (event.shouldCommit()) {
            event.verb = verb;
            event.errno = errno;
            event.errnoName = errno == 0 ? null : Errno.name(errno);
            event.message = getMessage();
            event.commit();
        }
    }

    private static String message(String verb, int errno, String hint) {
        StringBuilder sb = new StringBuilder(verb).append(" failed");
        if (errno != 0) {
            sb.append(": ").append(Errno.name(errno)).append(" (").append(errno).append(", ")
              .append(Errno.describe(errno)).append(')');
        }
        if (hint != null && !hint.isEmpty()) {
            sb.append(": ").append(hint);
        }
        return sb.toString();
    }

    /** {@return the C verb that failed, e.g. {@code ibv_create_qp}} */
    public String verb() {
        return verb;
    }

    /** {@return the errno value the verb reported; 0 when it reported none} */
    public int errno() {
        return errno;
    }

    /** {@return the symbolic name of {@link #errno()}, e.g. {@code ENOMEM}; {@code "0"} when there is none} */
    public String errnoName() {
        return errno == 0 ? "0" : Errno.name(errno);
    }

    /** {@return the {@code strerror} text of {@link #errno()}} */
    public String errnoText() {
        return Errno.describe(errno);
    }

    /** {@return a hint at the likely cause, or {@code null}} */
    public String hint() {
        return hint;
    }
}
