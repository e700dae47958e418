package io.github.panamaverbs.verbs;

/**
 * A shared receive queue's attributes: {@code struct ibv_srq_attr}, from {@link SharedReceiveQueue#query()}.
 *
 * @param maxWr  receives it holds
 * @param maxSge SGEs per receive
 * @param limit  the armed limit (0: not armed)
 */
public record SrqAttributes(int maxWr, int maxSge, int limit) {
}
