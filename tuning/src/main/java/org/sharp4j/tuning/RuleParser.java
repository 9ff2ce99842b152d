package org.sharp4j.tuning;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Parses rules from a table file (one rule a line, {@code #} comments) or from a one-line
 * override string (rules joined by {@code #}, as in UCC's {@code UCC_TL_UCP_TUNE}). Every
 * malformed input is rejected with where it was (file and line, or the property) and why.
 */
public final class RuleParser {
    private RuleParser() {
    }

    /** Rules of a table file; origin of each rule is {@code file:line}. */
    public static List<Rule> parseFile(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new TuningFormatException(file.toString(), 0, null, "cannot read the table file: " + e);
        }
        return parseLines(lines, file.toString());
    }

    /**
     * Rules of a table given as lines (for tests and for files already read). A line
     * {@code [nodes=A-B:ppn=A-B:measured]} opens a section: the rules after it apply only to that job
     * shape (a rule's own nodes=/ppn= is intersected with it) and carry the provenance word, if any
     * ({@code measured} or {@code modelled}); {@code []} or the next header ends it.
     */
    public static List<Rule> parseLines(List<String> lines, String where) {
        List<Rule> out = new ArrayList<>();
        Section sec = Section.NONE;
        for (int i = 0; i < lines.size(); i++) {
            String raw = lines.get(i);
            int hash = raw.indexOf('#');
            String t = (hash >= 0 ? raw.substring(0, hash) : raw).trim();
            if (t.isEmpty()) {
                continue;
            }
            if (t.startsWith("[")) {
                sec = parseSection(t, where, i + 1);
                continue;
            }
            Rule r = parseRule(t, where, i + 1, where + ":" + (i + 1));
            out.add(sec.apply(r, where, i + 1, t));
        }
        return out;
    }

    /** A section header's shape and provenance. */
    private static final class Section {
        static final Section NONE = new Section(new int[] {1, Integer.MAX_VALUE}, new int[] {1, Integer.MAX_VALUE}, null);
        final int[] nodes;
        final int[] ppn;
        final Rule.Provenance provenance;

        Section(int[] nodes, int[] ppn, Rule.Provenance provenance) {
            this.nodes = nodes;
            this.ppn = ppn;
            this.provenance = provenance;
        }

        Rule apply(Rule r, String where, int line, String text) {
            if (this == NONE) {
                return r;
            }
            int n0 = Math.max(nodes[0], r.minNodes());
            int n1 = Math.min(nodes[1], r.maxNodes());
            int p0 = Math.max(ppn[0], r.minPpn());
            int p1 = Math.min(ppn[1], r.maxPpn());
            if (n0 > n1 || p0 > p1) {
                throw bad(where, line, text, "the rule's nodes=/ppn= lie outside its section's (nodes=" + nodes[0] + "-"
                        + nodes[1] + ", ppn=" + ppn[0] + "-" + ppn[1] + ")");
            }
            return new Rule(r.collectives(), r.minBytes(), r.maxBytes(), n0, n1, p0, p1, r.algorithm(), r.radix(), r.chunk(),
                    r.pipeline(), r.origin(), provenance);
        }
    }

    private static Section parseSection(String t, String where, int line) {
        if (!t.endsWith("]")) {
            throw bad(where, line, t, "a section header is [nodes=A-B:ppn=A-B:measured|modelled], with the ']' on the same line");
        }
        String body = t.substring(1, t.length() - 1).trim();
        if (body.isEmpty()) {
            return Section.NONE;
        }
        int[] nodes = null;
        int[] ppn = null;
        Rule.Provenance prov = null;
        for (String g0 : body.split(":", -1)) {
            String g = g0.trim();
            int eq = g.indexOf('=');
            String key = (eq < 0 ? g : g.substring(0, eq)).trim().toLowerCase(Locale.ROOT);
            if (eq < 0) {
                Rule.Provenance found = null;
                for (Rule.Provenance p : Rule.Provenance.values()) {
                    if (p.key().equals(key)) {
                        found = p;
                    }
                }
                if (found == null || prov != null) {
                    throw bad(where, line, t, found == null ? "unknown section field '" + g + "' (expected nodes=, ppn=, measured or modelled)"
                            : "two provenance words in one section");
                }
                prov = found;
            } else if (key.equals("nodes") && nodes == null) {
                nodes = parseIntRange(key, g.substring(eq + 1), where, line, t);
            } else if (key.equals("ppn") && ppn == null) {
                ppn = parseIntRange(key, g.substring(eq + 1), where, line, t);
            } else {
                throw bad(where, line, t, "section field '" + g + "' unknown or given twice (expected nodes=, ppn=, measured or modelled)");
            }
        }
        return new Section(nodes != null ? nodes : Section.NONE.nodes, ppn != null ? ppn : Section.NONE.ppn, prov);
    }

    /** Rules of an override string {@code rule#rule#...}; origin is {@code where} ("sharp4j.tune", "SHARP4J_TUNE"). */
    public static List<Rule> parseOverride(String s, String where) {
        List<Rule> out = new ArrayList<>();
        if (s == null) {
            return out;
        }
        String[] tokens = s.split("#", -1);
        for (int i = 0; i < tokens.length; i++) {
            String t = tokens[i].trim();
            if (t.isEmpty()) {
                if (tokens.length > 1 && i < tokens.length - 1) {
                    throw new TuningFormatException(where, 0, s, "empty rule " + (i + 1) + " (two '#' in a row or a leading '#')");
                }
                continue;
            }
            out.add(parseRule(t, where, 0, where + " rule " + (i + 1)));
        }
        return out;
    }

    /** One rule; {@code line} is 0 outside files. */
    public static Rule parseRule(String text, String where, int line, String origin) {
        String[] f = text.trim().split(":", -1);
        if (f.length < 3) {
            throw bad(where, line, text, "a rule needs at least COLLECTIVES:LO-HI:ALGORITHM-or-PARAMETER, got " + f.length + " field(s)");
        }
        Set<Collective> colls = parseCollectives(f[0], where, line, text);
        long[] size = parseSizeRange(f[1], where, line, text);
        int[] nodes = null;
        int[] ppn = null;
        Algorithm alg = null;
        int radix = Rule.UNSET;
        int chunk = Rule.UNSET;
        int pipeline = Rule.UNSET;
        for (int i = 2; i < f.length; i++) {
            String g = f[i].trim();
            if (g.isEmpty()) {
                throw bad(where, line, text, "empty field " + (i + 1));
            }
            int eq = g.indexOf('=');
            if (eq < 0) {
                Algorithm a = Algorithm.parse(g);
                if (a == null) {
                    throw bad(where, line, text, "unknown algorithm '" + g + "' (expected exchange, tree, tiled, direct, pipelined, cma, sharp, knomial or sra)");
                }
                if (alg != null) {
                    throw bad(where, line, text, "two algorithms: " + alg.key() + " and " + a.key());
                }
                alg = a;
                continue;
            }
            String key = g.substring(0, eq).trim().toLowerCase(Locale.ROOT);
            String val = g.substring(eq + 1).trim();
            if (val.isEmpty()) {
                throw bad(where, line, text, "no value for '" + key + "'");
            }
            switch (key) {
                case "nodes":
                    if (nodes != null) {
                        throw bad(where, line, text, "nodes given twice");
                    }
                    nodes = parseIntRange(key, val, where, line, text);
                    break;
                case "ppn":
                    if (ppn != null) {
                        throw bad(where, line, text, "ppn given twice");
                    }
                    ppn = parseIntRange(key, val, where, line, text);
                    break;
                case "radix":
                    if (radix != Rule.UNSET) {
                        throw bad(where, line, text, "radix given twice");
                    }
                    try {
                        radix = Integer.parseInt(val);
                    } catch (NumberFormatException e) {
                        throw bad(where, line, text, "radix is not a number: '" + val + "'");
                    }
                    if (radix < 2 || radix > Rule.MAX_RADIX) {
                        throw bad(where, line, text, "radix must be in 2.." + Rule.MAX_RADIX + ", got " + radix);
                    }
                    break;
                case "chunk":
                    if (chunk != Rule.UNSET) {
                        throw bad(where, line, text, "chunk given twice");
                    }
                    long c;
                    try {
                        c = Sizes.parseBytes(val);
                    } catch (IllegalArgumentException e) {
                        throw bad(where, line, text, "chunk is not a size: '" + val + "'");
                    }
                    if (c < 64 || c % 64 != 0 || c > (1L << 30)) {
                        throw bad(where, line, text, "chunk must be a multiple of 64 bytes between 64 and 1G, got " + val);
                    }
                    chunk = (int) c;
                    break;
                case "pipeline":
                    if (pipeline != Rule.UNSET) {
                        throw bad(where, line, text, "pipeline given twice");
                    }
                    try {
                        pipeline = Integer.parseInt(val);
                    } catch (NumberFormatException e) {
                        throw bad(where, line, text, "pipeline is not a number: '" + val + "'");
                    }
                    if (pipeline < 1 || pipeline > Rule.MAX_PIPELINE) {
                        throw bad(where, line, text, "pipeline must be in 1.." + Rule.MAX_PIPELINE + ", got " + pipeline);
                    }
                    break;
                default:
                    throw bad(where, line, text, "unknown parameter '" + key + "' (expected nodes, ppn, radix, chunk or pipeline)");
            }
        }
        if (alg == null && radix == Rule.UNSET && chunk == Rule.UNSET && pipeline == Rule.UNSET) {
            throw bad(where, line, text, "no algorithm and no parameter: nothing to set");
        }
        if (alg != null && radix != Rule.UNSET && !alg.takesRadix()) {
            throw bad(where, line, text, alg.key() + " takes no radix");
        }
        if (alg != null && chunk != Rule.UNSET && !alg.takesChunk()) {
            throw bad(where, line, text, alg.key() + " takes no chunk");
        }
        if (alg != null && pipeline != Rule.UNSET && !alg.takesPipeline()) {
            throw bad(where, line, text, alg.key() + " takes no pipeline (only sharp does)");
        }
        if ((alg == Algorithm.TILED || alg == Algorithm.PIPELINED || alg == Algorithm.CMA_SPLIT) && colls.contains(Collective.BARRIER)) {
            if (colls.size() == 1) {
                throw bad(where, line, text, "barrier moves no data: " + alg.key() + " does not apply (use tree)");
            }
            colls.remove(Collective.BARRIER); // all:...:tiled means the data collectives
        }
        if ((alg == Algorithm.DIRECT || alg == Algorithm.CMA) && !colls.equals(EnumSet.of(Collective.REDUCE))) {
            throw bad(where, line, text, alg.key() + " is a Reduce algorithm: give it to reduce alone (reduce:LO-HI:" + alg.key() + ")");
        }
        return new Rule(colls, size[0], size[1], nodes == null ? 1 : nodes[0], nodes == null ? Integer.MAX_VALUE : nodes[1],
                ppn == null ? 1 : ppn[0], ppn == null ? Integer.MAX_VALUE : ppn[1], alg, radix, chunk, pipeline, origin, null);
    }

    private static Set<Collective> parseCollectives(String s, String where, int line, String text) {
        Set<Collective> out = EnumSet.noneOf(Collective.class);
        String t = s.trim().toLowerCase(Locale.ROOT);
        if (t.isEmpty()) {
            throw bad(where, line, text, "no collective");
        }
        if (t.equals("all") || t.equals("*")) {
            return EnumSet.allOf(Collective.class);
        }
        for (String c : t.split(",", -1)) {
            String n = c.trim();
            Collective found = null;
            for (Collective k : Collective.values()) {
                if (k.name().toLowerCase(Locale.ROOT).equals(n)) {
                    found = k;
                }
            }
            if (found == null) {
                throw bad(where, line, text, "unknown collective '" + n + "' (expected allreduce, reduce, barrier or all)");
            }
            out.add(found);
        }
        return out;
    }

    private static long[] parseSizeRange(String s, String where, int line, String text) {
        String t = s.trim();
        int dash = t.indexOf('-');
        if (dash <= 0 || dash == t.length() - 1) {
            throw bad(where, line, text, "size range must be LO-HI (e.g. 0-4k, 4k-inf), got '" + t + "'");
        }
        long lo;
        long hi;
        try {
            lo = Sizes.parseBytes(t.substring(0, dash));
            hi = Sizes.parseBytes(t.substring(dash + 1));
        } catch (IllegalArgumentException e) {
            throw bad(where, line, text, "bad size range '" + t + "': " + e.getMessage());
        }
        if (lo == Long.MAX_VALUE) {
            throw bad(where, line, text, "size range cannot start at inf");
        }
        if (hi <= lo) {
            throw bad(where, line, text, "empty size range '" + t + "' (LO is inclusive, HI exclusive: HI must exceed LO)");
        }
        return new long[] {lo, hi};
    }

    private static int[] parseIntRange(String key, String s, String where, int line, String text) {
        String t = s.trim().toLowerCase(Locale.ROOT);
        int dash = t.indexOf('-');
        try {
            int a;
            int b;
            if (dash < 0) {
                a = Integer.parseInt(t);
                b = a;
            } else {
                a = Integer.parseInt(t.substring(0, dash).trim());
                String hi = t.substring(dash + 1).trim();
                b = hi.equals("inf") ? Integer.MAX_VALUE : Integer.parseInt(hi);
            }
            if (a < 1 || b < a) {
                throw bad(where, line, text, key + " range must be A-B with 1 <= A <= B (B may be inf), got '" + s + "'");
            }
            return new int[] {a, b};
        } catch (NumberFormatException e) {
            throw bad(where, line, text, key + " range is not A, A-B or A-inf: '" + s + "'");
        }
    }

    private static TuningFormatException bad(String where, int line, String text, String reason) {
        return new TuningFormatException(where, line, text, reason);
    }
}
