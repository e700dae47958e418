/**
 * The RDMA connection manager ({@code librdmacm}): connections by IP address and port, the only way
 * iWARP connects, and datagram and multicast addressing for UD. The queue pairs it connects are the
 * ordinary {@link io.github.panamaverbs.verbs.QueuePair}s of {@link io.github.panamaverbs.verbs}:
 * posting and polling are the same whichever way a queue pair was connected, and the rules of that
 * package (<a href="../verbs/package-summary.html#closing">closing</a>,
 * <a href="../verbs/package-summary.html#threads">threads</a>,
 * <a href="../verbs/package-summary.html#buffers">buffer reuse</a>) hold here too.
 *
 * <h2 id="model">The object model</h2>
 *
 * <pre>
 * EventChannel            EventChannel.create()                   rdma_create_event_channel
 *  └ CmId                 channel.createId(PortSpace.TCP or UDP)  rdma_create_id
 *     │                   (or, on a listener's channel, the id() of a CONNECT_REQUEST event)
 *     └ QueuePair         id.createQueuePair(pd, init)            rdma_create_qp
 *                         (pd and the completion queues of init come from id.context())
 * </pre>
 *
 * <ul>
 *   <li>An {@link io.github.panamaverbs.cm.EventChannel} is where librdmacm reports what happens to
 *       its IDs. Events are read with a timeout, copied into a {@link io.github.panamaverbs.cm.CmEvent}
 *       and acknowledged by the API before they are returned: users never acknowledge. An event read
 *       for another ID waits in the channel until that ID asks for it.</li>
 *   <li>A {@link io.github.panamaverbs.cm.CmId} is the connection manager's socket. The active side
 *       resolves the peer's address and route ({@link io.github.panamaverbs.cm.CmId#resolve}), which
 *       binds it to a device; it then creates its protection domain and completion queues from
 *       {@link io.github.panamaverbs.cm.CmId#context()}, its queue pair with
 *       {@link io.github.panamaverbs.cm.CmId#createQueuePair}, and
 *       {@link io.github.panamaverbs.cm.CmId#connect connects}. The passive side
 *       {@link io.github.panamaverbs.cm.CmId#bind binds} and {@link io.github.panamaverbs.cm.CmId#listen
 *       listens}; each {@link io.github.panamaverbs.cm.CmEventType#CONNECT_REQUEST} event brings a new
 *       ID, already bound to a device, which creates its queue pair the same way and
 *       {@link io.github.panamaverbs.cm.CmId#accept accepts} (or
 *       {@link io.github.panamaverbs.cm.CmId#reject rejects}). Both sides then wait for
 *       {@link io.github.panamaverbs.cm.CmEventType#ESTABLISHED}; librdmacm moves the queue pair
 *       through INIT, RTR and RTS itself. {@link io.github.panamaverbs.cm.CmId#disconnect()} ends the
 *       connection: both sides get {@link io.github.panamaverbs.cm.CmEventType#DISCONNECTED}, and the
 *       API moves the queue pair to ERR so that its outstanding work requests are flushed.</li>
 *   <li>The {@link io.github.panamaverbs.verbs.Context} of {@code CmId.context()} was opened by
 *       librdmacm, which keeps it open: closing it frees nothing, but the closing rule still holds for
 *       the protection domains and completion queues made from it.</li>
 *   <li>The one-call forms make the common client and server a call each.
 *       {@link io.github.panamaverbs.cm.Connection#connect(java.net.InetSocketAddress, Connection.Config, java.time.Duration)}
 *       creates a channel and an ID, resolves, creates a protection domain, a completion queue and
 *       an RC queue pair, connects and waits until the connection is established;
 *       {@link io.github.panamaverbs.cm.Listener#bind(java.net.InetSocketAddress, int)} and
 *       {@link io.github.panamaverbs.cm.Listener#accept(Connection.Config, java.time.Duration)} do the
 *       same on the server. A {@link io.github.panamaverbs.cm.Connection} owns all of these and closes
 *       them in order. Receives that must be in place before the peer sends are posted in
 *       {@link io.github.panamaverbs.cm.Connection.Config#beforeConnect}, and the memory registered
 *       there is handed to the connection with {@link io.github.panamaverbs.cm.Connection#own}, so that
 *       it is closed with it, first. The hook may also answer with private data of the connection's
 *       own ({@link io.github.panamaverbs.cm.Connection#privateData(byte[])}, e.g. a region's address
 *       and rkey) and attach the connection's state ({@link io.github.panamaverbs.cm.Connection#attach}).</li>
 *   <li>A connection may run on the caller's protection domain and completion queue instead of its
 *       own ({@link io.github.panamaverbs.cm.Connection.Config#protectionDomain},
 *       {@link io.github.panamaverbs.cm.Connection.Config#completionQueue}: functions of the device
 *       context, which librdmacm shares among all IDs of a device), so that memory registered once
 *       serves every connection with one rkey, and connections share a queue that a completion
 *       channel wakes; the connection does not close those.</li>
 * </ul>
 *
 * <h2 id="nulls">Null arguments</h2>
 *
 * Unless a method says otherwise, passing {@code null} for an argument of a constructor or method
 * of a class in this package throws {@link java.lang.NullPointerException}, whose message names the
 * argument; the elements of an array or collection argument are checked where the method says so.
 *
 * <h2 id="errors">Errors</h2>
 *
 * A connection that cannot be made or is lost throws {@link io.github.panamaverbs.cm.ConnectionException}:
 * the peer rejected it ({@link io.github.panamaverbs.cm.ConnectionException#isRejected()}), an error
 * event came instead of the one awaited ({@link io.github.panamaverbs.cm.ConnectionException#event()}),
 * or nothing came in time. A librdmacm call that fails at once throws
 * {@link io.github.panamaverbs.verbs.VerbsException}; misuse that Java sees first throws
 * {@link java.lang.IllegalStateException} or {@link java.lang.IllegalArgumentException}.
 *
 * <h2 id="closing">Closing</h2>
 *
 * The closing rule of the verbs package applies: a queue pair closes before its ID, an ID before its
 * channel, and a memory region, queue pair and completion queue before the protection domain and
 * context they belong to; closing out of order throws {@link java.lang.IllegalStateException} naming
 * what is still open, and closes nothing. The IDs of incoming connections live on the listening ID's
 * channel: a channel of the caller's closes after them; a {@link io.github.panamaverbs.cm.Listener}
 * may close first (it stops listening), and its channel then closes with the last connection.
 * Closing a listening ID rejects the connection requests that were read for it and not taken.
 * try-with-resources gets the order right when a connection is declared before the memory regions
 * it does not own.
 *
 * <h2 id="threads">Threads</h2>
 *
 * Several threads may wait for events at once, on one channel: each waits for the events of its own
 * ID ({@link io.github.panamaverbs.cm.CmId#nextEvent}, {@link io.github.panamaverbs.cm.CmId#awaitEvent}),
 * and an event that one thread reads for another ID is kept until that ID's thread takes it. A thread
 * waiting on a channel that is closed throws {@link java.lang.IllegalStateException}, and so does one
 * waiting for an ID that is closed meanwhile (or already). The queue pair, completion queue and
 * protection domain of a connection follow the thread rules of the verbs package.
 *
 * <h2 id="example">Example</h2>
 *
 * A server and a client in one method, over the one-call forms (the example of the project's
 * README): the server posts a receive before it accepts, the client sends 64 bytes.
 *
 * {@snippet file="io/github/panamaverbs/cm/CmReadmeExampleTest.java" region="cm"}
 *
 * <p>The event API under them, for everything else (datagrams, multicast, private data, queue pairs
 * of one's own sizes), step by step:
 *
 * <pre>{@code
 * // the client
 * try (EventChannel channel = EventChannel.create();
 *      CmId id = channel.createId(PortSpace.TCP)) {
 *     id.resolve(server, timeout);                       // address and route: binds the ID to a device
 *     try (ProtectionDomain pd = id.context().allocateProtectionDomain();
 *          CompletionQueue cq = id.context().createCompletionQueue(32);
 *          QueuePair qp = id.createQueuePair(pd, new QpInitAttributes(QpType.RC, cq, cq))) {
 *         id.connect(new ConnectionParameters());
 *         id.awaitEvent(CmEventType.ESTABLISHED, timeout);
 *         // ... post to qp, poll cq ...
 *         id.disconnect();
 *     }
 * }
 * // the server: bind and listen, then one new ID per connection request
 * try (EventChannel channel = EventChannel.create();
 *      CmId listener = channel.createId(PortSpace.TCP)) {
 *     listener.bind(new InetSocketAddress(port));
 *     listener.listen(8);
 *     CmEvent request = listener.awaitEvent(CmEventType.CONNECT_REQUEST, timeout);
 *     try (CmId id = request.id();
 *          ProtectionDomain pd = id.context().allocateProtectionDomain();
 *          CompletionQueue cq = id.context().createCompletionQueue(32);
 *          QueuePair qp = id.createQueuePair(pd, new QpInitAttributes(QpType.RC, cq, cq))) {
 *         id.accept(new ConnectionParameters());
 *         id.awaitEvent(CmEventType.ESTABLISHED, timeout);
 *         // ... post to qp, poll cq, until the DISCONNECTED event ...
 *     }
 * }
 * }</pre>
 */
package io.github.panamaverbs.cm;
