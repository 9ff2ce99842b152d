# shellcheck shell=bash
# Source this file (". .ci/mpi-env.sh"): the single place that says how to run
# Open MPI Java ranks on CI and dev machines. .ci/setup-mpi.sh creates $MPI_JAR.
#
#   mpirun $MPIRUN_FLAGS -np 2 java $MPI_JAVA_OPTS -cp "$MPI_JAR:classes" Main

# Debian 12's libopenmpi3 ships libmpi_java.so but no mpi.jar; setup-mpi.sh builds
# the jar where Debian's mpijavac and mpirun's java support look for it.
export MPI_JAR=/usr/lib/x86_64-linux-gnu/openmpi/lib/mpi.jar

# --allow-run-as-root  CI containers run as root; mpirun refuses that otherwise.
# --oversubscribe      allow more ranks than cores (2-core runners). Open MPI then
#                      turns on mpi_yield_when_idle by itself; never force it to 0,
#                      busy-polling ranks sharing a core are ~1000x slower.
# pml ob1, btl self,vader
#                      single node: loopback + shared memory only. No UCX, no
#                      InfiniBand/OFI probing (and no warnings about it), and no TCP
#                      BTL that would pick up whatever interfaces the host has.
export MPIRUN_FLAGS="--allow-run-as-root --oversubscribe --mca pml ob1 --mca btl self,vader"

# java.library.path: libmpi_java.so lives in the multiarch lib dir, which Temurin's
#   default path lacks (mpirun adds one itself only when it starts a program named
#   "java" directly, not through sh or a launcher script).
# --enable-native-access: silences JDK 24+'s warning about System.loadLibrary from
#   mpi.jar (JEP 472); JDK 17 accepts the option silently.
export MPI_JAVA_OPTS="-Djava.library.path=/usr/lib/x86_64-linux-gnu --enable-native-access=ALL-UNNAMED"
