package org.sharp4j.it;

import org.sharp4j.topology.CpuTopology;

/** A launcher rank that prints {@code rank R cpus LIST}: its CPU affinity as Linux reports it. */
public final class AffinityMain {
    private AffinityMain() {
    }

    public static void main(String[] args) {
        System.out.println("rank " + System.getenv("SHARP4J_RANK") + " cpus " + CpuTopology.detect().cpusAllowed);
    }
}
