package org.sharp4j.mpi;

import mpi.Datatype;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import mpi.Op;
import mpi.UserFunction;
import org.sharp4j.Communicator;

/**
 * A program using the explicit API (run under mpirun by ExplicitApiIT, with and without the
 * agent): Sharp4jMpi.of for sharp4j's own API, the MPI-signature helpers, a pass-through through
 * a helper, a single-rank communicator, a duplicated communicator released before it is freed.
 * Rank 0 prints "EXPLICIT OK" and the counters.
 */
public final class ExplicitApiMain {
    private ExplicitApiMain() {
    }

    public static void main(String[] args) throws MPIException {
        MPI.Init(args);
        Intracomm w = MPI.COMM_WORLD;
        int rank = w.getRank();
        int size = w.getSize();
        long tri = (long) size * (size + 1) / 2;

        Communicator c = Sharp4jMpi.of(w);
        if (c != Sharp4jMpi.of(w) || c.rank() != rank || c.size() != size) {
            throw new IllegalStateException("of(COMM_WORLD) is not one cached communicator of the world's ranks");
        }
        double[] in = {rank + 1};
        double[] out = new double[1];
        c.allreduce(in, 0, out, 0, 1, org.sharp4j.Op.SUM);
        expect("sharp4j allreduce", out[0], tri);

        Sharp4jMpi.allReduce(w, in, out, 1, MPI.DOUBLE, MPI.MAX);
        expect("helper allReduce", out[0], size);
        long[] lbuf = {rank + 1};
        Sharp4jMpi.allReduce(w, lbuf, 1, MPI.LONG, MPI.SUM);
        expect("helper allReduce in place", lbuf[0], tri);
        double[] red = new double[1];
        Sharp4jMpi.reduce(w, in, red, 1, MPI.DOUBLE, MPI.SUM, size - 1);
        if (rank == size - 1) {
            expect("helper reduce", red[0], tri);
        }
        int[] ibuf = {rank + 1};
        Sharp4jMpi.reduce(w, ibuf, 1, MPI.INT, MPI.MIN, 0);
        if (rank == 0) {
            expect("helper reduce in place", ibuf[0], 1);
        }
        Sharp4jMpi.barrier(w);

        Op plus = new Op(new UserFunction() {
            @Override
            public void call(Object a, Object b, int count, Datatype type) {
                for (int i = 0; i < count; i++) {
                    ((int[]) b)[i] += ((int[]) a)[i];
                }
            }
        }, true);
        int[] u = {rank + 1};
        int[] uo = new int[1];
        Sharp4jMpi.allReduce(w, u, uo, 1, MPI.INT, plus); // a user-defined op: MPI does it
        expect("helper with a user-defined op", uo[0], tri);
        plus.free();

        Communicator self = Sharp4jMpi.of(MPI.COMM_SELF);
        double[] s = {rank + 1};
        self.allreduce(s, 0, 1, org.sharp4j.Op.SUM);
        expect("single-rank communicator", s[0], rank + 1);

        Intracomm dup = w.dup();
        Communicator d = Sharp4jMpi.of(dup);
        if (d == c) {
            throw new IllegalStateException("a duplicated communicator shares the world's sharp4j communicator");
        }
        d.barrier();
        Sharp4jMpi.release(dup);
        dup.free();

        if (rank == 0) {
            System.out.println("routed allReduce=" + Sharp4jMpi.routedCalls("allReduce") + " reduce=" + Sharp4jMpi.routedCalls("reduce")
                    + " barrier=" + Sharp4jMpi.routedCalls("barrier") + " passed allReduce=" + Sharp4jMpi.passedCalls("allReduce"));
            System.out.println("agent=" + Sharp4jMpi.agentInstalled());
            System.out.println("EXPLICIT OK");
        }
        MPI.Finalize();
    }

    private static void expect(String what, double got, double want) {
        if (Double.doubleToLongBits(got) != Double.doubleToLongBits(want)) {
            throw new IllegalStateException(what + ": got " + got + ", want " + want);
        }
    }
}
