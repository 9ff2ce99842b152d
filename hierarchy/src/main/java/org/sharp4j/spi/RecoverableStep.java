package org.sharp4j.spi;

import java.nio.ByteBuffer;
import org.sharp4j.DataType;
import org.sharp4j.Op;
import org.sharp4j.coll.CallStatus;
import org.sharp4j.tuning.Collective;

/**
 * A host path an offload can recover its failed operations on without a host round on its success
 * path (the UCX k-nomial path implements it). The offload (SHARP) numbers its calls the same way
 * on every node leader; when one leader's operation fails it runs a <em>recovery collective</em>
 * for that call number, and the others, wherever they are (waiting for a later operation, or inside
 * a later host call), find it with a cheap probe made from inside their waits and join it.
 */
public interface RecoverableStep extends InterNodeStep {
    /** What the offload does when another leader started a recovery it has not joined. */
    interface Listener {
        /**
         * Called on the leader thread from inside the host path's waits and from
         * {@link #pollRecovery}: the recovery of the call whose number ends in these 24 bits waits
         * for this leader. It may run {@link #recoveryCollective} for it now (nested) or later.
         */
        void recoveryPending(int callSeq24);
    }

    /** Installs the listener (null: none); from then on the host path's waits also probe for recoveries. */
    void recoveryListener(Listener l);

    /** One probe for a recovery waiting for this leader (tells the listener); slow path. */
    boolean pollRecovery();

    /**
     * A collective among all node leaders in the recovery tag space of call {@code callSeq}, with the
     * argument check of the host path (desc) and the status merge: phase 0 or phase 1. Every leader
     * runs the same phases for the same call, possibly nested inside a wait of a later call.
     */
    void recoveryCollective(long callSeq, int phase, Collective c, ByteBuffer buf, int off, int count, DataType t, Op op,
            int rootNode, long desc, CallStatus status);

    /** Messages this leader has sent on the host path so far (tests: a successful offloaded call sends none). */
    long messagesSent();
}
