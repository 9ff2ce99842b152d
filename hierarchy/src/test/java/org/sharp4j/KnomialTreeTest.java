package org.sharp4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.sharp4j.coll.KnomialTree;

class KnomialTreeTest {
    @Test
    void binomialShape() {
        assertArrayEquals(new int[] {1, 2, 4}, KnomialTree.children(0, 8, 2));
        assertArrayEquals(new int[] {5, 6}, KnomialTree.children(4, 8, 2));
        assertArrayEquals(new int[] {}, KnomialTree.children(7, 8, 2));
        assertEquals(6, KnomialTree.parent(7, 2));
        assertEquals(0, KnomialTree.parent(4, 2));
    }

    @Test
    void ternaryShapeWithPartialLastLevel() {
        assertArrayEquals(new int[] {1, 2, 3, 6}, KnomialTree.children(0, 7, 3));
        assertArrayEquals(new int[] {4, 5}, KnomialTree.children(3, 7, 3));
        assertEquals(3, KnomialTree.parent(5, 3));
    }

    @Test
    void everyMemberHasExactlyTheParentThatListsIt() {
        for (int k = 2; k <= 9; k++) {
            for (int n = 1; n <= 70; n++) {
                int[] seen = new int[n];
                for (int i = 0; i < n; i++) {
                    for (int c : KnomialTree.children(i, n, k)) {
                        assertEquals(i, KnomialTree.parent(c, k), "k=" + k + " n=" + n + " child " + c);
                        assertTrue(c > i);
                        seen[c]++;
                    }
                }
                for (int i = 1; i < n; i++) {
                    assertEquals(1, seen[i], "k=" + k + " n=" + n + " member " + i);
                }
            }
        }
    }
}
