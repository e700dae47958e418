package io.github.panamaverbs.verbs;

/**
 * The root of what this library throws when RDMA itself fails, as opposed to misuse that Java sees
 * first: {@link VerbsException} (a verb failed in C: its name, errno and likely cause) and
 * {@link io.github.panamaverbs.cm.ConnectionException} (a connection could not be made or was
 * lost). Catch this to handle both; misuse throws the usual Java exceptions instead
 * ({@link IllegalStateException}, {@link IllegalArgumentException}, {@link IndexOutOfBoundsException},
 * {@link NullPointerException}).
 */
public abstract class RdmaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * For the library's own subclasses.
     *
     * @param message what failed
     */
    protected RdmaException(String message) {
        super(message);
    }
}
