package io.github.panamaverbs.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.panamaverbs.channel.RpcReadmeExampleTest;
import io.github.panamaverbs.cm.CmReadmeExampleTest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every Java code block of README.md and docs/*.md is one of the examples that a test compiles
 * ({@link ReadmeExampleTest}, {@link CmReadmeExampleTest}, {@link RpcReadmeExampleTest}, {@link JfrExampleTest},
 * {@link VirtualThreadExampleTest}, {@link ConfinedIT}), verbatim: no block in the documentation is an unchecked copy.
 * The README stays short: at most 10 KB, its first example within its first 120 lines.
 */
class DocsExamplesTest {
    private static final Pattern JAVA_BLOCK = Pattern.compile("```java\n(.*?)```\n", Pattern.DOTALL);

    private static Set<String> compiledExamples() throws IOException {
        return Set.of(ReadmeExampleTest.example(ReadmeExampleTest.class, "// @start region=\"readme\"", "// @end region=\"readme\""),
                ReadmeExampleTest.example(CmReadmeExampleTest.class, "// @start region=\"cm\"", "// @end region=\"cm\""),
                ReadmeExampleTest.example(JfrExampleTest.class, "// README-JFR-EXAMPLE-BEGIN", "// README-JFR-EXAMPLE-END"),
                ReadmeExampleTest.example(VirtualThreadExampleTest.class, "// README-VT-EXAMPLE-BEGIN", "// README-VT-EXAMPLE-END"),
                ReadmeExampleTest.example(ConfinedIT.class, "// FEATURES-CONFINED-EXAMPLE-BEGIN", "// FEATURES-CONFINED-EXAMPLE-END"),
                ReadmeExampleTest.example(RpcReadmeExampleTest.class, "// @start region=\"rpc\"", "// @end region=\"rpc\""));
    }

    private static List<Path> documents() throws IOException {
        Path root = ReadmeExampleTest.projectRoot();
        List<Path> docs = new ArrayList<>(List.of(root.resolve("README.md")));
        try (Stream<Path> files = Files.list(root.resolve("docs"))) {
            files.filter(f -> f.toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        return docs;
    }

    @Test
    void everyJavaBlockIsACompiledExample() throws IOException {
        Set<String> compiled = compiledExamples();
        List<String> unchecked = new ArrayList<>();
        int blocks = 0;
        for (Path doc : documents()) {
            Matcher m = JAVA_BLOCK.matcher(Files.readString(doc).replace("\r\n", "\n"));
            while (m.find()) {
                blocks++;
                if (!compiled.contains(m.group(1))) {
                    unchecked.add(doc.getFileName() + ": " + m.group(1).lines().findFirst().orElse(""));
                }
            }
        }
        assertTrue(unchecked.isEmpty(), "Java blocks that no test compiles: " + unchecked);
        assertEquals(compiled.size(), blocks, "each compiled example appears once in the documentation");
    }

    @Test
    void theReadmeIsShortAndStartsWithAnExample() throws IOException {
        Path readme = ReadmeExampleTest.projectRoot().resolve("README.md");
        long size = Files.size(readme);
        assertTrue(size <= 10 * 1024, "README.md has " + size + " bytes, more than 10 KB");
        List<String> lines = Files.readAllLines(readme);
        int first = lines.indexOf("```java");
        assertTrue(first >= 0 && first < 120, "the README's first Java example starts at line " + (first + 1));
        for (Path doc : documents()) {
            String text = Files.readString(doc);
            Matcher link = Pattern.compile("\\]\\((?!https?:)([^)#]+)").matcher(text);
            while (link.find()) {
                Path target = doc.getParent().resolve(link.group(1)).normalize();
                assertTrue(Files.exists(target), doc.getFileName() + " links to " + link.group(1) + ", which does not exist");
            }
        }
    }
}
