package io.github.panamaverbs.jmh;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** A horizontal bar chart of the Java/C ratios, as SVG (no library). */
final class Chart {
    private Chart() {
    }

    static String svg(List<BenchMain.Row> rows, String title, String subtitle) {
        List<BenchMain.Row> shown = new ArrayList<>();
        double max = 2;
        for (BenchMain.Row r : rows) {
            if (finite(r.ratio()) || finite(r.perfRatio())) {
                shown.add(r);
                max = Math.max(max, Math.max(finite(r.ratio()) ? r.ratio() : 0, finite(r.perfRatio()) ? r.perfRatio() : 0));
            }
        }
        max = Math.ceil(max);
        int labelW = 330;
        int plotW = 520;
        int barH = 9;
        int rowH = 26;
        int top = 62;
        int height = top + rowH * shown.size() + 50;
        int width = labelW + plotW + 70;
        StringBuilder s = new StringBuilder();
        s.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                + "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n", width, height, width, height));
        s.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
        s.append(text(10, 20, 15, "bold", title));
        s.append(text(10, 38, 11, "normal", subtitle));
        s.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"44\" width=\"10\" height=\"10\" fill=\"#3b6fb6\"/>", labelW));
        s.append(text(labelW + 14, 53, 11, "normal", "Java / C loop (or JNI)"));
        s.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"44\" width=\"10\" height=\"10\" fill=\"#e08a2c\"/>", labelW + 170));
        s.append(text(labelW + 184, 53, 11, "normal", "Java / perftest"));
        int y = top;
        for (BenchMain.Row r : shown) {
            s.append(text(10, y + 14, 11, "normal", r.name()));
            bar(s, labelW, y + 3, plotW, barH, r.ratio(), max, "#3b6fb6");
            bar(s, labelW, y + 3 + barH + 1, plotW, barH, r.perfRatio(), max, "#e08a2c");
            y += rowH;
        }
        // axis with ticks, and the line at 1.0
        for (int i = 0; i <= (int) max; i++) {
            double x = labelW + plotW * i / max;
            s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" "
                    + "stroke-width=\"%s\"/>\n", x, top - 2, x, y + 2, i == 1 ? "#c00" : "#ccc", i == 1 ? "1.5" : "0.5"));
            s.append(text(x - 4, y + 16, 11, "normal", Integer.toString(i)));
        }
        s.append(text(labelW, y + 34, 11, "normal", "time ratio (lower is better; 1 = as fast as C)"));
        s.append("</svg>\n");
        return s.toString();
    }

    private static void bar(StringBuilder s, int x0, int y, int plotW, int h, double v, double max, String color) {
        if (!finite(v)) {
            return;
        }
        double w = Math.max(1, plotW * Math.min(v, max) / max);
        s.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>", x0, y, w, h, color));
        s.append(text(x0 + w + 4, y + h - 1, 10, "normal", String.format(Locale.ROOT, "%.2f", v)));
    }

    private static String text(double x, double y, int size, String weight, String t) {
        String esc = t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
        return String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" font-weight=\"%s\">%s</text>\n",
                x, y, size, weight, esc);
    }

    private static boolean finite(double v) {
        return !Double.isNaN(v) && !Double.isInfinite(v) && v > 0;
    }
}
