/**
 * panama-verbs: RDMA verbs for Java through the Foreign Function and Memory API.
 *
 * <p>The package {@link io.github.panamaverbs.verbs} holds the typed verbs API (devices, protection
 * domains, memory regions, queues; its documentation explains the object model, the closing rule,
 * threads and when a posted buffer may be reused), and {@link io.github.panamaverbs.cm} the
 * connection manager, {@link io.github.panamaverbs.channel} messages over a connection with flow
 * control, {@link io.github.panamaverbs.diagnostics} what a host lacks for RDMA. The generated bindings ({@code io.github.panamaverbs.bindings}) are an
 * implementation detail and are not exported.
 * Applications run with {@code --enable-native-access=io.github.panamaverbs.bindings,io.github.panamaverbs}
 * (or {@code ALL-UNNAMED} on the class path).
 */
module io.github.panamaverbs {
    requires io.github.panamaverbs.bindings;
    requires jdk.jfr;

    exports io.github.panamaverbs.verbs;
    exports io.github.panamaverbs.cm;
    exports io.github.panamaverbs.channel;
    exports io.github.panamaverbs.diagnostics;
}
