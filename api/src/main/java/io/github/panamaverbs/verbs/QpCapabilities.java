package io.github.panamaverbs.verbs;

/**
 * What the device granted a queue pair: {@code struct ibv_qp_cap} after {@code ibv_create_qp}, at
 * least what was asked.
 *
 * @param maxSendWr     send queue depth
 * @param maxRecvWr     receive queue depth
 * @param maxSendSge    SGEs per send
 * @param maxRecvSge    SGEs per receive
 * @param maxInlineData bytes that may be sent inline
 */
public record QpCapabilities(int maxSendWr, int maxRecvWr, int maxSendSge, int maxRecvSge, int maxInlineData) {
}
