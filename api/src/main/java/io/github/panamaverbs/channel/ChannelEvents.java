package io.github.panamaverbs.channel;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * The channel layer's Flight Recorder events, category "RDMA" beside the library's own: a channel
 * made and ended, a send that had to wait for credit, a failed RPC. None is committed per message
 * (a send that finds credit at once commits nothing).
 */
final class ChannelEvents {
    private static final String PREFIX = "io.github.panamaverbs.";

    private ChannelEvents() {
    }

    /** A channel was connected or accepted: the duration is the connection's making. */
    @Name(PREFIX + "ChannelOpen")
    @Label("Channel Open")
    @Category("RDMA")
    @Description("A message channel was connected or accepted (rdma_cm, rings registered, receives posted)")
    @StackTrace(false)
    static final class Open extends Event {
        @Label("Channel")
        String channel;
        @Label("Side")
        String side;
        @Label("Slots")
        int slots;
        @Label("Message Size")
        @DataAmount
        int messageSize;
    }

    /** A channel ended: closed here, by the peer, the peer gone, or a transfer failed. */
    @Name(PREFIX + "ChannelEnd")
    @Label("Channel End")
    @Category("RDMA")
    @Description("A message channel ended: why, and how many messages it carried")
    @StackTrace(false)
    static final class End extends Event {
        @Label("Channel")
        String channel;
        @Label("Reason")
        String reason;
        @Label("Messages Sent")
        long sent;
        @Label("Messages Received")
        long received;
    }

    /** A send found no credit (or no free slot) and waited: the duration is the wait. */
    @Name(PREFIX + "CreditStall")
    @Label("Credit Stall")
    @Category("RDMA")
    @Description("A send waited for the peer's credit (its receives all in use) or a free send slot")
    @StackTrace(false)
    static final class CreditStall extends Event {
        @Label("Channel")
        String channel;
        @Label("Outcome")
        String outcome;
    }

    /** An RPC failed: the exception its caller gets, as an event. */
    @Name(PREFIX + "RpcError")
    @Label("RPC Error")
    @Category("RDMA")
    @Description("An RPC failed: the handler threw (REMOTE), no reply in time (TIMEOUT), or the channel ended (CLOSED)")
    @StackTrace(false)
    static final class RpcError extends Event {
        @Label("Channel")
        String channel;
        @Label("Kind")
        String kind;
        @Label("Message")
        String message;
    }
}
