package org.sharp4j.tuner;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import org.sharp4j.tuning.Algorithm;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.CompiledTable;
import org.sharp4j.tuning.RuleParser;
import org.sharp4j.tuning.Sizes;
import org.sharp4j.tuning.TuningTable;

/**
 * Turns the tuner's measurements into a table file with one section per job shape
 * ({@code [nodes=N:ppn=P:measured]}, the format of {@link TuningTable}) and merges it into an
 * existing file: sections of the shapes in the measurements are rewritten, every other section
 * (other shapes, {@code modelled} ones from {@code sharp4j model}, hand-written ones) is kept.
 * Modelled and hand-written sections come first, measured ones last, so that where both apply
 * the measurement wins (later rules paint over earlier ones).
 *
 * <p><b>Choice</b> per shape, collective and layer (intra, inter), size by size upwards, over each
 * point's figure (the median over its passes, {@link Measurement#overPasses}): the fastest candidate
 * wins unless the incumbent is within noise of it: {@code guard} of the faster figure or twice the
 * combined error, whichever is larger; then the incumbent stays, unless the fastest beat it by
 * {@code guard} in every one of 3 passes or more ({@link #fasterInEveryPass}) and by one combined error. The incumbent is the built-in
 * table's choice for that shape and size (its host radix clamped to the node count, as the host path
 * clamps it), so that where the evidence is not clear the written table runs what the built-in one
 * would; where that choice was not measured, the previous size's winner. SHARP can only be
 * chosen as a prefix from 0 bytes (the engine hands SHARP the messages below one limit), so after
 * the first size a host algorithm wins, SHARP is no longer a candidate. A winner covers the sizes
 * from the first measured size where it won to the next winner's; the first from 0, the last to inf,
 * except the exchange (tried only at small sizes): at most up to twice the largest size it won at. Where the
 * next winner is the built-in choice over the unmeasured sizes before it, its rule starts just above the
 * previous measured size instead: those sizes keep the built-in choice.
 */
public final class TuneTable {
    /** The default fraction a challenger must beat the incumbent by. */
    public static final double GUARD = 0.05;

    private TuneTable() {
    }

    /**
     * One decided size: the winner and whether it was separable from the incumbent. {@code from}: where a rule
     * for this winner starts if its run starts here: {@code bytes}, or just above the previous measured size
     * when the winner is the built-in choice over the whole gap (see {@link #choose}).
     */
    public record Choice(int nodes, int ppn, Collective collective, String layer, long bytes, String candidate, String note, long from) {
    }

    /** The choices for every (shape, collective, layer, size) in {@code ms}, in size order. */
    public static List<Choice> choose(List<Measurement> ms, double guard) {
        List<Choice> out = new ArrayList<>();
        for (int[] shape : shapes(ms)) {
            for (Collective c : Collective.values()) {
                for (String layer : List.of(Measurement.INTRA, Measurement.INTER)) {
                    out.addAll(choose(ms, shape[0], shape[1], c, layer, guard));
                }
            }
        }
        return out;
    }

    /** The shapes (nodes, ppn) measured, sorted. */
    public static List<int[]> shapes(List<Measurement> ms) {
        TreeSet<Long> s = new TreeSet<>();
        for (Measurement m : ms) {
            s.add((long) m.nodes() << 32 | m.ppn());
        }
        List<int[]> out = new ArrayList<>();
        for (long k : s) {
            out.add(new int[] {(int) (k >>> 32), (int) k});
        }
        return out;
    }

