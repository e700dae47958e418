package io.github.panamaverbs.channel;

import io.github.panamaverbs.cm.Connection;
import io.github.panamaverbs.cm.Listener;
import io.github.panamaverbs.verbs.CompletionChannel;
import io.github.panamaverbs.verbs.CompletionQueue;
import io.github.panamaverbs.verbs.Context;
import io.github.panamaverbs.verbs.MemoryRegion;
import io.github.panamaverbs.verbs.ReceiveRequest;
import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.WcStatus;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A reliable, ordered message channel over one RC connection made by rdma_cm (Soft-RoCE, iWARP,
 * RoCE, InfiniBand alike), with credit-based flow control: a message is sent only into a receive
 * the peer has posted, so no send ever meets an empty receive queue (on iWARP, which has no
 * receiver-not-ready retry, one would break the connection).
 *
 * <p><b>Rings.</b> Each side registers a send ring and a receive ring of {@link Config#slots(int)}
 * slots of {@link Config#messageSize(int)} bytes once, when the channel is made, and posts every
 * receive before the peer can send. A message of up to {@link #slotSize()} bytes (the smaller of
 * the two sides' message sizes) occupies one slot.
 *
 * <p><b>Large messages.</b> A larger one, up to {@link #maxMessageSize()} (the receiver's
 * {@link Config#largestMessage(int)}), goes by rendezvous, with nothing different for the
 * application: the sender copies it into registered memory of its own and sends its address and
 * key in a slot; the receiver reads it from there with an RDMA READ into memory it registers for
 * it, then tells the sender with an 8-byte RDMA WRITE that its copy is free again. The receiver
 * reads one large message at a time, as it polls; the message is given in order, when read, and
 * holds a slot's credit until it is released, as any other.
 *
 * <p><b>Credits.</b> A side may have as many messages in flight as the peer has receives posted.
 * The receiver reposts a slot's receive when the application {@linkplain Received#close() releases}
 * the message and tells the sender in the header of its next message; when half its ring has been
 * released since, or the sender has used every credit it was told of, it sends the credits alone,
 * in a message that uses one of two receives each side keeps beyond its credits (at most two such
 * messages can be unread at a time). A sender without credit waits, parking a
 * virtual thread, until credit comes or its timeout passes.
 *
 * <p><b>Zero copy.</b> {@link #claim(Duration)} gives a slot of the registered send ring to fill
 * and {@link Outgoing#commit(int)} sends it; {@link #receive(Duration)} gives a view of the
 * registered receive ring, valid until {@link Received#close()}. {@link #send(MemorySegment, Duration)}
 * copies once, for convenience.
 *
 * <p><b>Waiting.</b> The channel's completion queue has a completion channel of its own: one of the
 * threads waiting on the channel waits for its events (through the library's event loop, so a
 * virtual thread parks), the others wait for that one; with {@link Config#busyPoll(boolean)} it
 * spins instead, for the lowest latency. No thread is dedicated to a channel. Any number of threads
 * may send and receive on one channel.
 *
 * <p><b>The end.</b> When the peer closes the channel or is gone (its receives flush), or a
 * transfer fails, every waiting call and every later one throws {@link ChannelException} naming
 * the peer. {@link #close()} disconnects and frees everything; a message not yet released is then
 * unreadable (its segment's memory is deregistered and freed, so a read throws).
 */
public final class MessageChannel implements AutoCloseable {
    /**
     * Each slot starts with the header, one int: the kind of message in its top two bits ({@link #DATA},
     * {@link #CREDITS_ONLY}, {@link #RENDEZVOUS}) and the sender's grant in the others (the receives it
     * has posted, counted modulo 2^30). The message's length is what the completion says less this.
     * Small, so that a 64-byte message travels in 68: Soft-RoCE checksums 79 bytes or more with the
     * CPU's vector unit, whose state the kernel then saves and restores (5 us a message on an emulated CPU).
     */
    static final int HEADER = 4;
    private static final int DATA = 0;
    /** Receives each side posts beyond its credits, for messages that carry only credits. */
    static final int RESERVE = 2;
    private static final int CREDITS_ONLY = 1;
    /** The length of a message that announces a large one: its payload is a {@link #DESCRIPTOR}. */
    private static final int RENDEZVOUS = 2;
    private static final int GRANT = (1 << 30) - 1;
    /**
     * Where slots start in their (page-aligned) rings: at multiples of this, so that a small message
     * never straddles a page. SoftiWARP copies a short send into its packet's header buffer, and until
     * the kernel fix of 2026 ("RDMA/siw: Fix length of first chunk in siw_try_1seg()", not in Debian's
     * 6.1 or 6.12) it copies one that crosses a page wrongly when its transmit thread sends it: the peer
     * reads the first byte twice and the header shifted. Aligned slots also keep each message on cache
     * lines of its own.
     */
    private static final int SLOT_ALIGN = 64;
    /**
     * What a rendezvous message carries: the address of the sender's copy (8 bytes), its length (4),
     * its rkey (4) and its sequence number (8), which the receiver writes into the 8 bytes before the
     * copy when it has read it.
     */
    private static final int DESCRIPTOR = 24;
    /** The private data of both sides: magic, version, slots, message size, largest message taken. */
    private static final int MAGIC = 0x50564d43; // "PVMC"
    private static final int VERSION = 3;
    private static final int PRIVATE_DATA = 20;
    private static final long RECEIVE_ID = 1L << 32;
    /** The ids of one-sided operations ({@link RemoteMemory}): this bit and the operation's slot. */
    private static final long ONE_SIDED_ID = 1L << 33;
    /** The receiver's rendezvous READ (this bit) and its WRITE that frees the sender's copy (and bit 0). */
    private static final long RENDEZVOUS_ID = 1L << 34;
    /** Registered memory for large messages is allocated in steps of this, so that it can be reused. */
    private static final long STEP = 64 * 1024;
    private static final java.lang.invoke.VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();
    private static final long SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    /** Busy polling: the polls between two looks at the deadline. */
    private static final int BUSY_SPINS = 64;

    /** The channel's sizes and how it waits. Mutable and not thread-safe. */
    public static final class Config {
        int messageSize = 4096;
        int slots = 16;
        int remoteOps = 8;
        int largest = 64 << 20;
        boolean busyPoll;
        java.util.function.Function<Context, io.github.panamaverbs.verbs.ProtectionDomain> protectionDomain;

        /** Defaults: 16 slots of 4096 bytes each way, waiting on completion events. */
        public Config() {
        }

        /**
         * The bytes per slot of each ring: the largest message this side receives (and sends) in a
         * slot; larger ones go by rendezvous, up to {@link #largestMessage(int)}.
         *
         * @param bytes 1 to 1 GiB
         * @return this config
         * @throws IllegalArgumentException if out of range
         */
        public Config messageSize(int bytes) {
            if (bytes < 1 || bytes > (1 << 30)) {
                throw new IllegalArgumentException("message size must be in [1, 2^30], not " + bytes);
            }
            this.messageSize = bytes;
            return this;
        }

        /**
         * The slots of each ring: how many messages the peer may send before this side releases one.
         *
         * @param n 2 to 4096
         * @return this config
         * @throws IllegalArgumentException if out of range
         */
        public Config slots(int n) {
            if (n < 2 || n > 4096) {
                throw new IllegalArgumentException("slots must be in [2, 4096], not " + n);
            }
            this.slots = n;
            return this;
        }

        /**
         * The largest message this side receives: those larger than a slot come by rendezvous (the
         * receiver registers memory for each while it is unreleased, reusing it where it can).
         * {@link #messageSize(int)} or less allows none; so does a message size under 24 bytes on
         * either side (a slot holds the rendezvous's address and key).
         *
         * @param bytes 1 to 2^31 - 8 (default 64 MiB)
         * @return this config
         * @throws IllegalArgumentException if out of range
         */
        public Config largestMessage(int bytes) {
            if (bytes < 1 || bytes > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException("the largest message must be in [1, 2^31 - 8], not " + bytes);
            }
            this.largest = bytes;
            return this;
        }

        /**
         * How many one-sided operations ({@link RemoteMemory}) may be in flight at once; more wait.
         *
         * @param n 1 to 256
         * @return this config
         * @throws IllegalArgumentException if out of range
         */
        public Config remoteOperations(int n) {
            if (n < 1 || n > 256) {
                throw new IllegalArgumentException("remote operations must be in [1, 256], not " + n);
            }
            this.remoteOps = n;
            return this;
        }

        /**
         * The caller's protection domain for the channel's connection and rings, given the device
         * context (see {@link Connection.Config#protectionDomain}): memory the application registers
         * in it once, e.g. a table it exports with {@link RegionToken}, serves every channel.
         *
         * @param pd gives the protection domain for a context; the channel does not close it
         * @return this config
         */
        public Config protectionDomain(java.util.function.Function<Context, io.github.panamaverbs.verbs.ProtectionDomain> pd) {
            this.protectionDomain = Objects.requireNonNull(pd, "pd");
            return this;
        }

        /**
         * Whether waiting threads spin on the completion queue (lowest latency, a CPU each) instead
         * of waiting for completion events.
         *
         * @param on true to spin
         * @return this config
         */
        public Config busyPoll(boolean on) {
            this.busyPoll = on;
            return this;
        }

        /** The largest message this side takes, in a slot or by rendezvous (told to the peer at connect). */
        int largestTaken() {
            return Math.max(largest, messageSize);
        }
    }

    private final Connection connection;
    private final Setup setup;
    private final int slots;
    private final int slotBytes;
    /** The distance between two slots of a ring: {@link #slotBytes} rounded up to {@link #SLOT_ALIGN}. */
    private final int stride;
    /** The largest message in a slot, and the largest message {@link #send} takes (rendezvous included). */
    private final int slotMessage;
    private final int maxMessage;
    private final String name;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    /**
     * Admit at most a ring's worth of senders, and one receiver, to the wait for credit or a message
     * at a time; the others park here in order (fair), woken one by one, so that thousands of
     * threads sending on one channel are not all woken at each completion.
     */
    private final Semaphore claimers;
    private final Semaphore receivers = new Semaphore(1, true);
    /** Held by the one thread that polls or waits on the completion queue. */
    private final AtomicBoolean poller = new AtomicBoolean();
    /**
     * The threads waiting for the poller ({@link #progress}); written under lock, read by the poller
     * as it leaves, which signals them only when there are some.
     */
    private volatile int waiting;
    /** Counts what waiting threads wait for: completions handled, slots and operations given back, the end; under lock. */
    private long progressed;
    private final WorkCompletions batch = new WorkCompletions(32);
    private final SendRequest[] sends;
    /** Whether each slot's request is signaled now (set only when it changes). */
    private final boolean[] signaledNow;
    private final ReceiveRequest[] receives;
    /**
     * The data slots released and not yet posted again, posted together in one call once there are
     * {@link #repostBatch}, or at once while the peer holds half its credits or less; under lock.
     */
    private final int[] toRepost;
    private int toRepostCount;
    private final int repostBatch;
    /** Each send slot's bytes after the header, and each receive slot's (read-only): made once, handed out as they are. */
    private final MemorySegment[] sendViews;
    private final MemorySegment[] receiveViews;
    // ---- under lock
    private final Slots freeSlots;
    /**
     * The slots posted and not yet known to be sent, in the order posted: a ring of {@link #slots}
     * from {@link #postedHead}. Only every {@link #signalEvery}-th send asks for a completion (and
     * one that takes the last free slot): on RC a send's completion means that every send posted
     * before it is done too, so it frees them all.
     */
    private final int[] postedOrder;
    private int postedHead;
    private int postedCount;
    private final int signalEvery;
    private int sinceSignaled;
    private final ArrayDeque<Received> arrived = new ArrayDeque<>();
    /** Data messages claimed (each takes a credit), in total. */
    private int claimed;
    /** The peer's data receives posted in total, as it last told. */
    private int peerPosted;
    /** This side's data receives posted in total, and the last such count told to the peer. */
    private int posted;
    private int told;
    /** Data messages received in total: the peer has used that many of the credits it was told of. */
    private int received;
    /** Set once, under lock, when the channel ends; read without it by {@link #check()}. */
    private volatile ChannelException broken;
    private final Slots freeOps;
    private final SendRequest[] ops;
    private final boolean[] opDone;
    private final WcStatus[] opStatus;
    private final boolean atomics;
    // ---- rendezvous, under lock
    /** The sender's registered copies of large messages: each free once the receiver wrote its sequence number into it. */
    private final java.util.List<Staged> staged = new java.util.ArrayList<>();
    private long stagedSequence;
    /** Large messages announced and not yet read, in order; the one being read. */
    private final ArrayDeque<Received> toRead = new ArrayDeque<>();
    private Received reading;
    private long readsDone;
    /** Registered memory of large messages received and not released, and one released kept for reuse. */
    private final java.util.Set<MemoryRegion> landings = new java.util.HashSet<>();
    private MemoryRegion spareLanding;
    private final SendRequest rendezvousRead = new SendRequest(1).id(RENDEZVOUS_ID).opcode(SendOpcode.RDMA_READ).signaled(true);
    private final SendRequest rendezvousDone = new SendRequest(1).id(RENDEZVOUS_ID | 1).opcode(SendOpcode.RDMA_WRITE).signaled(true);

    /** A registered copy of a large message being sent; its first 8 bytes are where the receiver writes {@link #sequence} when read. */
    private static final class Staged {
        final MemoryRegion region;
        long sequence;
        boolean taken;

        Staged(MemoryRegion region) {
            this.region = region;
        }

        long capacity() {
            return region.segment().byteSize() - 8;
        }

        boolean free() {
            return !taken && (long) WORD.getVolatile(region.segment(), 0L) == sequence;
        }
    }

    /** Free slot numbers, the last freed taken first (its memory is the likeliest to be in cache). */
    private static final class Slots {
        private final int[] items;
        private int size;

        Slots(int capacity) {
            items = new int[capacity];
        }

        boolean isEmpty() {
            return size == 0;
        }

        int size() {
            return size;
        }

        int pop() {
            return items[--size];
        }

        void push(int slot) {
            items[size++] = slot;
        }
    }

    /** What the connection's hook makes: the rings, the queue and its completion channel. */
    private static final class Setup {
        final Config config;
        final int slotBytes;
        final int stride;
        CompletionChannel events;
        CompletionQueue cq;
        MemoryRegion sendRing;
        MemoryRegion receiveRing;
        /** Eight bytes per one-sided operation slot: where an atomic's old value lands. */
        MemoryRegion scratch;
        ReceiveRequest[] receives;

        Setup(Config config) {
            this.config = Objects.requireNonNull(config, "config");
            this.slotBytes = HEADER + config.messageSize;
            this.stride = (slotBytes + SLOT_ALIGN - 1) & -SLOT_ALIGN;
        }

        Connection.Config connectionConfig() {
            int slots = config.slots;
            Connection.Config connection = new Connection.Config();
            if (config.protectionDomain != null) {
                connection.protectionDomain(config.protectionDomain);
            }
            // the send queue: the ring's sends, the one-sided operations, a rendezvous READ and WRITE
            return connection.maxSendWr(slots + config.remoteOps + 2).maxRecvWr(slots + RESERVE)
                    .completionQueue(this::queue)
                    .beforeConnect(c -> {
                        sendRing = c.own(c.protectionDomain().allocateAndRegister((long) slots * stride));
                        receiveRing = c.own(c.protectionDomain().allocateAndRegister((long) (slots + RESERVE) * stride));
                        // a word per one-sided operation, and two for the rendezvous WRITEs
                        scratch = c.own(c.protectionDomain().allocateAndRegister(8L * config.remoteOps + 16));
                        receives = new ReceiveRequest[slots + RESERVE];
                        for (int i = 0; i < receives.length; i++) {
                            receives[i] = new ReceiveRequest(1).id(RECEIVE_ID | i).sge(receiveRing, (long) i * stride, slotBytes);
                            c.queuePair().postReceive(receives[i]);
                        }
                        c.privateData(ByteBuffer.allocate(PRIVATE_DATA).putInt(MAGIC).putInt(VERSION).putInt(slots)
                                .putInt(config.messageSize).putInt(config.largestTaken()).array());
                    });
        }

        private CompletionQueue queue(Context ctx) {
            if (cq == null) {
                CompletionChannel ch = config.busyPoll ? null : ctx.createCompletionChannel();
                try {
                    int entries = 2 * config.slots + RESERVE + config.remoteOps + 2;
                    cq = ch == null ? ctx.createCompletionQueue(entries) : ctx.createCompletionQueue(entries, ch, 0);
                } catch (RuntimeException | Error e) {
                    if (ch != null) {
                        ch.close();
                    }
                    throw e;
                }
                events = ch;
            }
            return cq;
        }

        /** After a failed connect or accept (the connection closed itself): the queue and channel. */
        void closeQueue(Throwable cause) {
            for (AutoCloseable r : new AutoCloseable[] {cq, events}) {
                if (r != null) {
                    try {
                        r.close();
                    } catch (Exception e) {
                        cause.addSuppressed(e);
                    }
                }
            }
        }
    }

    /**
     * Connects to a channel server ({@link #accept}) at {@code server}.
     *
     * @param server  the server's address and port
     * @param config  this side's sizes
     * @param timeout the longest each step of connecting may take
     * @return the channel; close it
     * @throws io.github.panamaverbs.cm.ConnectionException if the connection cannot be made
     * @throws ChannelException                            if the peer is not a channel (its private data)
     */
    public static MessageChannel connect(InetSocketAddress server, Config config, Duration timeout) {
        ChannelEvents.Open event = new ChannelEvents.Open();
        event.begin();
        Setup setup = new Setup(config);
        Connection c;
        try {
            c = Connection.connect(server, setup.connectionConfig(), timeout);
        } catch (RuntimeException | Error e) {
            setup.closeQueue(e);
            throw e;
        }
        return opened(open(c, setup), event, "client");
    }

    /**
     * Accepts the next connection on {@code listener} as a channel.
     *
     * @param listener the listener
     * @param config   this side's sizes
     * @param timeout  how long to wait for a request, and then for the connection
     * @return the channel; close it before the listener
     * @throws io.github.panamaverbs.cm.ConnectionException if no request comes in time, or the connection fails
     * @throws ChannelException                            if the peer is not a channel
     */
    public static MessageChannel accept(Listener listener, Config config, Duration timeout) {
        ChannelEvents.Open event = new ChannelEvents.Open();
        event.begin();
        Setup setup = new Setup(config);
        Connection c;
        try {
            c = listener.accept(setup.connectionConfig(), timeout);
        } catch (RuntimeException | Error e) {
            setup.closeQueue(e);
            throw e;
        }
        return opened(open(c, setup), event, "server");
    }

    /** Commits the Flight Recorder event of a channel made (its duration: from the connect or accept call). */
    private static MessageChannel opened(MessageChannel channel, ChannelEvents.Open event, String side) {
        if (event.shouldCommit()) {
            event.channel = channel.name;
            event.side = side;
            event.slots = channel.slots;
            event.messageSize = channel.slotMessage;
            event.commit();
        }
        return channel;
    }

    /** Commits the Flight Recorder event of the channel's end, once; under lock. */
    private void ended(String reason) {
        ChannelEvents.End event = new ChannelEvents.End();
        if (event.shouldCommit()) {
            event.channel = name;
            event.reason = reason;
            event.sent = claimed;
            event.received = received;
            event.commit();
        }
    }

    private static MessageChannel open(Connection c, Setup setup) {
        try {
            return new MessageChannel(c, setup);
        } catch (RuntimeException | Error e) {
            try {
                c.close();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            setup.closeQueue(e);
            throw e;
        }
    }

    private MessageChannel(Connection connection, Setup setup) {
        this.connection = connection;
        this.setup = setup;
        this.slots = setup.config.slots;
        this.claimers = new Semaphore(slots, true);
        this.slotBytes = setup.slotBytes;
        this.stride = setup.stride;
        this.receives = setup.receives;
        this.name = "MessageChannel[" + route(connection) + "]";
        ByteBuffer peer = ByteBuffer.wrap(connection.peerPrivateData());
        if (peer.remaining() < 8 || peer.getInt() != MAGIC) {
            throw new ChannelException(name + ": the peer is not a message channel (its private data has no channel header)");
        }
        int version = peer.getInt();
        if (version != VERSION) {
            throw new ChannelException(name + ": the peer speaks channel version " + version + ", this side " + VERSION);
        }
        if (peer.remaining() < PRIVATE_DATA - 8) {
            throw new ChannelException(name + ": the peer's channel header is " + (peer.remaining() + 8) + " bytes, not " + PRIVATE_DATA);
        }
        this.peerPosted = peer.getInt();
        int peerMessage = peer.getInt();
        int peerLargest = peer.getInt();
        this.slotMessage = Math.min(setup.config.messageSize, peerMessage);
        this.maxMessage = slotMessage >= DESCRIPTOR ? Math.max(slotMessage, peerLargest) : slotMessage;
        this.posted = slots;
        this.told = slots;
        this.sends = new SendRequest[slots];
        this.signaledNow = new boolean[slots];
        this.toRepost = new int[slots];
        this.repostBatch = Math.max(1, slots / 4);
        this.postedOrder = new int[slots];
        this.signalEvery = Math.max(1, slots / 2);
        this.freeSlots = new Slots(slots);
        this.sendViews = new MemorySegment[slots];
        for (int i = slots - 1; i >= 0; i--) {
            // solicited: the peer waiting on events wakes for messages only, not its own sends' completions
            sends[i] = new SendRequest(1).id(i).opcode(SendOpcode.SEND).solicited(true)
                    .sge(setup.sendRing, (long) i * stride, slotBytes); // each post sets only the length
            sendViews[i] = setup.sendRing.segment().asSlice((long) i * stride + HEADER, slotMessage);
            freeSlots.push(i);
        }
        this.receiveViews = new MemorySegment[slots + RESERVE];
        for (int i = 0; i < receiveViews.length; i++) {
            receiveViews[i] = setup.receiveRing.segment().asSlice((long) i * stride + HEADER, setup.config.messageSize).asReadOnly();
        }
        int remoteOps = setup.config.remoteOps;
        this.ops = new SendRequest[remoteOps];
        this.opDone = new boolean[remoteOps];
        this.opStatus = new WcStatus[remoteOps];
        this.freeOps = new Slots(remoteOps);
        for (int i = remoteOps - 1; i >= 0; i--) {
            ops[i] = new SendRequest(1).id(ONE_SIDED_ID | i).signaled(true);
            freeOps.push(i);
        }
        this.atomics = connection.id().context().queryDevice().atomicCap() != 0;
    }

    private static String route(Connection c) {
        InetSocketAddress local = c.id().localAddress();
        InetSocketAddress peer = c.peerAddress();
        return (local == null ? "?" : hostPort(local)) + " -> " + (peer == null ? "?" : hostPort(peer));
    }

    private static String hostPort(InetSocketAddress a) {
        String host = a.getAddress() != null ? a.getAddress().getHostAddress() : a.getHostString();
        return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + a.getPort();
    }

    /**
     * {@return the largest message {@link #send} takes: the peer's {@link Config#largestMessage(int)},
     * or {@link #slotSize()} where the channel has no rendezvous (a side's slots under 24 bytes)}
     */
    public int maxMessageSize() {
        return maxMessage;
    }

    /** {@return the largest message in one slot, what {@link #claim} gives: the smaller of the two sides' message sizes} */
    public int slotSize() {
        return slotMessage;
    }

    /** {@return the connection under the channel (its queue pair is the channel's: do not post to it)} */
    public Connection connection() {
        return connection;
    }

    /**
     * Sends a copy of {@code data}, waiting at most {@code timeout} for a slot and a credit: a
     * {@link #claim(int, Duration)} of its size, the copy, and the commit. A message larger than
     * {@link #slotSize()} goes by rendezvous.
     *
     * @param data    the message, at most {@link #maxMessageSize()} bytes (0 is a message too)
     * @param timeout the longest to wait for credit
     * @return true if sent (posted: it arrives unless the connection breaks), false if no credit came in time
     * @throws IllegalArgumentException if {@code data} is larger than {@link #maxMessageSize()}
     * @throws ChannelException         if the channel is closed or broken
     */
    public boolean send(MemorySegment data, Duration timeout) {
        Objects.requireNonNull(data, "data");
        if (data.byteSize() > maxMessage) {
            throw tooLarge(data.byteSize(), maxMessage);
        }
        int size = (int) data.byteSize();
        Outgoing out = claim(size, timeout);
        if (out == null) {
            return false;
        }
        MemorySegment.copy(data, 0, out.segment(), 0, size);
        out.commit(size);
        return true;
    }

    private IllegalArgumentException tooLarge(long size, int limit) {
        return new IllegalArgumentException(name + ": a message of " + size + " bytes is larger than the channel's "
                + limit + (limit == slotMessage ? " (a slot: the smaller of the two sides' Config.messageSize)"
                : " (the peer's Config.largestMessage)"));
    }

    /**
     * Claims room for a message of up to {@code size} bytes, and a credit, waiting at most
     * {@code timeout}: fill {@link Outgoing#segment()} and {@link Outgoing#commit(int)} it. Up to
     * {@link #slotSize()} it is a slot of the send ring, as {@link #claim(Duration)} gives; a larger
     * size is registered memory of this side, which the commit sends by rendezvous (the peer reads
     * it with an RDMA READ: the message is written once, where it leaves from), or copies into a
     * slot when what was written fits one. That memory is reused once the peer has read it, and
     * waited for when every slot's worth is unread.
     *
     * @param size    the most bytes the message will have, up to {@link #maxMessageSize()}
     * @param timeout the longest to wait for credit (and for registered memory)
     * @return the room, or null if none came in time
     * @throws IllegalArgumentException if {@code size} is negative or larger than {@link #maxMessageSize()}
     * @throws ChannelException         if the channel is closed or broken
     */
    public Outgoing claim(int size, Duration timeout) {
        return claimUntil(size, deadline(timeout));
    }

    /** {@link #claim(int, Duration)} for at most {@code nanos}: the clock is read only when there is no slot or credit now. */
    Outgoing claimFor(int size, long nanos) {
        if (size >= 0 && size <= slotMessage) {
            Outgoing out = takeSlot();
            if (out != null) {
                return out;
            }
        }
        return claimUntil(size, System.nanoTime() + nanos);
    }

    /** {@link #claim(int, Duration)} until {@code deadline} ({@link System#nanoTime()}). */
    Outgoing claimUntil(int size, long deadline) {
        if (size < 0 || size > maxMessage) {
            throw size < 0 ? new IllegalArgumentException("negative size " + size) : tooLarge(size, maxMessage);
        }
        if (size <= slotMessage) {
            Outgoing out = takeSlot();
            return out != null ? out : claimUntil(deadline);
        }
        Staged copy = stage(size, deadline);
        if (copy == null) {
            return null;
        }
        Outgoing out = null;
        try {
            out = takeSlot();
            if (out == null) {
                out = claimUntil(deadline);
            }
        } finally {
            if (out == null) {
                unstage(copy);
            }
        }
        if (out != null) {
            out.copy = copy;
            out.capacity = size;
        }
        return out;
    }

    /** Gives back a staged copy that was taken (free again once the peer has read what it sent from it). */
    private void unstage(Staged copy) {
        lock.lock();
        try {
            copy.taken = false;
            advanced();
        } finally {
            lock.unlock();
        }
    }

    /**
     * A registered copy of at least {@code size} bytes that the peer has read (or never had), taken;
     * a new one while fewer than a ring's are held; else waits until {@code deadline} for one.
     */
    private Staged stage(long size, long deadline) {
        while (true) {
            long seen;
            lock.lock();
            try {
                check();
                seen = progressed;
                Staged best = null;
                Staged small = null;
                for (Staged s : staged) {
                    if (s.free()) {
                        if (s.capacity() >= size && (best == null || s.capacity() < best.capacity())) {
                            best = s;
                        } else if (s.capacity() < size) {
                            small = s;
                        }
                    }
                }
                if (best == null && (staged.size() < slots || small != null)) {
                    if (small != null) { // too small for this one: give its memory back for a larger one
                        staged.remove(small);
                        small.region.close();
                    }
                    best = new Staged(connection.protectionDomain().allocateAndRegister(steps(size) + 8,
                            io.github.panamaverbs.verbs.AccessFlag.REMOTE_READ, io.github.panamaverbs.verbs.AccessFlag.REMOTE_WRITE));
                    staged.add(best);
                }
                if (best != null) {
                    best.taken = true;
                    return best;
                }
            } finally {
                lock.unlock();
            }
            if (!progress(deadline, seen)) {
                return null;
            }
        }
    }

    private static long steps(long size) {
        return (size + STEP - 1) / STEP * STEP;
    }

    /**
     * Claims a slot of the registered send ring and a credit, waiting at most {@code timeout}: fill
     * {@link Outgoing#segment()} and {@link Outgoing#commit(int)} it, or close it to give both back.
     *
     * @param timeout the longest to wait for credit
     * @return the slot, or null if no credit came in time
     * @throws ChannelException if the channel is closed or broken
     */
    public Outgoing claim(Duration timeout) {
        long deadline = deadline(timeout);
        Outgoing out = takeSlot();
        return out != null ? out : claimUntil(deadline);
    }

    /**
     * Claims a slot of the send ring and a credit if both are free now, without waiting: the
     * non-blocking form of {@link #claim(Duration)}. When none is, it reads the completion queue once
     * (a send that completed frees its slot) and looks again.
     *
     * @return the slot, or null if there is no slot or no credit now ({@link #sendable()} is 0)
     * @throws ChannelException if the channel is closed or broken
     */
    public Outgoing tryClaim() {
        Outgoing out = takeSlot();
        if (out == null && poll() > 0) {
            out = takeSlot();
        }
        return out;
    }

    /**
     * {@return how many messages could be claimed now without waiting: the free slots of the send
     * ring, or the peer's credits if fewer} A non-blocking sender stops at 0 (back-pressure) and
     * tries again after {@link #poll()} handled completions.
     *
     * @throws ChannelException if the channel is closed or broken
     */
    public int sendable() {
        lock.lock();
        try {
            check();
            return Math.max(0, Math.min(freeSlots.size(), peerPosted - claimed));
        } finally {
            lock.unlock();
        }
    }

    /** A slot and a credit if both are free now, else null. */
    private Outgoing takeSlot() {
        lock.lock();
        try {
            check();
            return freeSlots.isEmpty() || peerPosted - claimed <= 0 ? null : claimSlot();
        } finally {
            lock.unlock();
        }
    }

    /** Takes a free slot and a credit, both known to be there; under lock. */
    private Outgoing claimSlot() {
        claimed++;
        return new Outgoing(freeSlots.pop());
    }

    private Outgoing claimUntil(long deadline) {
        if (!claimers.tryAcquire() && !admit(claimers, deadline)) {
            return null;
        }
        try {
            return claimWithin(deadline);
        } finally {
            claimers.release();
        }
    }

    /**
     * Waits at most until {@code deadline} for a permit of {@code gate}, parked without waking in
     * between (thousands of threads may wait here); the channel's end releases every waiter
     * ({@link #wakeAll}), which then finds it broken.
     */
    private boolean admit(Semaphore gate, long deadline) {
        lock.lock();
        try {
            check();
        } finally {
            lock.unlock();
        }
        try {
            return gate.tryAcquire(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ChannelException(name + ": interrupted while waiting");
        }
    }

    private Outgoing claimWithin(long deadline) {
        ChannelEvents.CreditStall stall = null; // made when the first look finds no credit or no slot
        try {
            while (true) {
                long seen;
                lock.lock();
                try {
                    check();
                    if (!freeSlots.isEmpty() && peerPosted - claimed > 0) {
                        stalled(stall, "credit came");
                        return claimSlot();
                    }
                    if (freeSlots.isEmpty()) {
                        wakeForAll(); // a slot comes back with a send's completion, which raises no event for a poller armed for messages
                    }
                    seen = progressed;
                } finally {
                    lock.unlock();
                }
                if (stall == null) {
                    stall = new ChannelEvents.CreditStall();
                    stall.begin();
                }
                if (!progress(deadline, seen)) {
                    stalled(stall, "timed out");
                    return null;
                }
            }
        } catch (ChannelException e) {
            stalled(stall, "the channel ended");
            throw e;
        }
    }

    private void stalled(ChannelEvents.CreditStall stall, String outcome) {
        if (stall != null && stall.shouldCommit()) {
            stall.channel = name;
            stall.outcome = outcome;
            stall.commit();
        }
    }

    /**
     * Waits at most {@code timeout} for the next message.
     *
     * @param timeout the longest to wait
     * @return the message, a view of the receive ring valid until it is closed; null if none came in time
     * @throws ChannelException if the channel is closed or broken (messages that arrived before are
     *                          still given first)
     */
    public Received receive(Duration timeout) {
        return receiveUntil(deadline(timeout));
    }

    /** {@link #receive(Duration)} until {@code deadline} ({@link System#nanoTime()}). */
    Received receiveUntil(long deadline) {
        Received r;
        if (!receivers.tryAcquire()) {
            r = arrivedNow(); // given without waiting at the gate
            if (r != null || !admit(receivers, deadline)) {
                return r;
            }
        }
        // no other thread polls: this one polls until its message comes, with no hand-over between
        // turns (the threads waiting meanwhile are woken by what it handles, as by any poller), and
        // takes it under the lock that handled its completion
        boolean polling = poller.compareAndSet(false, true);
        try {
            if (polling) {
                while (true) {
                    long left = deadline - System.nanoTime();
                    r = arrivedNow(); // a queue closed under a poll breaks the channel: this throws then
                    if (r != null) {
                        return r;
                    }
                    if (left <= 0) {
                        return null;
                    }
                    r = pollForMessage(left);
                    if (r != null) {
                        return r;
                    }
                }
            }
            while (true) {
                long seen;
                lock.lock();
                try {
                    r = nextArrived();
                    if (r != null) {
                        return r;
                    }
                    check();
                    seen = progressed;
                } finally {
                    lock.unlock();
                }
                if (!progress(deadline, seen)) {
                    return null;
                }
            }
        } finally {
            if (polling) {
                letPollerGo();
            }
            receivers.release();
        }
    }

    /**
     * The next message if it has arrived, without waiting: the non-blocking form of
     * {@link #receive(Duration)}. When none has, it reads the completion queue once and looks again.
     *
     * @return the message (close it once read), or null if none has arrived
     * @throws ChannelException if the channel is closed or broken (messages that arrived before are
     *                          still given first)
     */
    public Received tryReceive() {
        Received r = arrivedNow();
        if (r == null && poll() > 0) {
            r = arrivedNow();
        }
        return r;
    }

    /** The next message if it is there; else throws if the channel has ended, or returns null. */
    private Received arrivedNow() {
        lock.lock();
        try {
            Received r = nextArrived();
            if (r == null) {
                check();
            }
            return r;
        } finally {
            lock.unlock();
        }
    }

    /** The next message if it is there (a large one: read); under lock. */
    private Received nextArrived() {
        Received r = arrived.peek();
        return r != null && r.length >= 0 ? arrived.poll() : null;
    }

    private static long deadline(Duration timeout) {
        long nanos = Objects.requireNonNull(timeout, "timeout").toNanos();
        return System.nanoTime() + Math.max(0, nanos);
    }

    private void check() {
        ChannelException b = broken;
        if (b != null) {
            throw new ChannelException(b.getMessage());
        }
    }

    /**
     * Moves the channel on once: one thread polls (or waits on) the completion queue, the others wait
     * for it, unless the channel moved on since they looked ({@link #progressed} is not {@code seen}
     * any more: they look again instead of waiting for a wake-up that came already). Returns false
     * when the deadline has passed.
     */
    private boolean progress(long deadline, long seen) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            return false;
        }
        if (poller.compareAndSet(false, true)) {
            try {
                pollAsPoller(left);
            } finally {
                letPollerGo();
            }
        } else {
            lock.lock();
            try {
                if (broken == null && progressed == seen) {
                    waiting++;
                    try {
                        if (poller.get()) { // else the poller left before seeing this waiter: go round again
                            changed.awaitNanos(Math.min(left, setup.config.busyPoll ? 100_000 : SLICE_NANOS));
                        }
                    } finally {
                        waiting--;
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ChannelException(name + ": interrupted while waiting");
            } finally {
                lock.unlock();
            }
        }
        return true;
    }

    /**
     * One turn of the poller (the thread that holds {@link #poller}): polls, or waits on the events
     * at most {@code left} nanoseconds, and handles what completed. A queue closed under it breaks
     * the channel: then it returns false.
     */
    private boolean pollAsPoller(long left) {
        int n = pollTurn(left);
        if (n > 0) {
            handle(n);
        }
        return n >= 0;
    }

    /**
     * {@link #pollAsPoller}, which also takes the next message that arrived, under the lock that
     * handled the completions: the message, or null.
     */
    private Received pollForMessage(long left) {
        int n = pollTurn(left);
        if (n <= 0) {
            return null;
        }
        lock.lock();
        try {
            completedAll(n);
            return nextArrived();
        } finally {
            lock.unlock();
        }
    }

    /**
     * The poller's reading of the queue: busy polls, or a wait on the events of at most {@code left}
     * nanoseconds. Returns the completions polled into {@link #batch}, or -1 when the queue closed
     * under it (the channel is broken then).
     */
    private int pollTurn(long left) {
        try {
            if (setup.config.busyPoll) {
                // spin as C's loops and perftest's do: no PAUSE (on an emulated CPU it leaves the
                // translated code at each turn, and slows the peer's kernel too), no lock until
                // something completed; the deadline is looked at every BUSY_SPINS polls
                int n;
                int spins = 0;
                while ((n = setup.cq.poll(batch)) == 0 && ++spins < BUSY_SPINS) {
                    // poll again
                }
                return n;
            }
            return awaitCompletions(Math.min(left, SLICE_NANOS));
        } catch (IllegalStateException e) {
            if (Thread.currentThread().isInterrupted()) {
                throw new ChannelException(name + ": interrupted while waiting");
            }
            closedUnder();
            return -1;
        }
    }

    /**
     * The poller's wait on completion events, at most {@code nanos}, in the order the verbs require
     * (poll; arm; poll again; wait; poll). It arms for the peer's messages only (they are sent
     * solicited) unless a thread waits for this side's own completions: a free send slot, a one-sided
     * operation, a large message's READ. A thread that comes to wait for those while the poller is
     * armed for messages arms for every completion itself ({@link #wakeForAll()}).
     */
    private int awaitCompletions(long nanos) {
        int n = setup.cq.poll(batch);
        if (n > 0) {
            return n;
        }
        boolean messagesOnly;
        lock.lock();
        try {
            messagesOnly = !freeSlots.isEmpty() && freeOps.size() == ops.length && reading == null;
        } finally {
            lock.unlock();
        }
        setup.cq.requestNotification(messagesOnly);
        n = setup.cq.poll(batch);
        if (n > 0 || setup.events.awaitEvent(Duration.ofNanos(nanos)).isEmpty()) {
            return n;
        }
        return setup.cq.poll(batch);
    }

    /** In event mode, arms the queue for its next completion of any kind (see {@link #awaitCompletions}); under lock. */
    private void wakeForAll() {
        if (setup.events != null && broken == null) {
            try {
                setup.cq.requestNotification(false);
            } catch (IllegalStateException e) {
                breakWith(name + " is closed");
            }
        }
    }

    /** Handles the {@code n} completions polled into {@link #batch}, and wakes the threads waiting for them. */
    private void handle(int n) {
        lock.lock();
        try {
            completedAll(n);
        } finally {
            lock.unlock();
        }
    }

    /** The {@code n} completions of {@link #batch}, and the waiting threads woken; under lock. */
    private void completedAll(int n) {
        for (int i = 0; i < n; i++) {
            completed(i);
        }
        advanced();
    }

    /** Something a thread may wait for happened: counted, and the waiting threads woken; under lock. */
    private void advanced() {
        progressed++;
        if (waiting > 0) {
            changed.signalAll();
        }
    }

    /** The queue or the rings closed under a poll: the channel is closed. */
    private void closedUnder() {
        lock.lock();
        try {
            breakWith(name + " is closed");
        } finally {
            lock.unlock();
        }
    }

    /** The poller leaves; any thread waiting for it is woken, to take over the polling. */
    private void letPollerGo() {
        poller.set(false);
        if (waiting > 0) { // read after the poller is let go; a waiter looks at it after counting itself
            lock.lock();
            try {
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * Moves the channel on without waiting, the non-blocking core that the blocking calls wait in:
     * reads the completion queue once, unless another thread is reading it, and handles what
     * completed (messages arrive, send slots and credits come back, large messages are read). In event
     * mode it first takes the completion channel's pending events, so that {@link #eventFd()} is not
     * readable for them any more. A loop that owns the channel (an event loop of its own, a
     * thread per channel) calls this, then {@link #tryReceive()} and {@link #tryClaim()}.
     *
     * @return the completions handled: 0 if none, or if another thread is reading the queue
     * @throws ChannelException if the channel is closed or broken
     */
    public int poll() {
        check();
        if (!poller.compareAndSet(false, true)) {
            return 0;
        }
        try {
            if (setup.events != null) {
                while (setup.events.awaitEvent(Duration.ZERO).isPresent()) {
                    // taken and acknowledged: the descriptor is not readable for it any more
                }
            }
            int n = setup.cq.poll(batch);
            if (n > 0) {
                handle(n);
            }
            return n;
        } catch (IllegalStateException e) {
            closedUnder();
            throw new ChannelException(broken.getMessage());
        } finally {
            letPollerGo();
        }
    }

    /**
     * {@return the descriptor that becomes readable when something completes on the channel, once
     * {@link #arm()}ed: for a caller's own event loop (epoll, a Netty transport), which then calls
     * {@link #poll()}; -1 when the channel busy-polls ({@link Config#busyPoll(boolean)})}
     *
     * @throws IllegalStateException if the channel is closed
     */
    public int eventFd() {
        return setup.events == null ? -1 : setup.events.fd();
    }

    /**
     * Asks for an event on {@link #eventFd()} at the next completion, then reads the completion queue
     * once more (a completion that came before the request raises no event; the verbs require this
     * look): wait for the descriptor only when it returns 0. Do not mix with the blocking calls at
     * the same time: they arm and take the events themselves.
     *
     * @return the completions handled by the look after the request (0: wait for the descriptor)
     * @throws IllegalStateException if the channel busy-polls: it has no event descriptor
     * @throws ChannelException      if the channel is closed or broken
     */
    public int arm() {
        if (setup.events == null) {
            throw new IllegalStateException(name + " busy-polls (Config.busyPoll): it has no event descriptor to arm");
        }
        try {
            setup.cq.requestNotification(false);
        } catch (IllegalStateException e) {
            closedUnder();
            check();
        }
        return poll();
    }

    /** One completion of {@link #batch}; under lock. */
    private void completed(int i) {
        long id = batch.wrId(i);
        WcStatus status = batch.status(i);
        if ((id & ONE_SIDED_ID) != 0) {
            int op = (int) (id & 0xFFFF);
            opStatus[op] = status;
            opDone[op] = true;
            if (status != WcStatus.SUCCESS && status != WcStatus.WR_FLUSH_ERR) {
                breakWith(name + ": " + describe(ops[op]) + " failed with " + status + " (" + status.description() + ")"
                        + (status == WcStatus.REM_ACCESS_ERR || status == WcStatus.REM_INV_REQ_ERR
                        ? ": the peer " + hostPortOrUnknown() + " refused the access (its region was deregistered, as a peer "
                        + "that closes or dies deregisters its memory, or the token is stale)" : ""));
            }
            return;
        }
        if ((id & RENDEZVOUS_ID) != 0) {
            rendezvousCompleted((id & 1) == 0, status);
            return;
        }
        boolean receive = (id & RECEIVE_ID) != 0;
        if (status != WcStatus.SUCCESS) {
            if (status == WcStatus.WR_FLUSH_ERR) {
                breakWith(closedByPeer());
            } else {
                breakWith(name + ": a " + (receive ? "receive" : "send") + " failed with " + status + " ("
                        + status.description() + ")" + (status == WcStatus.RETRY_EXC_ERR ? ": the peer "
                        + hostPortOrUnknown() + " does not answer (gone, or the path to it is down)" : ""));
            }
            return;
        }
        if (!receive) {
            sent((int) id);
            maybeSendCredits();
            return;
        }
        int slot = (int) (id & 0xFFFF_FFFFL);
        long base = (long) slot * stride;
        int length = batch.byteLength(i) - HEADER;
        int header = length < 0 ? -1 : setup.receiveRing.segment().get(ValueLayout.JAVA_INT_UNALIGNED, base);
        int kind = header >>> 30;
        if (length < 0 || kind > RENDEZVOUS) {
            breakWith(name + ": a message from " + hostPortOrUnknown() + " of " + batch.byteLength(i) + " bytes has no channel "
                    + "header: the peer is not speaking this channel's protocol");
            return;
        }
        int more = ((header & GRANT) - peerPosted) << 2 >> 2; // the grant's advance, modulo 2^30
        if (more > 0) {
            peerPosted += more;
        }
        if (kind == CREDITS_ONLY) {
            repost(slot);
            return;
        }
        if (kind == RENDEZVOUS) {
            announced(slot, setup.receiveRing.segment().asSlice(base + HEADER, DESCRIPTOR), batch.byteLength(i));
            return;
        }
        received++;
        arrived.add(new Received(slot, length));
    }

    /**
     * A large message announced in slot {@code slot} (which holds its credit until it is released):
     * queued to be read, in order; under lock.
     */
    private void announced(int slot, MemorySegment descriptor, int bytes) {
        int size = bytes == HEADER + DESCRIPTOR ? descriptor.get(ValueLayout.JAVA_INT_UNALIGNED, 8) : -1;
        int largest = setup.config.largestTaken();
        if (size <= slotMessage || size > largest) {
            breakWith(name + ": a message from " + hostPortOrUnknown() + " announces " + size + " bytes by rendezvous (in "
                    + (bytes - HEADER) + "), where this side takes " + (slotMessage + 1) + " to " + largest
                    + ": the peer is not speaking this channel's protocol");
            return;
        }
        received++;
        Received r = new Received(slot, -1);
        r.address = descriptor.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
        r.size = size;
        r.rkey = descriptor.get(ValueLayout.JAVA_INT_UNALIGNED, 12);
        r.sequence = descriptor.get(ValueLayout.JAVA_LONG_UNALIGNED, 16);
        arrived.add(r);
        toRead.add(r);
        readNext();
    }

    /** Starts the READ of the next announced large message, unless one is being read; under lock. */
    private void readNext() {
        if (reading != null || toRead.isEmpty() || broken != null) {
            return;
        }
        Received r = toRead.poll();
        try {
            MemoryRegion landing = spareLanding;
            if (landing != null && landing.segment().byteSize() >= r.size) {
                spareLanding = null;
            } else {
                landing = connection.protectionDomain().allocateAndRegister(steps(r.size),
                        io.github.panamaverbs.verbs.AccessFlag.REMOTE_WRITE); // iWARP: a READ's sink is written remotely
            }
            landings.add(landing);
            r.landing = landing;
            reading = r;
            connection.queuePair().postSend(rendezvousRead.sge(landing, 0, r.size).rdma(r.address, r.rkey));
        } catch (RuntimeException e) {
            breakWith(name + ": cannot read a message of " + r.size + " bytes from " + hostPortOrUnknown() + ": " + e.getMessage());
        }
    }

    /** A rendezvous READ ({@code read}) or the WRITE after it completed; under lock. */
    private void rendezvousCompleted(boolean read, WcStatus status) {
        if (status != WcStatus.SUCCESS) {
            breakWith(status == WcStatus.WR_FLUSH_ERR
                    ? closedByPeer()
                    : name + ": " + (read ? "reading a large message from" : "telling") + " the peer " + hostPortOrUnknown()
                    + (read ? "" : " that its large message was read") + " failed with " + status + " (" + status.description() + ")"
                    + (status == WcStatus.REM_ACCESS_ERR ? ": its copy was deregistered (the peer closed, or is gone)" : ""));
            return;
        }
        if (!read) {
            return;
        }
        Received r = reading;
        reading = null;
        r.data = r.landing.segment().asSlice(0, r.size).asReadOnly();
        r.length = r.size;
        // the sender's copy is free: its sequence number into the 8 bytes before it (two words, used in turn:
        // the one written before is sent, since its WRITE was posted before this READ)
        long word = 8L * setup.config.remoteOps + 8 * (readsDone++ & 1);
        setup.scratch.segment().set(ValueLayout.JAVA_LONG, word, r.sequence);
        try {
            connection.queuePair().postSend(rendezvousDone.sge(setup.scratch, word, 8).rdma(r.address - 8, r.rkey));
        } catch (RuntimeException e) {
            breakWith(name + ": cannot post a send: " + e.getMessage());
            return;
        }
        readNext();
    }

    /** A large message's memory, released: kept for the next one if it is the largest, else deregistered; under lock. */
    private void release(MemoryRegion landing) {
        if (!landings.remove(landing)) {
            return; // the channel's close deregistered it
        }
        MemoryRegion drop = landing;
        if (broken == null && (spareLanding == null || spareLanding.segment().byteSize() < landing.segment().byteSize())) {
            drop = spareLanding;
            spareLanding = landing;
        }
        if (drop != null) {
            drop.close();
        }
    }

    /** What a flushed work request means: the connection is gone. */
    private String closedByPeer() {
        return name + ": the connection to " + hostPortOrUnknown() + " is closed (the peer closed it, or is gone)";
    }

    private String hostPortOrUnknown() {
        try {
            InetSocketAddress a = connection.peerAddress();
            return a == null ? "the peer" : hostPort(a);
        } catch (RuntimeException e) {
            return "the peer";
        }
    }

    private void breakWith(String message) {
        if (broken == null) {
            broken = new ChannelException(message);
            ended(message);
            wakeAll();
        }
        advanced();
    }

    /** Once, when the channel ends: lets every thread parked at the gates in, to find it broken. */
    private void wakeAll() {
        claimers.release(1 << 24);
        receivers.release(1 << 24);
    }

    /** Posts the receives of the released slots again, chained in one call: the peer's credits; under lock. */
    private void repostReleased() {
        int n = toRepostCount;
        toRepostCount = 0;
        ReceiveRequest first = receives[toRepost[0]];
        for (int i = 1; i < n; i++) {
            receives[toRepost[i - 1]].next(receives[toRepost[i]]);
        }
        try {
            connection.queuePair().postReceive(first);
            posted += n;
        } catch (RuntimeException e) {
            breakWith(name + ": cannot post a receive: " + e.getMessage());
        } finally {
            for (int i = 0; i < n - 1; i++) {
                receives[toRepost[i]].next(null);
            }
        }
    }

    private void repost(int slot) {
        if (broken == null) {
            try {
                connection.queuePair().postReceive(receives[slot]);
            } catch (RuntimeException e) {
                breakWith(name + ": cannot post a receive: " + e.getMessage());
            }
        }
    }

    /**
     * The credits alone, in a message of their own, when a send slot is free and the peer has not
     * heard of receives posted since: once half the ring (rounded up) was released, or at once when
     * the peer has used every credit it was told of (it may be waiting). Such a message uses one of
     * the peer's {@link #RESERVE} receives: at most two can be unread, because the messages the
     * peer has not read are the last ones (it reads in order), a message of the second kind is sent
     * only after the peer used credits told after the one before (so read it), and the credits of
     * the unread ones add up to at most the ring, which three messages, two of them of half a ring
     * or more, would exceed.
     */
    private void maybeSendCredits() {
        int fresh = posted - told;
        if (fresh > 0 && (fresh >= (slots + 1) / 2 || told - received <= 0) && !freeSlots.isEmpty() && broken == null) {
            post(freeSlots.pop(), CREDITS_ONLY, 0);
        }
    }

    /**
     * Posts slot {@code slot}: a message of {@code kind} ({@link #DATA}, {@link #CREDITS_ONLY},
     * {@link #RENDEZVOUS}) with {@code bytes} after the header; under lock.
     */
    private void post(int slot, int kind, int bytes) {
        setup.sendRing.segment().set(ValueLayout.JAVA_INT_UNALIGNED, (long) slot * stride, kind << 30 | posted & GRANT);
        told = posted;
        // a completion every signalEvery sends, and for one that leaves no slot free (so that a
        // sender without a slot always has a completion coming that frees some)
        boolean signal = ++sinceSignaled >= signalEvery || freeSlots.isEmpty();
        if (signal) {
            sinceSignaled = 0;
        }
        try {
            SendRequest request = sends[slot];
            if (signaledNow[slot] != signal) {
                request.signaled(signal);
                signaledNow[slot] = signal;
            }
            connection.queuePair().postSend(request.sgeLength(0, HEADER + bytes));
        } catch (RuntimeException e) {
            breakWith(name + ": cannot post a send: " + e.getMessage());
            return;
        }
        postedOrder[(postedHead + postedCount++) % slots] = slot;
    }

    /** The signaled send of slot {@code slot} completed: it and every slot posted before it are free; under lock. */
    private void sent(int slot) {
        while (postedCount > 0) {
            int s = postedOrder[postedHead];
            postedHead = (postedHead + 1) % slots;
            postedCount--;
            freeSlots.push(s);
            if (s == slot) {
                return;
            }
        }
    }

    /**
     * The peer's memory that {@code token} exports (sent by the peer, e.g. over this channel): read,
     * write, compare-and-swap and fetch-and-add through this channel's queue pair, each access
     * checked against the token in Java before it is posted.
     *
     * @param token what the peer exported
     * @return the view
     */
    public RemoteMemory remote(RegionToken token) {
        return new RemoteMemory(Objects.requireNonNull(token, "token"));
    }

    private static String describe(SendRequest r) {
        return "an " + r.opcode();
    }

    /**
     * Posts a one-sided operation in a free operation slot, and waits for its completion (bounded by
     * the queue pair's timeout: a peer that is gone fails it): an RDMA READ or WRITE of
     * {@code length} bytes at {@code localOffset} of {@code local}, or, with {@code local} null, an
     * atomic whose old value lands in the slot's scratch word. Returns the slot, still taken (the
     * scratch word holds an atomic's result): give it back with {@link #releaseOp}.
     */
    private int oneSided(SendOpcode opcode, MemoryRegion local, long localOffset, int length, long remote, int rkey,
                         long compareAdd, long swap) {
        if (poller.compareAndSet(false, true)) {
            // no other thread polls: post, then poll for this operation here, with no hand-over
            int op = -1;
            try {
                lock.lock();
                try {
                    check();
                    op = postOneSided(opcode, local, localOffset, length, remote, rkey, compareAdd, swap);
                } finally {
                    lock.unlock();
                }
                if (op >= 0) {
                    while (!opDone[op] && pollAsPoller(SLICE_NANOS)) { // opDone and opStatus: written by this thread, the poller
                        // poll again
                    }
                }
            } finally {
                letPollerGo();
            }
            if (op >= 0) {
                if (opDone[op] && opStatus[op] == WcStatus.SUCCESS) {
                    return op;
                }
                return failedOp(op);
            }
            // every operation slot is taken: wait for one as the other callers do
        }
        long forever = System.nanoTime() + Long.MAX_VALUE / 2;
        int op;
        long seen;
        while (true) {
            lock.lock();
            try {
                check();
                seen = progressed;
                op = postOneSided(opcode, local, localOffset, length, remote, rkey, compareAdd, swap);
                if (op >= 0) {
                    break;
                }
            } finally {
                lock.unlock();
            }
            progress(forever, seen);
        }
        while (true) {
            progress(forever, seen);
            lock.lock();
            try {
                if (opDone[op]) {
                    if (opStatus[op] != WcStatus.SUCCESS) {
                        return failedOp(op);
                    }
                    return op;
                }
                seen = progressed;
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * Takes a free operation slot and posts the one-sided operation in it (see {@link #oneSided});
     * returns the slot, or -1 if none is free; under lock.
     */
    private int postOneSided(SendOpcode opcode, MemoryRegion local, long localOffset, int length, long remote, int rkey,
                             long compareAdd, long swap) {
        if (freeOps.isEmpty()) {
            return -1;
        }
        int op = freeOps.pop();
        opDone[op] = false;
        opStatus[op] = null;
        SendRequest r = ops[op].opcode(opcode);
        try {
            if (local == null) {
                r.sge(setup.scratch, 8L * op, 8).atomic(remote, rkey, compareAdd, swap);
            } else {
                r.sge(local, localOffset, length).rdma(remote, rkey); // the local range is checked here
            }
            connection.queuePair().postSend(r);
        } catch (RuntimeException e) {
            freeOps.push(op);
            throw e;
        }
        wakeForAll();
        return op;
    }

    /**
     * The operation in slot {@code op} failed, or the queue closed before it completed: the slot
     * comes back if it completed, and the channel's error (or the operation's status) is thrown.
     */
    private int failedOp(int op) {
        lock.lock();
        try {
            if (opDone[op]) {
                freeOps.push(op);
                advanced();
            }
            check();
            throw new ChannelException(name + ": " + describe(ops[op]) + " failed with " + opStatus[op]);
        } finally {
            lock.unlock();
        }
    }

    private void releaseOp(int op) {
        lock.lock();
        try {
            freeOps.push(op);
            advanced();
        } finally {
            lock.unlock();
        }
    }

    /**
     * The memory a peer exported with a {@link RegionToken}, reached through this channel. Every
     * access is checked against the token (range, rights, alignment) before anything is posted, and
     * blocks its thread (a virtual thread parks) until the operation completed; the {@code Async}
     * forms run it in a virtual thread of their own. A failed operation (the peer gone, its region
     * deregistered) breaks the channel: it throws {@link ChannelException} naming the peer.
     */
    public final class RemoteMemory {
        private final RegionToken token;

        private RemoteMemory(RegionToken token) {
            this.token = token;
        }

        /** {@return the token} */
        public RegionToken token() {
            return token;
        }

        private long at(long offset, long length, RegionToken.Right right) {
            if (!token.rights().contains(right)) {
                throw new IllegalArgumentException("the token grants " + token.rights() + ", not " + right + " (" + token + ")");
            }
            if (offset < 0 || length < 0 || offset > token.length() - length) {
                throw new IndexOutOfBoundsException("bytes [" + offset + ", " + offset + " + " + length + ") are outside the "
                        + token.length() + " bytes the token exports");
            }
            return token.address() + offset;
        }

        /**
         * RDMA READ: {@code length} bytes at {@code offset} of the remote range into {@code local}.
         *
         * @param offset      where to read in the exported range
         * @param local       registered memory of this channel's protection domain
         *                    ({@link MessageChannel#connection()}'s) that receives the bytes
         * @param localOffset where they go in {@code local}
         * @param length      how many bytes
         * @throws IllegalArgumentException  if the token does not grant {@link RegionToken.Right#READ}
         * @throws IndexOutOfBoundsException if a range is outside the token's or {@code local}
         * @throws ChannelException          if the channel is closed or the read failed
         */
        public void read(long offset, MemoryRegion local, long localOffset, int length) {
            long remote = at(offset, length, RegionToken.Right.READ);
            releaseOp(oneSided(SendOpcode.RDMA_READ, Objects.requireNonNull(local, "local"), localOffset, length, remote, token.rkey(), 0, 0));
        }

        /**
         * RDMA WRITE: {@code length} bytes of {@code local} to {@code offset} of the remote range.
         *
         * @param offset      where to write in the exported range
         * @param local       registered memory of this channel's protection domain holding the bytes
         * @param localOffset where they start in {@code local}
         * @param length      how many bytes
         * @throws IllegalArgumentException  if the token does not grant {@link RegionToken.Right#WRITE}
         * @throws IndexOutOfBoundsException if a range is outside the token's or {@code local}
         * @throws ChannelException          if the channel is closed or the write failed
         */
        public void write(long offset, MemoryRegion local, long localOffset, int length) {
            long remote = at(offset, length, RegionToken.Right.WRITE);
            releaseOp(oneSided(SendOpcode.RDMA_WRITE, Objects.requireNonNull(local, "local"), localOffset, length, remote, token.rkey(), 0, 0));
        }

        /**
         * Atomic compare-and-swap of the 8-byte word at {@code offset}.
         *
         * @param offset where the word is in the exported range, a multiple of 8 from the region's address
         * @param expect the value it must hold
         * @param swap   what it becomes if it does
         * @return the value it held (equal to {@code expect} if swapped)
         * @throws IllegalArgumentException      if the token does not grant {@link RegionToken.Right#ATOMIC},
         *                                       or the word is not 8-byte aligned
         * @throws IndexOutOfBoundsException     if the word is outside the token's range
         * @throws UnsupportedOperationException if the device has no atomics (SoftiWARP: iWARP has none)
         * @throws ChannelException              if the channel is closed or the operation failed
         */
        public long compareAndSwap(long offset, long expect, long swap) {
            return atomic(offset, SendOpcode.ATOMIC_CMP_AND_SWP, expect, swap);
        }

        /**
         * Atomic fetch-and-add of the 8-byte word at {@code offset}.
         *
         * @param offset where the word is in the exported range, 8-byte aligned
         * @param add    what to add
         * @return the value it held before
         * @throws IllegalArgumentException      as {@link #compareAndSwap}
         * @throws IndexOutOfBoundsException     as {@link #compareAndSwap}
         * @throws UnsupportedOperationException as {@link #compareAndSwap}
         * @throws ChannelException              as {@link #compareAndSwap}
         */
        public long fetchAndAdd(long offset, long add) {
            return atomic(offset, SendOpcode.ATOMIC_FETCH_AND_ADD, add, 0);
        }

        private long atomic(long offset, SendOpcode opcode, long compareAdd, long swap) {
            long remote = at(offset, 8, RegionToken.Right.ATOMIC);
            if ((remote & 7) != 0) {
                throw new IllegalArgumentException("an atomic needs an 8-byte aligned word; remote address 0x"
                        + Long.toHexString(remote) + " (offset " + offset + ") is not");
            }
            if (!atomics) {
                throw new UnsupportedOperationException(connection.id().context().device().name()
                        + " has no atomic operations (atomic_cap is none; iWARP defines none)");
            }
            MemoryRegion scratch = setup.scratch;
            int op = oneSided(opcode, null, 0, 8, remote, token.rkey(), compareAdd, swap);
            try {
                return scratch.segment().get(ValueLayout.JAVA_LONG, 8L * op);
            } finally {
                releaseOp(op);
            }
        }

        /** The operation slot of request {@code r}, from its id. */
        private int slot(SendRequest r) {
            return (int) (r.id() & 0xFFFF);
        }

        /**
         * {@link #read} in a virtual thread of its own.
         *
         * @param offset      where to read
         * @param local       where the bytes go
         * @param localOffset where in {@code local}
         * @param length      how many bytes
         * @return completed when the bytes are in {@code local}
         */
        public CompletableFuture<Void> readAsync(long offset, MemoryRegion local, long localOffset, int length) {
            at(offset, length, RegionToken.Right.READ);
            return async(() -> {
                read(offset, local, localOffset, length);
                return null;
            });
        }

        /**
         * {@link #fetchAndAdd} in a virtual thread of its own.
         *
         * @param offset where the word is
         * @param add    what to add
         * @return the value the word held before
         */
        public CompletableFuture<Long> fetchAndAddAsync(long offset, long add) {
            at(offset, 8, RegionToken.Right.ATOMIC);
            return async(() -> fetchAndAdd(offset, add));
        }

        private <T> CompletableFuture<T> async(java.util.function.Supplier<T> op) {
            CompletableFuture<T> f = new CompletableFuture<>();
            Thread.ofVirtual().start(() -> {
                try {
                    f.complete(op.get());
                } catch (RuntimeException | Error e) {
                    f.completeExceptionally(e);
                }
            });
            return f;
        }

        @Override
        public String toString() {
            return "RemoteMemory[" + token + " through " + name + "]";
        }
    }

    /**
     * Closes the channel: the calls waiting on it throw {@link ChannelException}, the peer's see the
     * channel closed; disconnects and frees the rings, the queue pair and the queue.
     *
     * @throws IllegalStateException if something could not be closed (carrying each failure)
     */
    @Override
    public void close() {
        lock.lock();
        try {
            if (broken != null && broken.getMessage().equals(name + " is closed")) {
                return;
            }
            boolean first = broken == null;
            broken = new ChannelException(name + " is closed");
            if (first) {
                ended("closed by this side");
                wakeAll();
            }
            advanced();
        } finally {
            lock.unlock();
        }
        IllegalStateException failure = new IllegalStateException("closing " + name);
        java.util.List<MemoryRegion> large = new java.util.ArrayList<>();
        lock.lock();
        try {
            staged.forEach(st -> large.add(st.region));
            staged.clear();
            large.addAll(landings);
            landings.clear();
            if (spareLanding != null) {
                large.add(spareLanding);
                spareLanding = null;
            }
        } finally {
            lock.unlock();
        }
        for (MemoryRegion r : large) { // a large message not released is unreadable from here on
            try {
                r.close();
            } catch (RuntimeException e) {
                failure.addSuppressed(e);
            }
        }
        try {
            connection.close();
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
        setup.closeQueue(failure);
        if (failure.getSuppressed().length > 0) {
            throw failure;
        }
    }

    @Override
    public String toString() {
        return name;
    }

    /** A claimed slot of the send ring, with a credit: fill {@link #segment()}, then {@link #commit}. */
    public final class Outgoing implements AutoCloseable {
        private final int slot;
        private boolean done;
        /** A message larger than a slot: where it is written, and its room; else null and the slot's size. */
        private Staged copy;
        private int capacity = slotMessage;

        private Outgoing(int slot) {
            this.slot = slot;
        }

        /**
         * {@return the registered memory to write the message into: the slot's, {@link #slotSize()}
         * bytes, or for a larger {@link #claim(int, Duration)} memory of that size}
         */
        public MemorySegment segment() {
            return copy == null ? sendViews[slot] : copy.region.segment().asSlice(8, capacity);
        }

        /**
         * Sends the first {@code length} bytes of {@link #segment()}.
         *
         * @param length the message's size, 0 to {@link #slotSize()}
         * @throws IllegalArgumentException if {@code length} is out of range
         * @throws IllegalStateException    if committed or closed already
         * @throws ChannelException         if the channel is closed or broken
         */
        public void commit(int length) {
            commit(length, null);
        }

        /**
         * {@link #commit(int)}, having first released {@code request} (when not null) under the same
         * lock, its receive posted again before the reply is: an RPC server's answer in one step.
         */
        void commit(int length, Received request) {
            if (length < 0 || length > capacity) {
                throw length < 0 ? new IllegalArgumentException("negative length " + length) : tooLarge(length, capacity);
            }
            lock.lock();
            try {
                if (request != null) {
                    request.releaseHeld();
                }
                if (done) {
                    throw new IllegalStateException("this slot was committed or closed already");
                }
                done = true;
                check();
                if (copy == null) {
                    post(slot, DATA, length);
                } else {
                    sendStaged(length);
                }
            } finally {
                lock.unlock();
            }
        }

        /** The commit of a larger claim: in the slot if it fits, else the staged copy's address and key in it; under lock. */
        private void sendStaged(int length) {
            Staged c = copy;
            c.taken = false;
            advanced();
            if (length <= slotMessage) {
                MemorySegment.copy(c.region.segment(), 8, sendViews[slot], 0, length);
                post(slot, DATA, length);
                return;
            }
            MemorySegment d = sendViews[slot];
            c.sequence = ++stagedSequence;
            d.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, c.region.address() + 8);
            d.set(ValueLayout.JAVA_INT_UNALIGNED, 8, length);
            d.set(ValueLayout.JAVA_INT_UNALIGNED, 12, c.region.rkey());
            d.set(ValueLayout.JAVA_LONG_UNALIGNED, 16, c.sequence);
            post(slot, RENDEZVOUS, DESCRIPTOR);
        }

        /** Gives the slot and its credit back unless it was committed. */
        @Override
        public void close() {
            lock.lock();
            try {
                if (!done) {
                    done = true;
                    claimed--;
                    freeSlots.push(slot);
                    if (copy != null) {
                        copy.taken = false;
                    }
                    advanced();
                }
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * A message received: a read-only view of the receive ring (or, for a large message, of the
     * memory it was read into), valid until {@link #close()}.
     */
    public final class Received implements AutoCloseable {
        private final int slot;
        /** The message's size; -1 for a large message until it is read. */
        private int length;
        /** The view given, made when first asked for (a large message's: when read). */
        private MemorySegment data;
        private boolean released;
        // a large message: where the sender's copy is, and the memory it is read into
        private long address;
        private int size;
        private int rkey;
        private long sequence;
        private MemoryRegion landing;

        private Received(int slot, int length) {
            this.slot = slot;
            this.length = length;
        }

        /** {@return the message's bytes (read-only; do not keep it past {@link #close()})} */
        public MemorySegment segment() {
            MemorySegment d = data;
            if (d == null) {
                MemorySegment view = receiveViews[slot];
                data = d = length == view.byteSize() ? view : view.asSlice(0, length);
            }
            return d;
        }

        /** {@return the message's size in bytes} */
        public int length() {
            return length;
        }

        /** Releases the slot: its receive is posted again, which is the peer's credit. Once; later calls do nothing. */
        @Override
        public void close() {
            lock.lock();
            try {
                releaseHeld();
            } finally {
                lock.unlock();
            }
        }

        /** {@link #close()}, under lock. */
        private void releaseHeld() {
            if (released) {
                return;
            }
            released = true;
            if (landing != null) {
                release(landing);
            }
            if (broken == null) {
                toRepost[toRepostCount++] = slot;
                if (toRepostCount >= repostBatch || told - received <= slots / 2) {
                    repostReleased();
                }
                maybeSendCredits();
            }
        }
    }
}
