package org.sharp4j.fallback.algo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.BitSet;
import org.junit.jupiter.api.Test;

/** The pattern math against its definition: roles, symmetric groups, and that everyone hears from everyone. */
class KnomialPatternTest {

    @Test
    void knownShapes() {
        KnomialPattern p = new KnomialPattern(6, 4, 0); // full 4, n_extra 2: 0,2 proxies, 1,3 extras, 4,5 base
        assertEquals(4, p.full);
        assertEquals(2, p.nExtra);
        assertEquals(1, p.iterations);
        assertEquals(KnomialPattern.PROXY, p.role);
        assertEquals(1, p.partner);
        assertEquals(KnomialPattern.EXTRA, new KnomialPattern(6, 4, 3).role);
        assertEquals(KnomialPattern.BASE, new KnomialPattern(6, 4, 5).role);
        assertEquals(3, new KnomialPattern(6, 4, 5).loopRank);
        KnomialPattern q = new KnomialPattern(8, 3, 7); // full 3, n_full 2, n_base 6, n_extra 2: L = 2, last round partial
        assertEquals(2, q.nFull);
        assertEquals(2, q.nExtra);
        assertEquals(2, q.iterations);
        assertEquals(3, q.groupSize(0));
        assertEquals(2, q.groupSize(1));
        // lr(7) = 5: iteration 0 group {3,4,5} = ranks {5,6,7}; iteration 1 group {2,5} = ranks {4,7}
        assertEquals(5, q.peer(0, 0));
        assertEquals(7, q.peer(0, 2));
        assertEquals(2, q.position(0));
        assertEquals(4, q.peer(1, 0));
        assertEquals(1, q.position(1));
        KnomialPattern r = new KnomialPattern(3, 4, 2); // full 1, n_full 3: one partial iteration of 3
        assertEquals(1, r.iterations);
        assertEquals(3, r.groupSize(0));
        assertEquals(0, new KnomialPattern(1, 2, 0).iterations);
    }

    @Test
    void everyRankHearsFromEveryRankThroughSymmetricGroups() {
        for (int n = 1; n <= 70; n++) {
            for (int k = 2; k <= 8; k++) {
                check(n, k);
            }
        }
    }

    private static void check(int n, int k) {
        KnomialPattern[] ps = new KnomialPattern[n];
        for (int r = 0; r < n; r++) {
            ps[r] = new KnomialPattern(n, k, r);
        }
        String at = "n=" + n + " k=" + k;
        int L = ps[0].iterations;
        long kl = 1;
        for (int i = 0; i < L; i++) {
            kl *= k;
        }
        assertTrue(kl >= ps[0].nBase && (L == 0 || kl / k < ps[0].nBase), at + ": L is the smallest with k^L >= n_base");
        BitSet[] known = new BitSet[n];
        for (int r = 0; r < n; r++) {
            known[r] = new BitSet(n);
            known[r].set(r);
            assertEquals(L, ps[r].iterations, at);
        }
        int extras = 0;
        for (int r = 0; r < n; r++) {
            KnomialPattern p = ps[r];
            if (p.role == KnomialPattern.EXTRA) {
                extras++;
                assertEquals(KnomialPattern.PROXY, ps[p.partner].role, at);
                assertEquals(r, ps[p.partner].partner, at);
                known[p.partner].or(known[r]);
            }
        }
        assertEquals(ps[0].nExtra, extras, at);
        for (int i = 0; i < L; i++) {
            BitSet[] next = new BitSet[n];
            for (int r = 0; r < n; r++) {
                next[r] = (BitSet) known[r].clone();
            }
            for (int r = 0; r < n; r++) {
                KnomialPattern p = ps[r];
                if (p.role == KnomialPattern.EXTRA) {
                    continue;
                }
                int g = p.groupSize(i);
                int mp = p.position(i);
                assertTrue(g >= 2 && g <= k && mp < g, at + " rank " + r + " iteration " + i);
                assertEquals(r, p.peer(i, mp), at + ": position " + mp + " of rank " + r + " is itself");
                for (int pos = 0; pos < g; pos++) {
                    int q = p.peer(i, pos);
                    assertTrue(ps[q].role != KnomialPattern.EXTRA, at + ": extras never iterate");
                    // the peer sees the same group with the same positions
                    assertEquals(g, ps[q].groupSize(i), at);
                    assertEquals(pos, ps[q].position(i), at);
                    for (int s = 0; s < g; s++) {
                        assertEquals(p.peer(i, s), ps[q].peer(i, s), at + " iteration " + i);
                    }
                    next[r].or(known[q]);
                }
            }
            known = next;
        }
        for (int r = 0; r < n; r++) {
            KnomialPattern p = ps[r];
            BitSet k2 = p.role == KnomialPattern.EXTRA ? known[p.partner] : known[r];
            assertEquals(n, k2.cardinality(), at + ": rank " + r + " ends with everyone's contribution");
        }
    }
}
