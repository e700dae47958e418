package io.github.panamaverbs.samples.common;

/** A failure a tool reports as one line on stderr (exit status 1), like the C tools' messages. */
public final class SampleException extends RuntimeException {
    public SampleException(String message) {
        super(message);
    }

    public SampleException(String message, Throwable cause) {
        super(message, cause);
    }
}