    static List<Choice> choose(List<Measurement> all, int nodes, int ppn, Collective c, String layer, double guard) {
        TreeSet<Long> sizes = new TreeSet<>();
        for (Measurement m : all) {
            if (m.nodes() == nodes && m.ppn() == ppn && m.collective() == c && m.layer().equals(layer)) {
                sizes.add(m.bytes());
            }
        }
        List<Choice> out = new ArrayList<>();
        String prev = null;
        String prevDepth = null;
        boolean sharpAllowed = true;
        CompiledTable builtIn = TuningTable.builtIn().compile(nodes, ppn);
        long prevBytes = -1;
        for (long bytes : sizes) {
            List<Measurement> at = new ArrayList<>();
            List<Measurement> depths = new ArrayList<>(); // SHARP at each pipeline depth: "sharp" is the default one
            for (Measurement m : all) {
                if (m.nodes() == nodes && m.ppn() == ppn && m.collective() == c && m.layer().equals(layer) && m.bytes() == bytes) {
                    if (m.candidate().equals("sharp") || isPipelineDepth(m.candidate())) {
                        depths.add(m);
                    }
                    if (!isPipelineDepth(m.candidate()) && (sharpAllowed || !m.candidate().equals("sharp"))) {
                        at.add(m);
                    }
                }
            }
            if (at.isEmpty()) {
                continue;
            }
            String builtin = builtInCandidate(builtIn, c, layer, bytes, nodes, ppn);
            // The spine (the inter-node barrier): every host-path call pays its radix, and a small call's data rides
            // on it only at the same radix, so it changes on the plain noise rule alone, never on agreeing passes.
            boolean spine = c == Collective.BARRIER && layer.equals(Measurement.INTER);
            String[] pick = pick(at, at.stream().anyMatch(m -> m.candidate().equals(builtin)) ? builtin : prev, guard, !spine);
            if (!pick[0].equals("sharp")) {
                sharpAllowed = false;
            }
            prev = pick[0];
            if (pick[0].equals("sharp") && depths.size() > 1) {
                // SHARP won this size: then its pipeline depth, by the same rule (incumbent: the last size's depth, else the default)
                String[] depth = pick(depths, prevDepth != null ? prevDepth : "sharp", guard, true);
                prevDepth = depth[0];
                pick = new String[] {depth[0], pick[1].isEmpty() ? depth[1] : depth[1].isEmpty() ? pick[1] : pick[1] + "; " + depth[1]};
            }
            // Sizes between two measured ones whose winners differ were not measured: where the upper one's winner
            // is the built-in choice over the whole gap, the gap runs it (the incumbent where the evidence is
            // unclear). At 3 hosts reduce radix 2 won at 16 KiB and the built-in radix 3 at 64 KiB; with the
            // boundary at 64 KiB, osu_reduce ran 32 KiB 1.18x slower than the built-in table.
            long from = bytes;
            if (prevBytes >= 0 && prevBytes + 1 < bytes && pick[0].equals(builtin)
                    && pick[0].equals(builtInCandidate(builtIn, c, layer, prevBytes + 1, nodes, ppn))) {
                from = prevBytes + 1;
            }
            out.add(new Choice(nodes, ppn, c, layer, bytes, pick[0], pick[1], from));
            prevBytes = bytes;
        }
        return out;
    }

    /** A candidate that measures SHARP at a pipeline depth other than the default ({@code sharp:pipeline=D}). */
    static boolean isPipelineDepth(String candidate) {
        return candidate.startsWith("sharp:pipeline=");
    }

    /**
     * The fastest of {@code at} unless {@code incumbent} is within noise of it: {@code guard} of the faster
     * mean or twice the combined standard error, whichever is larger. Returns the pick and a note (empty, or why
     * the incumbent was kept).
     */
    private static String[] pick(List<Measurement> at, String incumbent, double guard, boolean byPasses) {
        List<Measurement> sorted = new ArrayList<>(at);
        sorted.sort(Comparator.comparingDouble(Measurement::meanUs));
        Measurement best = sorted.get(0);
        for (Measurement inc : sorted) {
            if (inc != best && inc.candidate().equals(incumbent)) {
                double gap = inc.meanUs() - best.meanUs();
                double noise = Math.max(guard * best.meanUs(), 2 * Math.hypot(inc.stderrUs(), best.stderrUs()));
                // agreement in every pass lets one combined error do for two, never less than the guard
                boolean paired = byPasses && fasterInEveryPass(best, inc, guard) && gap > Math.hypot(inc.stderrUs(), best.stderrUs());
                if (gap <= noise && !paired) {
                    return new String[] {incumbent,
                        String.format(Locale.ROOT, "%s within noise of %s (%.2f us): kept", incumbent, best.candidate(), best.meanUs())};
                }
            }
        }
        return new String[] {best.candidate(), ""};
    }

