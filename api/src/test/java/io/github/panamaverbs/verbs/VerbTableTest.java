package io.github.panamaverbs.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.bindings.Verbs;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The "Verbs covered" table of docs/verbs.md against the code: every Java method it names exists (public, in
 * the verbs or cm package), every row names a method or says why not, and every C function the
 * bindings hold has a row. No device needed.
 */
class VerbTableTest {
    private static final Pattern C_NAME = Pattern.compile("`((?:ibv|rdma)_\\w+)`");
    private static final Pattern JAVA_NAME = Pattern.compile("`([A-Z]\\w*)\\.(\\w+)`");

    private static List<String> rows() throws Exception {
        String readme = Files.readString(ReadmeExampleTest.projectRoot().resolve("docs/verbs.md"));
        int start = readme.indexOf("<!-- verbs-table:start -->");
        int end = readme.indexOf("<!-- verbs-table:end -->");
        assertTrue(start >= 0 && end > start, "docs/verbs.md has no verbs table between its markers");
        List<String> rows = new ArrayList<>();
        for (String line : readme.substring(start, end).split("\n")) {
            if (line.startsWith("| `")) {
                rows.add(line);
            }
        }
        return rows;
    }

    private static Class<?> apiClass(String name) {
        for (String pkg : new String[] {"io.github.panamaverbs.verbs.", "io.github.panamaverbs.cm."}) {
            try {
                return Class.forName(pkg + name);
            } catch (ClassNotFoundException e) {
                // the other package
            }
        }
        return null;
    }

    @Test
    void everyJavaMethodInTheTableExists() throws Exception {
        List<String> wrong = new ArrayList<>();
        int methods = 0;
        for (String row : rows()) {
            String[] cells = row.split("\\|");
            assertEquals(3, cells.length, "a row of two cells: " + row);
            String java = cells[2].trim();
            Matcher m = JAVA_NAME.matcher(java);
            boolean any = false;
            while (m.find()) {
                any = true;
                methods++;
                Class<?> c = apiClass(m.group(1));
                String method = m.group(2);
                if (c == null) {
                    wrong.add(m.group() + ": no class " + m.group(1) + " in the API");
                } else if (Arrays.stream(c.getMethods()).noneMatch(x -> x.getName().equals(method)
                        && Modifier.isPublic(x.getModifiers()))) {
                    wrong.add(m.group() + ": " + c.getSimpleName() + " has no public method " + method);
                }
            }
            if (!any && !java.startsWith("not ")) {
                wrong.add(row + ": names no Java method and does not say why (\"not covered ...\", \"not called ...\")");
            }
        }
        assertTrue(wrong.isEmpty(), "docs/verbs.md's verbs table and the code differ:\n" + String.join("\n", wrong));
        assertTrue(methods > 80, "the table names " + methods + " methods");
    }

    @Test
    void everyFunctionOfTheBindingsHasARow() throws Exception {
        Set<String> inTable = new TreeSet<>();
        for (String row : rows()) {
            Matcher m = C_NAME.matcher(row.split("\\|")[1]);
            while (m.find()) {
                inTable.add(m.group(1));
            }
        }
        Set<String> bound = new TreeSet<>();
        for (Method m : Verbs.class.getMethods()) {
            String n = m.getName();
            if (n.endsWith("$address") && (n.startsWith("ibv_") || n.startsWith("rdma_"))) {
                bound.add(n.substring(0, n.length() - "$address".length()));
            }
        }
        assertTrue(bound.size() > 90, "the bindings hold " + bound.size() + " functions");
        bound.removeAll(inTable);
        assertTrue(bound.isEmpty(), "functions of the bindings missing from docs/verbs.md's verbs table: " + bound);
    }
}
