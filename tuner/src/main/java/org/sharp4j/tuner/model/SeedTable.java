package org.sharp4j.tuner.model;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import org.sharp4j.tuning.Algorithm;
import org.sharp4j.tuning.Collective;
import org.sharp4j.tuning.Sizes;

/**
 * A tuning table (the {@link org.sharp4j.tuning.TuningTable} file format) seeded from
 * {@link PerfModel}: per node-count range, per collective, the cheapest predicted inter-node
 * algorithm per message size, and the SHARP size limit.
 *
 * <ul>
 *   <li>Node ranges: the given node counts {@code n_0 < n_1 < ...} give ranges
 *       {@code [n_i, n_(i+1) - 1]} and {@code [n_last, inf]}; each is decided at its lower end
 *       n_i. Adjacent ranges with the same rules are merged.</li>
 *   <li>Sizes: the candidates are compared at the given sizes plus {@code sharp.max.bytes + 1};
 *       a winner at size s covers [s, next winner's size), the first from 0, the last to inf.</li>
 *   <li>Candidates: SHARP (allreduce, reduce, barrier), k-nomial with radix 2, 4, 8 and the
 *       configured radix, SRA likewise (allreduce only; the engine's reduce and barrier are
 *       k-nomial). Ties keep the earlier candidate in that order.</li>
 *   <li>SHARP is only kept as a prefix from 0 bytes (the engine takes SHARP for messages from 0 up
 *       to the end of the first SHARP segment): its limit is the first size where it stops being
 *       the cheapest, at most {@code sharp.max.bytes + 1} (exclusive).</li>
 * </ul>
 */
public final class SeedTable {
    private SeedTable() {
    }

    /** One candidate's choice at one size. */
    static final class Pick {
        final Algorithm alg;
        final int radix;
        final double us;

        Pick(Algorithm alg, int radix, double us) {
            this.alg = alg;
            this.radix = radix;
            this.us = us;
        }

        String rule() {
            return alg == Algorithm.SHARP ? "sharp" : alg.key() + ":radix=" + radix;
        }
    }

    static int[] radices(int configured) {
        TreeSet<Integer> s = new TreeSet<>(List.of(2, 4, 8));
        s.add(configured);
        return s.stream().mapToInt(Integer::intValue).toArray();
    }

    /** The cheapest inter-node algorithm for {@code c} at n nodes and m bytes. */
    static Pick best(PerfModel model, Collective c, long n, long m) {
        return best(model, c, n, m, true);
    }

    static Pick best(PerfModel model, Collective c, long n, long m, boolean allowSharp) {
        ModelParams p = model.params();
        Pick best = new Pick(Algorithm.SHARP, 0, !allowSharp ? Double.POSITIVE_INFINITY
                : c == Collective.BARRIER ? model.sharp(n, 0) : model.sharp(n, m));
        if (c == Collective.BARRIER) {
            for (int k : radices(p.barrierRadix)) {
                double t = model.barrier(n, k);
                if (t < best.us) {
                    best = new Pick(Algorithm.KNOMIAL, k, t);
                }
            }
            return best;
        }
        for (int k : radices(p.knomialRadix)) {
            double t = model.knomial(n, m, k);
            if (t < best.us) {
                best = new Pick(Algorithm.KNOMIAL, k, t);
            }
        }
        if (c == Collective.ALLREDUCE) {
            for (int k : radices(p.sraRadix)) {
                double t = model.sra(n, m, k);
                if (t < best.us) {
                    best = new Pick(Algorithm.SRA, k, t);
                }
            }
        }
        return best;
    }

    /** Rules (without the nodes= field) for one collective at n nodes: "LO-HI:choice". */
    static List<String> rulesAt(PerfModel model, Collective c, long n, long[] sizes) {
        return rulesAt(model, c, n, sizes, true);
    }

