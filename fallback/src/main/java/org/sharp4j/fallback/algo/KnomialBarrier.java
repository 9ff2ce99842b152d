package org.sharp4j.fallback.algo;

/**
 * Barrier by the recursive k-nomial pattern with no payload: extras check in with their proxy
 * (round 0), base ranks exchange with their group in each of the L iterations (rounds 1..L), and
 * proxies release their extras (round L+1). No rank leaves before every rank entered: after
 * iteration i a base rank has heard, directly or through its group, from every loop rank sharing
 * its digits above i, so after L from every base rank, and each base rank's proxy-extra pair
 * checked in before the iterations began.
 *
 * <p>The messages are the 48-byte headers of {@link Exchange}, so this barrier is also the
 * <em>spine</em> of the host path: an allreduce of the call descriptors and statuses over the
 * job-wide spine radix, run before any data round of a call that cannot carry its headers itself.
 */
public final class KnomialBarrier {
    private final Exchange x;

    public KnomialBarrier(Exchange x) {
        this.x = x;
    }

    public void run(KnomialPattern p) {
        final int last = p.iterations + 1;
        if (p.role == KnomialPattern.EXTRA) {
            x.group(2, 1);
            x.member(0, p.partner);
            x.sendTo(0, 0, 0);
            x.spineRound(0, null, 0, null, null, false);
            x.group(2, 1);
            x.member(0, p.partner);
            x.recvFrom(0, 0, 0);
            x.spineRound(last, null, 0, null, null, true);
            return;
        }
        if (p.role == KnomialPattern.PROXY) {
            x.group(2, 0);
            x.member(1, p.partner);
            x.recvFrom(1, 0, 0);
            x.spineRound(0, null, 0, null, null, false);
        }
        for (int i = 0; i < p.iterations; i++) {
            int g = p.groupSize(i);
            int mp = p.position(i);
            x.group(g, mp);
            for (int pos = 0; pos < g; pos++) {
                if (pos != mp) {
                    x.member(pos, p.peer(i, pos));
                    x.sendTo(pos, 0, 0);
                    x.recvFrom(pos, 0, 0);
                }
            }
            x.spineRound(1 + i, null, 0, null, null, false);
        }
        if (p.role == KnomialPattern.PROXY) {
            x.group(2, 0);
            x.member(1, p.partner);
            x.sendTo(1, 0, 0);
            x.spineRound(last, null, 0, null, null, false);
        }
    }
}
