package io.github.panamaverbs.internal;

import io.github.panamaverbs.cm.CmEventType;
import io.github.panamaverbs.cm.Connection;
import io.github.panamaverbs.cm.ConnectionParameters;
import io.github.panamaverbs.cm.EventChannel;
import io.github.panamaverbs.cm.PortSpace;
import io.github.panamaverbs.verbs.AccessFlag;
import io.github.panamaverbs.verbs.AddressVector;
import io.github.panamaverbs.verbs.ConnectOptions;
import io.github.panamaverbs.verbs.Device;
import io.github.panamaverbs.diagnostics.Doctor;
import io.github.panamaverbs.verbs.Gid;
import io.github.panamaverbs.verbs.Mtu;
import io.github.panamaverbs.verbs.QpAttributes;
import io.github.panamaverbs.verbs.QpState;
import io.github.panamaverbs.verbs.QpType;
import io.github.panamaverbs.verbs.ReceiveRequest;
import io.github.panamaverbs.verbs.RemoteEndpoint;
import io.github.panamaverbs.verbs.SendFlag;
import io.github.panamaverbs.verbs.SendOpcode;
import io.github.panamaverbs.verbs.SendRequest;
import io.github.panamaverbs.verbs.WcOpcode;
import io.github.panamaverbs.verbs.WcStatus;
import io.github.panamaverbs.verbs.WorkCompletions;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.util.EnumSet;
import java.util.concurrent.Callable;

/**
 * The child of {@link MissingLibraryTest}: run in a JVM where rdma-core's libraries are hidden, it
 * uses the API as a program would, in order: enum constants, then the objects built before a device
 * is opened, then the first calls that need the library. It prints one line per step,
 * {@code STEP name: ok result} or {@code STEP name: threw class: message} (with the stack trace for
 * anything but a {@code VerbsException}), and always exits normally.
 */
public final class MissingLibraryMain {
    private MissingLibraryMain() {
    }

    /**
     * Runs the steps.
     *
     * @param args {@code libibverbs} (only libibverbs.so.1 hidden: the verbs entry points) or
     *             {@code librdmacm} (only librdmacm.so.1 hidden: the connection manager's)
     */
    public static void main(String[] args) {
        for (String library : NativeLibraries.ALL) {
            System.out.println("LOADS " + library + ": " + loads(library));
        }
        step("enum constants", () -> AccessFlag.REMOTE_WRITE.value() + " " + QpType.RC + " " + SendOpcode.RDMA_WRITE.value()
                + " " + QpState.RTS.value() + " " + Mtu.MTU_1024.bytes() + " " + WcStatus.SUCCESS.value()
                + " " + WcOpcode.RECV.value() + " " + CmEventType.ESTABLISHED.value() + " " + PortSpace.TCP.value());
        step("enum lookups", () -> WcStatus.of(5) + " " + WcOpcode.of(128) + " " + QpState.of(3) + " " + CmEventType.of(9)
                + " " + SendFlag.SIGNALED.value() + " " + EnumSet.allOf(AccessFlag.class).size());
        step("new SendRequest(1)", () -> new SendRequest(1).opcode(SendOpcode.RDMA_WRITE).signaled(true)
                .rdma(0x1000, 7).immediate(3).id(42));
        step("new ReceiveRequest(1)", () -> new ReceiveRequest(1, Arena.ofAuto()).id(7));
        step("new WorkCompletions(4)", () -> new WorkCompletions(4).capacity());
        step("new QpAttributes()", () -> new QpAttributes().state(QpState.INIT).pkeyIndex(0).port(1)
                .accessFlags(EnumSet.of(AccessFlag.REMOTE_WRITE)).pathMtu(Mtu.MTU_1024).timeout(14));
        step("ConnectOptions.port(1)", () -> ConnectOptions.port(1).mtu(Mtu.MTU_4096).gidIndex(1).port());
        step("AddressVector.global", () -> AddressVector.global(1, Gid.parse("fe80::1"), 0, 64));
        step("RemoteEndpoint", () -> RemoteEndpoint.fromBytes(new RemoteEndpoint(1, 2, 3, Gid.ZERO).toBytes()));
        step("new ConnectionParameters()", () -> new ConnectionParameters().retryCount(5).privateData(new byte[4]));
        step("new Connection.Config()", () -> new Connection.Config().maxSendWr(8).parameters(new ConnectionParameters()));
        step("Doctor.check()", () -> Doctor.check().toString().replace('\n', '|'));
        if (args.length > 0 && args[0].equals("librdmacm")) {
            step("EventChannel.create()", EventChannel::create);
        } else {
            step("WcStatus.description()", WcStatus.RETRY_EXC_ERR::description);
            step("Device.open(\"rxe0\")", () -> Device.open("rxe0"));
        }
        // Again, after failures: still the same exception, never NoClassDefFoundError.
        step("Device.list()", Device::list);
        step("Device.list() again", Device::list);
    }

    private static boolean loads(String library) {
        try (Arena arena = Arena.ofConfined()) {
            SymbolLookup.libraryLookup(library, arena);
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    private static void step(String name, Callable<?> body) {
        try {
            System.out.println("STEP " + name + ": ok " + body.call());
        } catch (Throwable t) {
            System.out.println("STEP " + name + ": threw " + t.getClass().getName() + ": " + t.getMessage());
            if (!t.getClass().getSimpleName().equals("VerbsException")) {
                t.printStackTrace(System.out);
            }
        }
        System.out.flush();
    }
}
