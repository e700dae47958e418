/** Command-line tools mirroring rdma-core's examples and perftest, built on the panama-verbs API. */
module io.github.panamaverbs.samples {
    requires io.github.panamaverbs;
    requires java.management;
}