    static List<String> rulesAt(PerfModel model, Collective c, long n, long[] sizes, boolean sharp) {
        List<String> out = new ArrayList<>();
        if (c == Collective.BARRIER) {
            out.add("0-inf:" + best(model, c, n, 0, sharp).rule());
            return out;
        }
        TreeSet<Long> grid = new TreeSet<>();
        for (long s : sizes) {
            grid.add(s);
        }
        grid.add(model.params().sharpMaxBytes + 1);
        List<Long> starts = new ArrayList<>();
        List<String> winners = new ArrayList<>();
        boolean sharpPrefix = sharp;
        for (long m : grid) {
            // SHARP only serves a prefix from 0 bytes: after the first host winner, hosts only
            Pick b = best(model, c, n, m, sharpPrefix);
            if (b.alg != Algorithm.SHARP) {
                sharpPrefix = false;
            }
            String r = b.rule();
            if (winners.isEmpty() || !winners.get(winners.size() - 1).equals(r)) {
                starts.add(winners.isEmpty() ? 0L : m);
                winners.add(r);
            }
        }
        for (int i = 0; i < winners.size(); i++) {
            long hi = i + 1 < winners.size() ? starts.get(i + 1) : Long.MAX_VALUE;
            out.add(Sizes.format(starts.get(i)) + "-" + Sizes.format(hi) + ":" + winners.get(i));
        }
        return out;
    }

    /** The table file's lines: comments (parameters, ranges), then the rules. */
    public static List<String> generate(ModelParams params, int[] nodes, long[] sizes) {
        return generate(params, nodes, sizes, true);
    }

    /** As {@link #generate(ModelParams, int[], long[])}; {@code sharp}: whether SHARP is a candidate (the cluster has it). */
    public static List<String> generate(ModelParams params, int[] nodes, long[] sizes, boolean sharp) {
        PerfModel model = new PerfModel(params);
        int[] ns = Arrays.stream(nodes).filter(x -> x >= 2).distinct().sorted().toArray();
        if (ns.length == 0) {
            throw new IllegalArgumentException("seeding a table needs at least one node count >= 2");
        }
        if (sizes.length == 0) {
            throw new IllegalArgumentException("seeding a table needs at least one message size");
        }
        List<String> out = new ArrayList<>();
        out.add("# sharp4j tuning table seeded by sharp4j model on " + java.time.LocalDate.now());
        out.add("# inter-node rules only: per node-count range the cheapest predicted algorithm per size");
        out.add("# (decided at the lower end of each range; SHARP only as a prefix from 0 bytes, its HI is the limit).");
        if (!sharp) {
            out.add("# SHARP is not a candidate: the measurements this was fitted from had no SHARP.");
        }
        out.add("# Format: see org.sharp4j.tuning.TuningTable. Model parameters (org.sharp4j.tuner.model.ModelParams):");
        for (String l : params.describeWithOrigin()) {
            out.add("#   " + l);
        }
        Collective[] order = {Collective.ALLREDUCE, Collective.REDUCE, Collective.BARRIER};
        for (Collective c : order) {
            String name = c.name().toLowerCase(Locale.ROOT);
            int lo = ns[0];
            List<String> cur = rulesAt(model, c, ns[0], sizes, sharp);
            for (int i = 1; i <= ns.length; i++) {
                List<String> next = i < ns.length ? rulesAt(model, c, ns[i], sizes, sharp) : null;
                if (next != null && next.equals(cur)) {
                    continue;
                }
                String range = i < ns.length ? lo + "-" + (ns[i] - 1) : lo + "-inf";
                if (i < ns.length && ns[i] - 1 == lo) {
                    range = Integer.toString(lo);
                }
                for (String r : cur) {
                    int colon = r.indexOf(':');
                    out.add(name + ":" + r.substring(0, colon) + ":nodes=" + range + r.substring(colon));
                }
                if (next != null) {
                    lo = ns[i];
                    cur = next;
                }
            }
        }
        return out;
    }
}
