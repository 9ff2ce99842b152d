package org.sharp4j.coll;

import java.util.Arrays;

/**
 * The k-nomial tree over members 0..n-1 rooted at 0, the shape of every shared-memory reduce.
 *
 * <p>Write a member index i in base k. Its parent clears the lowest non-zero digit:
 * {@code i = ... d_l k^l} with {@code d_l != 0} and lower digits 0 gives
 * {@code parent(i) = i - d_l k^l}. Its children are {@code i + j k^m} for every position
 * {@code m < l} (every m for the root) and {@code j = 1..k-1}, when below n. The subtree of a
 * child {@code c = i + j k^m} is the contiguous range {@code [c, c + k^m)}, so folding the
 * children in order of increasing m, then j, into {@code acc = x_i} computes the contiguous
 * range {@code [i, i + k^l)} left to right:
 *
 * <pre>
 *   k = 2, n = 8:   ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7))
 * </pre>
 *
 * That is the documented reduction order of the tree algorithm; a sequential reduction in it
 * reproduces every bit. Depth is ceil(log_k n), the cost model of paper 001 is
 * (k-1)(a + b m) ceil(log_k n).
 */
public final class KnomialTree {
    private KnomialTree() {
    }

    public static int parent(int i, int k) {
        if (i == 0) {
            return -1;
        }
        int pow = 1;
        while ((i / pow) % k == 0) {
            pow *= k;
        }
        return i - ((i / pow) % k) * pow;
    }

    /** Children of {@code i} in fold order (increasing distance). */
    public static int[] children(int i, int n, int k) {
        if (k < 2) {
            throw new IllegalArgumentException("radix must be >= 2, got " + k);
        }
        int[] out = new int[Math.max(0, n - 1)];
        int c = 0;
        for (long pow = 1; pow < n; pow *= k) {
            if (i != 0 && (i / pow) % k != 0) {
                break; // reached i's lowest non-zero digit
            }
            for (int j = 1; j < k; j++) {
                long child = i + j * pow;
                if (child < n) {
                    out[c++] = (int) child;
                }
            }
        }
        return Arrays.copyOf(out, c);
    }
}