    /**
     * Whether {@code challenger} beat {@code incumbent} by more than {@code guard} in every pass that measured
     * both, over 3 passes or more. The passes are interleaved (pass p of every candidate, then pass p+1), so
     * pass p of two candidates ran in the same phase of the machine; on UCX over TCP each pass's connections
     * fall into a mode of their own, which makes the spread over passes (the error) large, and an incumbent
     * 1.8x slower in every pass stayed "within noise" (3 hosts: reduce radix 3 at 64 B, 189 +- 55 us against
     * radix 2's 107 +- 8). With agreement in every pass, {@link #pick} asks the gap to exceed one combined
     * error instead of two (3 passes agree by chance one time in 8). Not for the spine (the inter-node
     * barrier), whose radix every host-path call pays: at 3 hosts x 2 ranks a spine radix 3 "faster in every
     * pass" (478, 261, 781 us against 687, 2067, 1694) was noise, and made every small allreduce 1.4x and
     * Reduce from 16 KiB up to 1.6x slower in osu_allreduce/osu_reduce --compare builtin.
     */
    static boolean fasterInEveryPass(Measurement challenger, Measurement incumbent, double guard) {
        List<Double> a = challenger.byPass();
        List<Double> b = incumbent.byPass();
        int pairs = 0;
        for (int i = 0; i < Math.min(a.size(), b.size()); i++) {
            double x = a.get(i);
            double y = b.get(i);
            if (Double.isNaN(x) || Double.isNaN(y)) {
                continue;
            }
            if (!(x * (1 + guard) < y)) {
                return false;
            }
            pairs++;
        }
        return pairs >= 3;
    }

    /**
     * The built-in table's choice as the candidate that runs it at this shape (the incumbent): a tree
     * radix above the ranks per node is the flat tree, a host radix above the node count is clamped to
     * it (as the host path does, to [2, min(8, nodes)]).
     */
    static String builtInCandidate(CompiledTable t, Collective c, String layer, long bytes, int nodes, int ppn) {
        if (layer.equals(Measurement.INTRA)) {
            int i = t.intraIndex(c, bytes);
            switch (t.intraAlgorithmAt(c, i)) {
                case TILED: return "tiled";
                case EXCHANGE: return "exchange";
                case DIRECT: return "direct";
                case PIPELINED: return "pipelined";
                case CMA: return "cma";
                case CMA_SPLIT: return "cma_split";
                default:
                    int r = t.treeRadixAt(c, i);
                    return "tree:radix=" + (r > ppn ? Math.max(2, ppn) : r);
            }
        }
        Collective d = c == Collective.BARRIER ? Collective.ALLREDUCE : c;
        Algorithm a = t.interAlgorithm(d, bytes);
        return a == Algorithm.SHARP ? "sharp" : a.key() + ":radix=" + Math.max(2, Math.min(Math.min(8, nodes), t.interRadix(d, bytes)));
    }

    /** The section of one measured shape: header, the figures as comments, the rules. */
    public static List<String> section(List<Measurement> all, int nodes, int ppn, double guard) {
        List<String> out = new ArrayList<>();
        out.add(header(nodes, ppn));
        out.add(String.format(Locale.ROOT, "# %d node(s) x %d rank(s) per node; figures: us, the median call (OSU's P50), the median over passes"
                + " (communicators) +- its error (rounds, or passes p rounds r; * = not stable); -> the choice (incumbent: the built-in one)",
                nodes, ppn));
        List<String> rules = new ArrayList<>();
        for (String layer : List.of(Measurement.INTRA, Measurement.INTER)) {
            for (Collective c : List.of(Collective.ALLREDUCE, Collective.REDUCE, Collective.BARRIER)) {
                List<Choice> cs = choose(all, nodes, ppn, c, layer, guard);
                if (cs.isEmpty()) {
                    continue;
                }
                for (Choice ch : cs) {
                    StringBuilder sb = new StringBuilder("# ").append(Measurement.name(c)).append(' ').append(layer).append(' ')
                            .append(Sizes.format(ch.bytes())).append(" B:");
                    List<Measurement> at = new ArrayList<>();
                    for (Measurement m : all) {
                        if (m.nodes() == nodes && m.ppn() == ppn && m.collective() == c && m.layer().equals(layer)
                                && m.bytes() == ch.bytes()) {
                            at.add(m);
                        }
                    }
                    at.sort(Comparator.comparingDouble(Measurement::meanUs));
                    for (Measurement m : at) {
                        sb.append(String.format(Locale.ROOT, " %s %.2f+-%.2f(%s%s)", m.candidate(), m.meanUs(), m.stderrUs(),
                                m.passes() > 1 ? m.passes() + "p " + m.rounds() + "r" : Integer.toString(m.rounds()), m.stable() ? "" : "*"));
                    }
                    sb.append(" -> ").append(ch.candidate());
                    if (!ch.note().isEmpty()) {
                        sb.append(" (").append(ch.note()).append(')');
                    }
                    out.add(sb.toString());
                }
                List<Choice> arInter = choose(all, nodes, ppn, Collective.ALLREDUCE, Measurement.INTER, guard);
                boolean sharpFirst = !arInter.isEmpty() && arInter.get(0).candidate().startsWith("sharp");
                rules.addAll(rules(c, layer, cs, sharpFirst));
            }
        }
        if (rules.stream().anyMatch(r -> r.startsWith("allreduce:0-1:"))) {
            out.add("# the host path's barrier is its spine: a recursive k-ing at the radix of a 0-byte allreduce, hence allreduce:0-1");
        }
        out.addAll(rules);
        return out;
    }

