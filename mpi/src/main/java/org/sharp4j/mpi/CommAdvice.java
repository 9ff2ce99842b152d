package org.sharp4j.mpi;

import net.bytebuddy.asm.Advice;

/**
 * The code the agent inlines at the start of Open MPI Java's methods. Parameters are typed
 * {@code Object} so that building the advice never loads an {@code mpi.*} class (the agent is
 * installed before mpi.jar is touched, and mpi.jar may not be there at all); the casts run inside
 * the instrumented methods, where the types are exact.
 */
final class CommAdvice {
    private CommAdvice() {
    }

    /** {@code allReduce(Object sendbuf, Object recvbuf, int count, Datatype type, Op op)}. */
    static final class AllReduce {
        private AllReduce() {
        }

        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.This Object comm, @Advice.Argument(0) Object send, @Advice.Argument(1) Object recv,
                @Advice.Argument(2) int count, @Advice.Argument(3) Object type, @Advice.Argument(4) Object op) throws Exception {
            return MpiRouter.allReduce((mpi.Comm) comm, send, recv, count, (mpi.Datatype) type, (mpi.Op) op);
        }
    }

    /** {@code allReduce(Object buf, int count, Datatype type, Op op)}: MPI_IN_PLACE. */
    static final class AllReduceInPlace {
        private AllReduceInPlace() {
        }

        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.This Object comm, @Advice.Argument(0) Object buf, @Advice.Argument(1) int count,
                @Advice.Argument(2) Object type, @Advice.Argument(3) Object op) throws Exception {
            return MpiRouter.allReduce((mpi.Comm) comm, buf, count, (mpi.Datatype) type, (mpi.Op) op);
        }
    }

    /** {@code reduce(Object sendbuf, Object recvbuf, int count, Datatype type, Op op, int root)}. */
    static final class Reduce {
        private Reduce() {
        }

        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.This Object comm, @Advice.Argument(0) Object send, @Advice.Argument(1) Object recv,
                @Advice.Argument(2) int count, @Advice.Argument(3) Object type, @Advice.Argument(4) Object op,
                @Advice.Argument(5) int root) throws Exception {
            return MpiRouter.reduce((mpi.Comm) comm, send, recv, count, (mpi.Datatype) type, (mpi.Op) op, root);
        }
    }

    /** {@code reduce(Object buf, int count, Datatype type, Op op, int root)}: MPI_IN_PLACE at the root. */
    static final class ReduceInPlace {
        private ReduceInPlace() {
        }

        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.This Object comm, @Advice.Argument(0) Object buf, @Advice.Argument(1) int count,
                @Advice.Argument(2) Object type, @Advice.Argument(3) Object op, @Advice.Argument(4) int root) throws Exception {
            return MpiRouter.reduce((mpi.Comm) comm, buf, count, (mpi.Datatype) type, (mpi.Op) op, root);
        }
    }

    /** {@code barrier()}. */
    static final class Barrier {
        private Barrier() {
        }

        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class)
        static boolean enter(@Advice.This Object comm) throws Exception {
            return MpiRouter.barrier((mpi.Comm) comm);
        }
    }

    /** {@code iAllReduce}, {@code iReduce}, {@code iBarrier}: MPI's, only counted. */
    static final class NonBlocking {
        private NonBlocking() {
        }

        @Advice.OnMethodEnter
        static void enter(@Advice.Origin("#m") String method) {
            MpiRouter.nonBlocking(method);
        }
    }

    /** {@code free()}, {@code disconnect()}: the communicator's sharp4j state goes first. */
    static final class Free {
        private Free() {
        }

        @Advice.OnMethodEnter
        static void enter(@Advice.This Object comm) {
            MpiRouter.freeing((mpi.Comm) comm);
        }
    }

    /** {@code MPI.Finalize()}: sharp4j's communicators close and the summary is logged while MPI still runs. */
    static final class Finalize {
        private Finalize() {
        }

        @Advice.OnMethodEnter
        static void enter() {
            MpiRouter.finalizing();
        }
    }
}
