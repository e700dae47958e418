package io.github.panamaverbs.verbs;

/**
 * One entry of a port's GID table ({@code struct ibv_gid_entry}).
 *
 * @param port       the port number
 * @param index      the GID index, as used for {@code sgid_index} and perftest's {@code -x}
 * @param gid        the GID
 * @param type       IB, RoCE v1 or RoCE v2
 * @param netdevIndex the network interface index the entry belongs to (RoCE), or 0
 */
public record GidEntry(int port, int index, Gid gid, GidType type, int netdevIndex) {
}
