package io.github.panamaverbs.samples;

import io.github.panamaverbs.verbs.VerbsException;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.ToIntFunction;

/** The launcher behind {@code samples/run TOOL [ARGS]}. */
public final class Main {
    private static final Map<String, ToIntFunction<String[]>> TOOLS = new TreeMap<>(Map.of(
            "devices", Devices::main));

    private Main() {
    }

    /**
     * Runs the tool named by the first argument.
     *
     * @param args the tool's name, then its arguments
     */
    public static void main(String[] args) {
        if (args.length == 0 || args[0].equals("-h") || args[0].equals("--help")) {
            System.out.println("Usage: samples/run TOOL [ARGS...]   (TOOL --help for its flags)\nTools: "
                    + String.join(", ", TOOLS.keySet()));
            System.exit(args.length == 0 ? 1 : 0);
        }
        ToIntFunction<String[]> tool = TOOLS.get(args[0]);
        if (tool == null) {
            System.err.println("unknown tool " + args[0] + "; tools: " + String.join(", ", TOOLS.keySet()));
            System.exit(1);
        }
        try {
            System.exit(tool.applyAsInt(Arrays.copyOfRange(args, 1, args.length)));
        } catch (VerbsException e) {
            System.err.println(args[0] + ": " + e.getMessage());
            System.exit(1);
        }
    }
}
