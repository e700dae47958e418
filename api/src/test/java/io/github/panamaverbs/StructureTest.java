package io.github.panamaverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The module's layering, read from its sources: which class refers to which class of another package
 * of the module (an import, or a qualified name in code). Same-package references are not edges: a
 * package is one unit, and its classes may refer to each other freely.
 */
class StructureTest {
    private static final Path SOURCES = Path.of("src/main/java");
    private static final String ROOT = "io.github.panamaverbs.";
    /** A qualified reference to a class of this module (not the generated bindings). */
    private static final Pattern REFERENCE = Pattern.compile(
            "\\bio\\.github\\.panamaverbs\\.(verbs|cm|channel|internal|access|diagnostics)\\.([A-Z]\\w*)");

    /** class (package.Class, without the root) → the classes of other packages it refers to. */
    private static final Map<String, Set<String>> GRAPH = graph();

    @Test
    void theOnlyCycleIsTheFriendAccessPair() {
        List<Set<String>> cycles = stronglyConnected().stream().filter(c -> c.size() > 1).toList();
        assertEquals(List.of(Set.of("access.VerbsAccess", "verbs.Context")), cycles,
                "cycles in the import graph (only the friend-access pair may import each other)");
    }

    @Test
    void internalImportsNoPublicTypeButTheException() {
        for (var e : GRAPH.entrySet()) {
            if (e.getKey().startsWith("internal.")) {
                for (String target : e.getValue()) {
                    assertTrue(target.startsWith("internal.") || target.equals("verbs.VerbsException"),
                            e.getKey() + " refers to " + target);
                }
            }
        }
    }

    @Test
    void theObjectModelDoesNotDependOnTheDiagnostics() {
        for (var e : GRAPH.entrySet()) {
            if (!e.getKey().startsWith("diagnostics.")) {
                for (String target : e.getValue()) {
                    assertFalse(target.startsWith("diagnostics."), e.getKey() + " refers to " + target);
                }
            }
        }
    }

    @Test
    void onlyTheFriendsUseTheFriendAccess() {
        for (var e : GRAPH.entrySet()) {
            if (e.getValue().contains("access.VerbsAccess")) {
                String pkg = e.getKey().substring(0, e.getKey().indexOf('.'));
                assertTrue(Set.of("cm", "diagnostics", "verbs").contains(pkg), e.getKey() + " uses VerbsAccess");
            }
        }
        // the verbs side: the implementation and the class whose initializer registers it
        Set<String> verbsUsers = new TreeSet<>();
        GRAPH.forEach((from, to) -> {
            if (from.startsWith("verbs.") && to.contains("access.VerbsAccess")) {
                verbsUsers.add(from);
            }
        });
        assertEquals(Set.of("verbs.Bridge", "verbs.Context"), verbsUsers);
    }

    @Test
    void theChannelIsBuiltOnThePublicApiOnly() {
        for (var e : GRAPH.entrySet()) {
            if (e.getKey().startsWith("channel.")) {
                for (String target : e.getValue()) {
                    assertTrue(target.startsWith("channel.") || target.startsWith("verbs.") || target.startsWith("cm."),
                            e.getKey() + " refers to " + target + " (the channel uses only the exported verbs and cm API)");
                }
            } else {
                for (String target : e.getValue()) {
                    assertFalse(target.startsWith("channel."), e.getKey() + " refers to " + target + " (nothing below depends on the channel)");
                }
            }
        }
        assertTrue(GRAPH.get("channel.MessageChannel").contains("cm.Connection"), String.valueOf(GRAPH.get("channel.MessageChannel")));
    }

    @Test
    void theGraphIsRead() {
        // guards the parser: known edges are found
        assertTrue(GRAPH.get("cm.CmId").contains("internal.Lifetime"), GRAPH.get("cm.CmId").toString());
        assertTrue(GRAPH.get("verbs.Resource").contains("internal.Lifetime"));
        assertTrue(GRAPH.get("diagnostics.Doctor").contains("verbs.Device"));
        assertTrue(GRAPH.size() > 60, "classes read: " + GRAPH.size());
    }

    private static Map<String, Set<String>> graph() {
        Map<String, Set<String>> graph = new TreeMap<>();
        try (Stream<Path> files = Files.walk(SOURCES)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                String relative = SOURCES.relativize(file).toString().replace('/', '.');
                if (!relative.startsWith(ROOT) || relative.endsWith("package-info.java")) {
                    continue;
                }
                String name = relative.substring(ROOT.length(), relative.length() - ".java".length());
                String pkg = name.substring(0, name.lastIndexOf('.'));
                Set<String> targets = new TreeSet<>();
                Matcher m = REFERENCE.matcher(code(Files.readString(file)));
                while (m.find()) {
                    if (!m.group(1).equals(pkg)) {
                        targets.add(m.group(1) + "." + m.group(2));
                    }
                }
                graph.put(name, targets);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return graph;
    }

    /** The source without its comments (Javadoc links are not dependencies). */
    private static String code(String source) {
        return source.replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\n]*", "");
    }

    /** Tarjan's strongly connected components of {@link #GRAPH}, each as a sorted set. */
    private static List<Set<String>> stronglyConnected() {
        Map<String, Integer> index = new HashMap<>();
        Map<String, Integer> low = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        Set<String> onStack = new TreeSet<>();
        List<Set<String>> out = new ArrayList<>();
        int[] counter = {0};
        for (String v : GRAPH.keySet()) {
            if (!index.containsKey(v)) {
                connect(v, index, low, stack, onStack, out, counter);
            }
        }
        return out;
    }

    private static void connect(String v, Map<String, Integer> index, Map<String, Integer> low, Deque<String> stack,
                                Set<String> onStack, List<Set<String>> out, int[] counter) {
        index.put(v, counter[0]);
        low.put(v, counter[0]++);
        stack.push(v);
        onStack.add(v);
        for (String w : GRAPH.getOrDefault(v, Set.of())) {
            if (!GRAPH.containsKey(w)) {
                continue; // a nested type, e.g. verbs.Device read as verbs.Device: present; others ignored
            }
            if (!index.containsKey(w)) {
                connect(w, index, low, stack, onStack, out, counter);
                low.put(v, Math.min(low.get(v), low.get(w)));
            } else if (onStack.contains(w)) {
                low.put(v, Math.min(low.get(v), index.get(w)));
            }
        }
        if (low.get(v).equals(index.get(v))) {
            Set<String> component = new TreeSet<>();
            String w;
            do {
                w = stack.pop();
                onStack.remove(w);
                component.add(w);
            } while (!w.equals(v));
            out.add(component);
        }
    }
}
