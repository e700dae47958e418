package io.github.panamaverbs.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.panamaverbs.bindings.Verbs;
import io.github.panamaverbs.cm.CmEventType;
import io.github.panamaverbs.cm.CmId;
import io.github.panamaverbs.cm.PortSpace;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.function.ToIntFunction;
import org.junit.jupiter.api.Test;

/**
 * The C values that the API writes out as int literals (so that its enums and the classes built
 * before a device is opened load without rdma-core) against the generated bindings, which read them
 * from the headers: every constant of every enum, the attribute-mask and completion-flag bits, and
 * {@code RDMA_UDP_QKEY}. A constant is found in the bindings by its C name (the enum's C prefix and
 * the constant's name); one that is missing there, or differs, fails.
 */
class EnumValuesTest {

    @Test
    void everyVerbsEnumConstantHasItsCValue() {
        List<String> wrong = new ArrayList<>();
        check(wrong, AccessFlag.class, "IBV_ACCESS_", AccessFlag::value);
        check(wrong, AsyncEventType.class, "IBV_EVENT_", AsyncEventType::value);
        check(wrong, GidType.class, "IBV_GID_TYPE_", GidType::value);
        check(wrong, LinkLayer.class, "IBV_LINK_LAYER_", LinkLayer::value);
        check(wrong, Mtu.class, "IBV_", Mtu::value);
        check(wrong, NodeType.class, "IBV_NODE_", NodeType::value);
        check(wrong, PortState.class, "IBV_PORT_", PortState::value);
        check(wrong, QpState.class, "IBV_QPS_", QpState::value);
        check(wrong, QpType.class, "IBV_QPT_", QpType::value);
        check(wrong, SendFlag.class, "IBV_SEND_", SendFlag::value);
        check(wrong, SendOpcode.class, "IBV_WR_", SendOpcode::value);
        check(wrong, TransportType.class, "IBV_TRANSPORT_", TransportType::value);
        check(wrong, WcOpcode.class, "IBV_WC_", WcOpcode::value);
        check(wrong, WcStatus.class, "IBV_WC_", WcStatus::value);
        assertTrue(wrong.isEmpty(), "C values that differ from the bindings:\n" + String.join("\n", wrong));
    }

    @Test
    void everyCmEnumConstantHasItsCValue() {
        List<String> wrong = new ArrayList<>();
        check(wrong, CmEventType.class, "RDMA_CM_EVENT_", CmEventType::value);
        check(wrong, PortSpace.class, "RDMA_PS_", PortSpace::value);
        assertTrue(wrong.isEmpty(), "C values that differ from the bindings:\n" + String.join("\n", wrong));
    }

    /** WcStatus's C value is its ordinal: the constants must stay in C's order, with none left out. */
    @Test
    void wcStatusCoversEveryCValueInOrder() {
        WcStatus[] all = WcStatus.values();
        assertEquals(Verbs.IBV_WC_SUCCESS(), all[0].value());
        assertEquals(Verbs.IBV_WC_TM_RNDV_INCOMPLETE(), all[all.length - 1].value());
        assertEquals(all.length - 1, WcStatus.TM_RNDV_INCOMPLETE.ordinal());
    }

    @Test
    void attributeMaskAndCompletionFlagBitsHaveTheirCValues() {
        List<String> wrong = new ArrayList<>();
        int qp = checkFields(wrong, QpAttributes.class, "IBV_QP_");
        int wc = checkFields(wrong, WorkCompletions.class, "IBV_WC_");
        assertTrue(wrong.isEmpty(), "C values that differ from the bindings:\n" + String.join("\n", wrong));
        assertEquals(18, qp, "IBV_QP_ constants in QpAttributes");
        assertEquals(3, wc, "IBV_WC_ constants in WorkCompletions");
    }

    @Test
    void udpQkeyHasItsCValue() {
        assertEquals(Verbs.RDMA_UDP_QKEY(), CmId.UDP_QKEY);
    }

    /** Compares each constant of {@code type} with the bindings' {@code prefix + name()}. */
    private static <E extends Enum<E>> void check(List<String> wrong, Class<E> type, String prefix, ToIntFunction<E> value) {
        for (E e : type.getEnumConstants()) {
            String cName = prefix + e.name();
            Integer c = cValue(cName);
            if (c == null) {
                wrong.add(type.getSimpleName() + "." + e.name() + ": the bindings have no " + cName);
            } else if (c != value.applyAsInt(e)) {
                wrong.add(type.getSimpleName() + "." + e.name() + " = " + value.applyAsInt(e) + ", but " + cName + " = " + c);
            }
        }
    }

    /** Compares each static int field of {@code type} named {@code prefix…} with the bindings' value of that name. */
    private static int checkFields(List<String> wrong, Class<?> type, String prefix) {
        int n = 0;
        for (Field f : type.getDeclaredFields()) {
            if (!f.getName().startsWith(prefix) || !Modifier.isStatic(f.getModifiers()) || f.getType() != int.class) {
                continue;
            }
            n++;
            int java;
            try {
                f.setAccessible(true);
                java = f.getInt(null);
            } catch (IllegalAccessException e) {
                throw new AssertionError(e);
            }
            Integer c = cValue(f.getName());
            if (c == null) {
                wrong.add(type.getSimpleName() + "." + f.getName() + ": the bindings have no such constant");
            } else if (c != java) {
                wrong.add(type.getSimpleName() + "." + f.getName() + " = " + java + ", but the bindings say " + c);
            }
        }
        return n;
    }

    /** The bindings' value of the C constant {@code name}, or null if they have none. */
    private static Integer cValue(String name) {
        Method m;
        try {
            m = Verbs.class.getMethod(name);
        } catch (NoSuchMethodException e) {
            return null;
        }
        try {
            return (Integer) m.invoke(null);
        } catch (ReflectiveOperationException e) {
            return fail("reading " + name + " from the bindings", e);
        }
    }
}
