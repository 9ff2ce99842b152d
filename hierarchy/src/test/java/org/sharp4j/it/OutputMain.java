package org.sharp4j.it;

import java.lang.management.ManagementFactory;

/**
 * A launcher rank for the output and property tests: {@code OutputMain LINES LENGTH PROP...}
 * prints {@code rank R prop NAME=VALUE} for each PROP, {@code rank R args ARGS} (its JVM's
 * arguments), then LINES lines {@code rank R line K xxx...} of LENGTH characters to stdout
 * interleaved with {@code rank R err K} to stderr, and ends with {@code rank R last} on stdout
 * without a newline.
 */
public final class OutputMain {
    private OutputMain() {
    }

    /** Line k of rank r: LENGTH characters, so that a line cut by another is seen. */
    public static String line(int r, int k, int length) {
        StringBuilder sb = new StringBuilder("rank " + r + " line " + k + " ");
        while (sb.length() < length) {
            sb.append((char) ('a' + (sb.length() + r) % 26));
        }
        return sb.toString();
    }

    public static void main(String[] args) {
        int r = Integer.parseInt(System.getenv("SHARP4J_RANK"));
        int lines = Integer.parseInt(args[0]);
        int length = Integer.parseInt(args[1]);
        for (int i = 2; i < args.length; i++) {
            System.out.println("rank " + r + " prop " + args[i] + "=" + System.getProperty(args[i]));
        }
        System.out.println("rank " + r + " args " + ManagementFactory.getRuntimeMXBean().getInputArguments());
        for (int k = 0; k < lines; k++) {
            System.out.println(line(r, k, length));
            if (k % 10 == 0) {
                System.err.println("rank " + r + " err " + k);
            }
        }
        System.out.print("rank " + r + " last");
        System.out.flush();
    }
}
