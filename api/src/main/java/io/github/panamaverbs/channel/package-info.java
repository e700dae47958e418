/**
 * Messages over RDMA for applications, on the public verbs and connection-manager API:
 * {@link io.github.panamaverbs.channel.MessageChannel}, a reliable, ordered channel over one rdma_cm
 * connection with registered send and receive rings and credit-based flow control, so that no send
 * meets an empty receive queue on any transport, iWARP included; zero-copy in both directions; waits
 * that park virtual threads, or busy polling.
 *
 * <h2 id="nulls">Null arguments</h2>
 *
 * Passing {@code null} for an argument of a method of this package throws
 * {@link java.lang.NullPointerException}, whose message names the argument.
 *
 * <h2 id="errors">Errors</h2>
 *
 * A channel that is closed, whose peer is gone or whose transfer failed throws
 * {@link io.github.panamaverbs.channel.ChannelException} (a
 * {@link io.github.panamaverbs.verbs.RdmaException}) from every waiting and later call, naming the
 * peer; making one throws {@link io.github.panamaverbs.cm.ConnectionException} when the connection
 * cannot be made.
 */
package io.github.panamaverbs.channel;
