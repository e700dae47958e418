package io.github.panamaverbs.samples.common;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A small getopt_long: {@code -p 18515}, {@code -p18515}, {@code --port=18515}, {@code --port 18515},
 * bundled flags ({@code -ec}), {@code --} ends the options. Numbers are read as C's
 * {@code strtol(s, NULL, 0)} reads them (a {@code 0x} prefix is hexadecimal), but strictly: garbage
 * is an error, not zero.
 */
public final class Options {
    /** A usage error: the launcher prints the message and a pointer to {@code --help}, and exits 1. */
    public static final class UsageException extends RuntimeException {
        /** @param message what is wrong, without the tool's name */
        public UsageException(String message) {
            super(message);
        }
    }

    private record Spec(char shortName, String longName, String meta, String help) {
        boolean hasArg() {
            return meta != null;
        }
    }

    private final String synopsis;
    private final List<Spec> specs = new ArrayList<>();
    private final Map<String, String> values = new HashMap<>();
    private final List<String> positional = new ArrayList<>();

    /** @param synopsis the usage lines shown above the options by {@code --help} */
    public Options(String synopsis) {
        this.synopsis = synopsis;
    }

    /** An option without an argument; {@code shortName} 0 for a long-only one. */
    public Options flag(char shortName, String longName, String help) {
        specs.add(new Spec(shortName, longName, null, help));
        return this;
    }

    /** An option with an argument called {@code meta} in the help. */
    public Options value(char shortName, String longName, String meta, String help) {
        specs.add(new Spec(shortName, longName, meta, help));
        return this;
    }

    /**
     * Parses {@code args}. Returns false when {@code -h}/{@code --help} was given (the help is then
     * printed on {@code out}): the tool should exit 0.
     */
    public boolean parse(String[] args, PrintStream out) {
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("-h") || a.equals("--help")) {
                out.print(help());
                return false;
            }
            if (a.equals("--")) {
                positional.addAll(List.of(args).subList(i + 1, args.length));
                break;
            }
            if (a.startsWith("--")) {
                int eq = a.indexOf('=');
                String name = a.substring(2, eq < 0 ? a.length() : eq);
                Spec s = specs.stream().filter(x -> x.longName.equals(name)).findFirst()
                        .orElseThrow(() -> new UsageException("unknown option --" + name));
                if (!s.hasArg()) {
                    if (eq >= 0) {
                        throw new UsageException("option --" + name + " takes no argument");
                    }
                    values.put(s.longName, "");
                } else if (eq >= 0) {
                    values.put(s.longName, a.substring(eq + 1));
                } else if (i + 1 < args.length) {
                    values.put(s.longName, args[++i]);
                } else {
                    throw new UsageException("option --" + name + " needs an argument (" + s.meta + ")");
                }
            } else if (a.startsWith("-") && a.length() > 1) {
                for (int j = 1; j < a.length(); j++) {
                    char c = a.charAt(j);
                    Spec s = specs.stream().filter(x -> x.shortName == c).findFirst()
                            .orElseThrow(() -> new UsageException("unknown option -" + c));
                    if (!s.hasArg()) {
                        values.put(s.longName, "");
                        continue;
                    }
                    if (j + 1 < a.length()) {
                        values.put(s.longName, a.substring(j + 1));
                    } else if (i + 1 < args.length) {
                        values.put(s.longName, args[++i]);
                    } else {
                        throw new UsageException("option -" + c + " needs an argument (" + s.meta + ")");
                    }
                    break;
                }
            } else {
                positional.add(a);
            }
        }
        return true;
    }

    /** The usage text. */
    public String help() {
        StringBuilder b = new StringBuilder(synopsis.endsWith("\n") ? synopsis : synopsis + "\n").append("\nOptions:\n");
        for (Spec s : specs) {
            String left = (s.shortName != 0 ? "  -" + s.shortName + ", " : "      ") + "--" + s.longName
                    + (s.hasArg() ? "=<" + s.meta + ">" : "");
            b.append(String.format("%-30s %s%n", left, s.help));
        }
        b.append(String.format("%-30s %s%n", "  -h, --help", "print this help"));
        return b.toString();
    }

    public boolean has(String longName) {
        return values.containsKey(longName);
    }

    public String string(String longName, String otherwise) {
        return values.getOrDefault(longName, otherwise);
    }

    public long number(String longName, long otherwise, long min, long max) {
        String v = values.get(longName);
        if (v == null) {
            return otherwise;
        }
        long n;
        try {
            n = parseNumber(v);
        } catch (NumberFormatException e) {
            throw new UsageException("--" + longName + ": not a number: " + v);
        }
        if (n < min || n > max) {
            throw new UsageException("--" + longName + ": " + v + " is out of range [" + min + ", " + max + "]");
        }
        return n;
    }

    public int integer(String longName, int otherwise, int min, int max) {
        return (int) number(longName, otherwise, min, max);
    }

    /** Arguments that are not options. */
    public List<String> positional() {
        return positional;
    }

    /** {@code strtol(s, NULL, 0)}, strictly: decimal, {@code 0x} hexadecimal, leading-0 octal. */
    public static long parseNumber(String s) {
        String t = s.trim();
        boolean negative = t.startsWith("-");
        if (negative || t.startsWith("+")) {
            t = t.substring(1);
        }
        long n;
        if (t.startsWith("0x") || t.startsWith("0X")) {
            n = Long.parseLong(t.substring(2), 16);
        } else if (t.length() > 1 && t.startsWith("0")) {
            n = Long.parseLong(t.substring(1), 8);
        } else {
            n = Long.parseLong(t);
        }
        return negative ? -n : n;
    }
}