    private static List<String> rules(Collective c, String layer, List<Choice> cs, boolean sharpFirst) {
        List<String> out = new ArrayList<>();
        String name = Measurement.name(c);
        if (c == Collective.BARRIER) {
            String cand = cs.get(0).candidate();
            out.add("barrier:0-inf:" + cand);
            // the host path's barrier is its spine, at the radix of a 0-byte allreduce; but SHARP is only
            // taken as a prefix from 0 bytes, so where allreduce chose SHARP the spine keeps its radix
            if (layer.equals(Measurement.INTER) && !cand.equals("sharp") && !sharpFirst) {
                out.add("allreduce:0-1:" + cand);
            }
            return out;
        }
        List<Long> starts = new ArrayList<>();
        List<String> winners = new ArrayList<>();
        for (Choice ch : cs) {
            if (winners.isEmpty() || !winners.get(winners.size() - 1).equals(ch.candidate())) {
                starts.add(winners.isEmpty() ? 0L : ch.from());
                winners.add(ch.candidate());
            }
        }
        for (int i = 0; i < winners.size(); i++) {
            long hi = i + 1 < winners.size() ? starts.get(i + 1) : Long.MAX_VALUE;
            if (winners.get(i).equals("exchange")) {
                // the exchange is only tried at small sizes (it reads every rank's slot): never extend it
                // beyond twice the largest size it won at; above, the rules of lower precedence apply
                long won = 0;
                for (Choice ch : cs) {
                    if (ch.candidate().equals("exchange") && ch.bytes() >= starts.get(i) && ch.bytes() < hi) {
                        won = Math.max(won, ch.bytes());
                    }
                }
                hi = Math.min(hi, Math.max(starts.get(i) + 1, 2 * won));
            }
            out.add(name + ":" + Sizes.format(starts.get(i)) + "-" + Sizes.format(hi) + ":" + winners.get(i));
        }
        return out;
    }

    public static String header(int nodes, int ppn) {
        return "[nodes=" + nodes + ":ppn=" + ppn + ":measured]";
    }

    /**
     * {@code existing} (a table file's lines, or empty) with {@code sections} merged in: an existing
     * section with the same header line is replaced, others are kept; {@code preamble} replaces the
     * comments before the first section. Measured sections go last.
     */
    public static List<String> merge(List<String> existing, List<String> preamble, List<List<String>> sections) {
        Map<String, List<String>> blocks = new LinkedHashMap<>();
        List<String> cur = null;
        List<String> loose = new ArrayList<>(List.of("[]   # rules found outside any section, kept as they were"));
        for (String l : existing) {
            String t = l.trim();
            if (t.startsWith("[")) {
                cur = new ArrayList<>();
                blocks.put(normal(t), cur);
            }
            if (cur != null) {
                cur.add(l);
            } else if (!t.isEmpty() && !t.startsWith("#")) {
                loose.add(l); // a rule before the first section: never dropped
            }
        }
        if (loose.size() > 1) {
            List<String> prev = blocks.remove("[]");
            if (prev != null) {
                loose.addAll(prev.subList(1, prev.size()));
            }
            Map<String, List<String>> withLoose = new LinkedHashMap<>();
            withLoose.put("[]", loose);
            withLoose.putAll(blocks);
            blocks = withLoose;
        }
        for (List<String> s : sections) {
            blocks.remove(normal(s.get(0)));
            blocks.put(normal(s.get(0)), s);
        }
        List<String> out = new ArrayList<>(preamble);
        List<List<String>> measured = new ArrayList<>();
        for (Map.Entry<String, List<String>> e : blocks.entrySet()) {
            if (e.getKey().contains(":measured")) {
                measured.add(e.getValue());
            } else {
                out.add("");
                out.addAll(trim(e.getValue()));
            }
        }
        measured.sort(Comparator.comparing((List<String> s) -> shapeOf(s.get(0))[0]).thenComparing(s -> shapeOf(s.get(0))[1]));
        for (List<String> s : measured) {
            out.add("");
            out.addAll(trim(s));
        }
        return out;
    }

