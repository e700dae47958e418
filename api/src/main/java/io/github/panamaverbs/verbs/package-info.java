/**
 * RDMA verbs for Java: typed objects over rdma-core's {@code libibverbs}, called through the
 * Foreign Function and Memory API. Applications run with
 * {@code --enable-native-access=io.github.panamaverbs.bindings,io.github.panamaverbs} on the module
 * path, or {@code --enable-native-access=ALL-UNNAMED} on the class path.
 *
 * <h2 id="model">The object model</h2>
 *
 * Each native object is a {@link io.github.panamaverbs.verbs.Resource}, created from the object it
 * depends on, as in C:
 *
 * <pre>
 * Device                      Device.list(), Device.open(name)         a description, not a resource
 *  └ Context                  device.open()                            ibv_open_device
 *     ├ ProtectionDomain      ctx.allocateProtectionDomain()           ibv_alloc_pd
 *     │  ├ MemoryRegion       pd.allocateAndRegister(size, access...)  ibv_reg_mr
 *     │  │                    pd.register(arena, segment, access...)
 *     │  ├ QueuePair          pd.createQueuePair(init)                 ibv_create_qp
 *     │  ├ SharedReceiveQueue pd.createSharedReceiveQueue(maxWr, maxSge)  ibv_create_srq
 *     │  └ AddressHandle      pd.createAddressHandle(addressVector)    ibv_create_ah (UD destinations)
 *     ├ CompletionChannel     ctx.createCompletionChannel()            ibv_create_comp_channel
 *     └ CompletionQueue       ctx.createCompletionQueue(entries)       ibv_create_cq
 *                             ctx.createCompletionQueue(entries, channel, vector)
 * </pre>
 *
 * <ul>
 *   <li>A {@link io.github.panamaverbs.verbs.Device} names an RDMA device of this host;
 *       {@link io.github.panamaverbs.verbs.Device#open()} gives the
 *       {@link io.github.panamaverbs.verbs.Context} through which everything else is created and
 *       the device, its ports and GIDs are queried
 *       ({@link io.github.panamaverbs.verbs.Context#queryDevice()},
 *       {@link io.github.panamaverbs.verbs.Context#queryPort(int)},
 *       {@link io.github.panamaverbs.verbs.Context#gidTable()}).</li>
 *   <li>A {@link io.github.panamaverbs.verbs.ProtectionDomain} groups what may be used together:
 *       a queue pair can only use memory regions, shared receive queues and address handles of its
 *       own protection domain.</li>
 *   <li>A {@link io.github.panamaverbs.verbs.MemoryRegion} is registered native memory, a
 *       {@link java.lang.foreign.MemorySegment} the device may read and write; work requests name it
 *       by its {@code lkey}, peers by its {@code rkey} and address.</li>
 *   <li>A {@link io.github.panamaverbs.verbs.CompletionQueue} receives a completion for each finished
 *       work request; {@link io.github.panamaverbs.verbs.CompletionQueue#poll(WorkCompletions)} reads
 *       them into a reusable {@link io.github.panamaverbs.verbs.WorkCompletions} batch. A
 *       {@link io.github.panamaverbs.verbs.CompletionChannel} lets a thread sleep until a completion
 *       queue that asked for it is notified.</li>
 *   <li>A {@link io.github.panamaverbs.verbs.QueuePair} is the endpoint of communication: its send and
 *       receive queues report to the completion queues given in
 *       {@link io.github.panamaverbs.verbs.QpInitAttributes}, or it receives from a
 *       {@link io.github.panamaverbs.verbs.SharedReceiveQueue}. It is connected to its peer with the
 *       peer's {@link io.github.panamaverbs.verbs.RemoteEndpoint}, exchanged out of band, and
 *       {@link io.github.panamaverbs.verbs.ConnectOptions}
 *       ({@link io.github.panamaverbs.verbs.QueuePair#connect(RemoteEndpoint, ConnectOptions)}), or
 *       by the connection manager ({@link io.github.panamaverbs.cm}).</li>
 *   <li>Work is described by a {@link io.github.panamaverbs.verbs.SendRequest} or
 *       {@link io.github.panamaverbs.verbs.ReceiveRequest}: built once, off-heap, and posted again and
 *       again without allocation ({@link io.github.panamaverbs.verbs.QueuePair#postSend(SendRequest)},
 *       {@link io.github.panamaverbs.verbs.QueuePair#postReceive(ReceiveRequest)},
 *       {@link io.github.panamaverbs.verbs.SharedReceiveQueue#postReceive(ReceiveRequest)}). UD sends
 *       name their destination by an {@link io.github.panamaverbs.verbs.AddressHandle}.</li>
 * </ul>
 *
 * <p>Requests, completion batches and attribute builders ({@code SendRequest}, {@code ReceiveRequest},
 * {@code WorkCompletions}, {@code QpAttributes}, {@code QpInitAttributes}, {@code ConnectOptions}) are
 * not resources: they hold no C object, and their memory belongs to an arena (by default one that
 * the garbage collector frees).
 *
 * <h2 id="nulls">Null arguments</h2>
 *
 * Unless a method says otherwise, passing {@code null} for an argument of a constructor or method
 * of a class in this package throws {@link java.lang.NullPointerException}, whose message names the
 * argument; the elements of an array or collection argument are checked where the method says so.
 *
 * <h2 id="errors">Errors</h2>
 *
 * A verb that fails in C throws {@link io.github.panamaverbs.verbs.VerbsException}, naming the verb,
 * its errno and the likely cause (a {@link io.github.panamaverbs.verbs.RdmaException}, as the
 * connection manager's {@code ConnectionException} is). Misuse that Java sees before calling C throws the usual Java
 * exceptions: {@link java.lang.IllegalStateException} (a closed resource, freed memory),
 * {@link java.lang.IllegalArgumentException} (a bad argument), {@link java.lang.IndexOutOfBoundsException}
 * (a range outside its memory region), {@link java.lang.NullPointerException} (a null argument where
 * none is allowed). A work request that fails on the device is not an exception: its completion
 * carries a {@link io.github.panamaverbs.verbs.WcStatus} other than {@code SUCCESS}.
 * {@link io.github.panamaverbs.diagnostics.Doctor#check()} says what a host lacks for RDMA.
 *
 * <h2 id="closing">Closing</h2>
 *
 * Every resource must be closed; there is no finalization, and a resource that is never closed stays
 * allocated (its memory pinned) until the process exits. <b>A resource cannot be closed while a
 * resource created from it, or using it, is still open</b>: closing a protection domain with a live
 * memory region or queue pair, a completion queue that a queue pair still reports to, a completion
 * channel that a completion queue still uses, or a context with anything open under it, throws
 * {@link java.lang.IllegalStateException} naming what is still open ("cannot close ... still in use
 * by [...]; close those first") and leaves everything open. So close in the reverse order of
 * creation; try-with-resources does exactly that when the parents are declared first:
 *
 * <pre>{@code
 * try (Context ctx = Device.open("rxe0");
 *      ProtectionDomain pd = ctx.allocateProtectionDomain();
 *      CompletionQueue cq = ctx.createCompletionQueue(16);
 *      QueuePair qp = pd.createQueuePair(new QpInitAttributes(QpType.RC, cq, cq));
 *      MemoryRegion mr = pd.allocateAndRegister(4096)) {
 *     ...
 * }   // closes mr, qp, cq, pd, ctx: in that order
 * }</pre>
 *
 * <p>Closing twice throws {@code IllegalStateException}, and so does every call that needs the C
 * object after close (accessors of what was fixed at creation, such as a region's keys, still
 * answer): the C struct is a segment of the resource's own arena, which {@code close()} closes, so
 * a freed pointer never reaches C. If the C destroy verb fails, {@code close()} throws {@code VerbsException} and the
 * resource stays open and usable, to be closed again later.
 *
 * <h2 id="threads">Threads</h2>
 *
 * <ul>
 *   <li><b>Resources</b> may be shared between threads: posting, polling and queries may be called
 *       from several threads at once (the provider locks its queues). The usual model is still one
 *       thread per queue: a completion queue polled by several threads hands each completion to one
 *       of them.</li>
 *   <li><b>Confined views</b> are the fast form for one thread per queue:
 *       {@link io.github.panamaverbs.verbs.CompletionQueue#confined()} and
 *       {@link io.github.panamaverbs.verbs.QueuePair#confined()} give the calling thread a view whose
 *       {@code poll}, {@code postSend} and {@code postReceive} pass the queue as a plain address (no
 *       arena is acquired per call). Only that thread may use or close the view, and the queue cannot
 *       close while a view of it is open (closing it throws, naming the view), so a call never reaches
 *       freed memory. Close the view in its thread before the queue: try-with-resources.</li>
 *   <li><b>Requests and completion batches are not thread-safe.</b> A {@code SendRequest},
 *       {@code ReceiveRequest} or {@code WorkCompletions} is used by one thread at a time: do not
 *       change a request while another thread posts it, and give each polling thread its own batch.
 *       The attribute builders ({@code QpAttributes}, {@code QpInitAttributes},
 *       {@code ConnectOptions}) are mutable too, and meant for one thread.</li>
 *   <li><b>Immutable values</b> may be shared freely: {@code Device}, {@code Gid}, the records
 *       ({@code RemoteEndpoint}, {@code AddressVector}, {@code GidEntry}, {@code QpCapabilities},
 *       {@code SrqAttributes}, {@code AsyncEvent}), the snapshots {@code DeviceAttributes} and
 *       {@code PortAttributes}, and the enums.</li>
 *   <li><b>Closing while other threads use a resource.</b> {@code close()} may be called while other
 *       threads post to or poll the resource: it waits for a gap between their calls (for at most
 *       2 s; a thread that stays inside a call longer makes {@code close()} throw
 *       {@code IllegalStateException} and leaves the resource open), after which their next call
 *       throws {@code IllegalStateException} ("... is closed") instead of reaching freed memory.
 *       Threads waiting in {@link io.github.panamaverbs.verbs.CompletionChannel#awaitEvent(java.time.Duration)}
 *       or {@link io.github.panamaverbs.verbs.Context#nextAsyncEvent(java.time.Duration)} notice the
 *       close within about 50 ms and throw {@code IllegalStateException}. To stop a resource that
 *       other threads use, close it and let them end on that exception.</li>
 *   <li>Creating and closing resources belongs to setup and teardown: do not close a parent while
 *       another thread is still creating children of it.</li>
 * </ul>
 *
 * <h2 id="buffers">When a posted buffer may be reused</h2>
 *
 * <ul>
 *   <li><b>The memory a posted work request names belongs to the device until that request's
 *       completion has been polled</b> from its completion queue: do not change, reuse or free the
 *       bytes of a send or RDMA-write source, nor read those of a receive, RDMA-read or atomic
 *       target, before then. A completion with an error status (including {@code WR_FLUSH_ERR}, when
 *       the queue pair went to the error state) also gives the memory back.</li>
 *   <li>A send posted without {@code signaled(true)} (on a queue pair without
 *       {@link io.github.panamaverbs.verbs.QpInitAttributes#signalAll(boolean) signalAll}) has no
 *       completion of its own: its memory is free once a later signaled send of the same queue pair
 *       has completed, since a send queue completes in order.</li>
 *   <li>Inline data ({@link io.github.panamaverbs.verbs.SendRequest#inlineData(java.lang.foreign.MemorySegment)})
 *       is copied when the request is posted: it may be reused as soon as {@code postSend} returns.</li>
 *   <li>The request object itself is copied by the provider when it is posted: a
 *       {@code SendRequest} or {@code ReceiveRequest} may be changed and posted again as soon as
 *       {@code postSend} / {@code postReceive} returns; only the memory it names must wait for the
 *       completion.</li>
 *   <li><b>Registered memory is never freed under the device.</b> A region is tied to the arena of
 *       its memory: one made by
 *       {@link io.github.panamaverbs.verbs.ProtectionDomain#allocateAndRegister(long, AccessFlag...)}
 *       owns its memory and frees it only after deregistering, when the region is closed; one made by
 *       {@link io.github.panamaverbs.verbs.ProtectionDomain#register(java.lang.foreign.Arena, java.lang.foreign.MemorySegment, AccessFlag...)}
 *       is deregistered when the caller's arena closes, before the arena frees the memory. Work that
 *       reaches a deregistered region fails with an error completion instead of writing into memory
 *       that belongs to something else, and posting a request whose region is closed, or whose
 *       memory is freed, throws {@code IllegalStateException} in Java. Still, close a region (or its
 *       arena) only once the requests that use it have completed.</li>
 * </ul>
 *
 * <h2 id="example">Example</h2>
 *
 * An RDMA write between two queue pairs of one device (the same code connects queue pairs on two
 * hosts once their endpoints are exchanged); it is the first example of the project's README:
 *
 * {@snippet file="io/github/panamaverbs/verbs/ReadmeExampleTest.java" region="readme"}
 *
 * The test that holds it compiles it, and runs it on a device; {@code src} may be reused, and
 * {@code dst} read, only once the write's completion is polled.
 */
package io.github.panamaverbs.verbs;
