package io.github.panamaverbs.samples.ibverbs;

import io.github.panamaverbs.samples.common.Common;
import io.github.panamaverbs.samples.common.Options;
import io.github.panamaverbs.verbs.AsyncEvent;
import io.github.panamaverbs.verbs.Context;
import java.io.PrintStream;
import java.time.Duration;
import java.util.Optional;

/**
 * {@code asyncwatch}: rdma-core's {@code ibv_asyncwatch}. Opens the device and prints each of its
 * asynchronous events, one line each ({@code "  event_type IBV_EVENT_PORT_ERR (10), port 1"}), until
 * killed; {@code --count} and {@code --timeout} end it after so many events, or after so long
 * without one (both exit 0).
 */
public final class AsyncWatch {
    private AsyncWatch() {
    }

    /** Runs the tool with {@code args}, printing on {@code out}; returns the exit status. */
    public static int main(String[] args, PrintStream out) {
        Options o = new Options("Usage:\n  samples/run asyncwatch [options]\nAs rdma-core's ibv_asyncwatch: prints the device's "
                + "asynchronous events as they come.")
                .value('d', "ib-dev", "dev", "use IB device <dev> (default first device found)")
                .value('\0', "count", "n", "exit after <n> events (default: never)")
                .value('\0', "timeout", "seconds", "exit after <seconds> without an event (default: never)");
        if (!o.parse(args, out)) {
            return 0;
        }
        if (!o.positional().isEmpty()) {
            throw new Options.UsageException("unexpected argument " + o.positional().getFirst());
        }
        String deviceName = o.string("ib-dev", null);
        long count = o.number("count", -1, 1, Long.MAX_VALUE);
        int timeoutSeconds = o.integer("timeout", -1, 1, 86_400 * 365);
        // Without --timeout, wake up now and then anyway: the wait itself never gives up.
        Duration wait = Duration.ofSeconds(timeoutSeconds > 0 ? timeoutSeconds : 3600);
        try (Context ctx = Common.openDevice(deviceName)) {
            out.println(ctx.device().name() + ": waiting for async events");   // the C tool prints its FD here
            out.flush();
            for (long seen = 0; count < 0 || seen < count; ) {
                Optional<AsyncEvent> e = ctx.nextAsyncEvent(wait);
                if (e.isEmpty()) {
                    if (timeoutSeconds > 0) {
                        return 0;
                    }
                    continue;
                }
                AsyncEvent event = e.get();
                out.printf("  event_type IBV_EVENT_%s (%d), port %d%n", event.type(), event.type().value(), event.port());
                out.flush();
                seen++;
            }
        }
        return 0;
    }
}