    private static List<String> trim(List<String> s) {
        List<String> out = new ArrayList<>(s);
        while (!out.isEmpty() && out.get(out.size() - 1).isBlank()) {
            out.remove(out.size() - 1);
        }
        return out;
    }

    private static String normal(String header) {
        int hash = header.indexOf('#');
        return (hash >= 0 ? header.substring(0, hash) : header).replace(" ", "").toLowerCase(Locale.ROOT);
    }

    private static int[] shapeOf(String header) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("nodes=(\\d+).*ppn=(\\d+)").matcher(header);
        return m.find() ? new int[] {Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2))} : new int[] {0, 0};
    }

    /**
     * Merges one section (its first line the header) into the table file {@code table}, keeping the
     * file's other sections and its leading comments (a new file gets {@link #preamble()}); the result
     * is parsed before it is written.
     */
    public static List<String> mergeSection(Path table, List<String> section) {
        return mergeInto(table, List.of(section), true);
    }

    /** The comments a table file written by the tuner starts with. */
    public static List<String> preamble() {
        List<String> out = new ArrayList<>();
        out.add("# sharp4j tuning table, written by sharp4j tune (last on " + java.time.LocalDateTime.now().withNano(0) + ")");
        out.add("# Format: org.sharp4j.tuning.TuningTable. One section per job shape: [nodes=N:ppn=P:measured] from");
        out.add("# the measurements in this file's .csv (rerunning sharp4j tune at another shape adds its section);");
        out.add("# [modelled] sections come from sharp4j model --seed-table. Measured sections come last and win.");
        out.add("# Use it with -Dsharp4j.tune.file=THIS_FILE (or SHARP4J_TUNE_FILE); sharp4j info shows each rule's provenance.");
        return out;
    }

    /**
     * Rewrites {@code table} from the measurements of every shape in {@code ms}, keeping its other
     * sections; the result is parsed before it is written (a table the engine would refuse is never written).
     */
    public static List<String> write(Path table, List<Measurement> ms, double guard) {
        List<List<String>> sections = new ArrayList<>();
        for (int[] s : shapes(ms)) {
            sections.add(section(ms, s[0], s[1], guard));
        }
        return mergeInto(table, sections, false);
    }

    /**
     * The one place that writes a table file: {@code sections} merged into {@code table}'s other sections,
     * under its own leading comments ({@code keepComments}, where it has any) or a fresh {@link #preamble()};
     * parsed before it is written, so a table the engine would refuse is never written.
     */
    private static List<String> mergeInto(Path table, List<List<String>> sections, boolean keepComments) {
        try {
            List<String> existing = Files.exists(table) ? Files.readAllLines(table, StandardCharsets.UTF_8) : List.of();
            List<String> comments = new ArrayList<>();
            for (String l : existing) {
                if (l.trim().startsWith("[") || !(l.isBlank() || l.trim().startsWith("#"))) {
                    break;
                }
                comments.add(l);
            }
            List<String> lines = merge(existing, keepComments && !existing.isEmpty() ? trim(comments) : preamble(), sections);
            RuleParser.parseLines(lines, table.toString());
            Path parent = table.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            Files.write(table, lines, StandardCharsets.UTF_8);
            return lines;
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot write the tuning table " + table + ": " + e.getMessage(), e);
        }
    }
}
