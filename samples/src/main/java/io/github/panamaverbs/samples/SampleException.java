package io.github.panamaverbs.samples;

/** A failure a tool reports as one line on stderr (exit status 1), like the C tools' messages. */
final class SampleException extends RuntimeException {
    SampleException(String message) {
        super(message);
    }

    SampleException(String message, Throwable cause) {
        super(message, cause);
    }
}
