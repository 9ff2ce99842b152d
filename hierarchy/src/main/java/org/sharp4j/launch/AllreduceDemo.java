package org.sharp4j.launch;

import org.sharp4j.Communicator;
import org.sharp4j.Op;
import org.sharp4j.Sharp4j;

/** {@code bin/sharp4j-run -np 4 demo}: every rank contributes its rank number; all print the sum. */
public final class AllreduceDemo {
    private AllreduceDemo() {
    }

    public static void main(String[] args) {
        try (Communicator comm = Sharp4j.init()) {
            double[] in = {comm.rank(), 1.0};
            double[] out = new double[2];
            comm.allreduce(in, out, Op.SUM);
            comm.barrier();
            System.out.println(String.format("rank %d of %d: sum of ranks = %.0f, ranks counted = %.0f (%s)", comm.rank(), comm.size(),
                    out[0], out[1], comm.topology())); // one write per line: ranks share stdout
        }
    }
}
