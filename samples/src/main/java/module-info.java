/**
 * Command-line tools mirroring rdma-core's examples and perftest, built on the panama-verbs API.
 *
 * <p>{@code io.github.panamaverbs.samples.Main} is the launcher ({@code samples/run TOOL}); each tool
 * lives in the package named after where its C original lives: {@code .ibverbs} (rdma-core's
 * {@code libibverbs/examples}: ibv_devices, ibv_devinfo, ibv_asyncwatch, ibv_*_pingpong),
 * {@code .rdmacm} ({@code librdmacm/examples}: rping, rdma_server / rdma_client, mckey),
 * {@code .perftest} (linux-rdma's perftest: ib_*_lat, ib_*_bw), {@code .apps} (applications on the
 * channel layer: kv-server / kv-client, rpc-ping) and {@code .doctor} (this project's
 * own); {@code .common} holds what they share (the option parser, device opening, the error type).
 * Nothing is exported: the tools are run, not linked against.
 */
module io.github.panamaverbs.samples {
    requires io.github.panamaverbs;
    requires java.management;
}
