package org.sharp4j.fallback.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * {@link TcpCongestion}: which sockets it touches and what it sets, on loopback sockets of this JVM
 * and on the sockets of {@link UcxTransport}s (UCX over TCP loopback, as in {@link UcxTransportTest}).
 */
class TcpCongestionTest {

    /** The system's default congestion control for new sockets. */
    private static String systemDefault() throws IOException {
        return Files.readString(Path.of("/proc/sys/net/ipv4/tcp_congestion_control")).trim();
    }

    private static boolean available(String name) throws IOException {
        return List.of(Files.readString(Path.of("/proc/sys/net/ipv4/tcp_available_congestion_control")).trim().split("\\s+"))
                .contains(name);
    }

    /** A congestion control other than the system's default that every Linux has built in. */
    private static String notTheDefault() throws IOException {
        return systemDefault().equals("reno") ? "cubic" : "reno";
    }

    /** The TCP sockets open now that were not in {@code before}, with their congestion control. */
    private static Map<Integer, String> newTcp(Map<Integer, String> before) {
        Map<Integer, String> out = new TreeMap<>();
        TcpCongestion.of("auto").snapshot().forEach((fd, link) -> {
            if (link.startsWith("socket:") && !link.equals(before.get(fd))) {
                String cc = TcpCongestion.get(fd);
                if (cc != null) {
                    out.put(fd, cc);
                }
            }
        });
        return out;
    }

    /** A listening socket and a connection to it (both ends) on loopback. */
    private static List<AutoCloseable> pair() throws IOException {
        ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        Socket client = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
        Socket accepted = server.accept();
        return List.of(server, client, accepted);
    }

    private static void closeAll(List<AutoCloseable> l) throws Exception {
        for (AutoCloseable c : l) {
            c.close();
        }
    }

    @Test
    void aBadValueIsRejectedNamingTheProperty() {
        for (String bad : new String[] {"", " ", "BBR", "cu bic", "bbr;", "a_name_too_long_x"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TcpCongestion.of(bad), bad);
            assertTrue(e.getMessage().contains(UcxTransport.CONGESTION_PROPERTY) && e.getMessage().contains("'" + bad + "'"),
                    e.getMessage());
        }
        assertEquals("auto", TcpCongestion.of(null).policy());
        assertEquals("cubic", TcpCongestion.of(" cubic ").policy());
        assertTrue(TcpCongestion.of("keep").keeps());
        assertTrue(TcpCongestion.of("keep").snapshot().isEmpty(), "keep lists nothing");
    }

    @Test
    void aBadValueFailsTheTransportsSetupOnEveryRankNamingIt() {
        Throwable[] errs = UcxTransportTest.run(3, new int[] {0, 1, 2}, Map.of(), "auto", "Fast!",
                (t, boot, barrier) -> org.junit.jupiter.api.Assertions.fail("connect succeeded"));
        for (int r = 0; r < 3; r++) {
            assertNotNull(errs[r], "rank " + r);
            assertTrue(errs[r] instanceof org.sharp4j.Sharp4jException, errs[r].toString());
            assertTrue(errs[r].getMessage().startsWith("UCX setup failed: node leader rank 0 (node 0): "
                    + UcxTransport.CONGESTION_PROPERTY + " must be auto, keep or a TCP congestion control's name"), errs[r].getMessage());
            assertTrue(errs[r].getMessage().endsWith("not 'Fast!'"), errs[r].getMessage());
        }
    }

    @Test
    void aNameIsSetOnTheSocketsOpenedSinceTheSnapshotOnly() throws Exception {
        String name = notTheDefault();
        String dflt = systemDefault();
        Map<Integer, String> start = TcpCongestion.of("auto").snapshot();
        List<AutoCloseable> old = pair();
        TcpCongestion cc = TcpCongestion.of(name);
        Map<Integer, String> before = cc.snapshot();
        List<AutoCloseable> fresh = pair();
        try {
            cc.applySince(before);
            Map<Integer, String> created = newTcp(before);
            assertEquals(3, created.size(), "the listener and both ends: " + created);
            created.values().forEach(c -> assertEquals(name, c, "a new socket: " + created));
            Map<Integer, String> older = newTcp(start);
            created.keySet().forEach(older::remove);
            assertEquals(3, older.size(), "the sockets opened before the snapshot: " + older);
            older.values().forEach(c -> assertEquals(dflt, c, "an older socket is left alone: " + older));
            assertEquals(3, cc.switched());
            assertEquals(name, cc.switchedTo());
            assertNull(cc.refused());
        } finally {
            closeAll(fresh);
            closeAll(old);
        }
    }

    @Test
    void autoReplacesBbrAndNothingElse() throws Exception {
        assumeTrue(available("bbr"), "bbr is not available in this kernel");
        Map<Integer, String> before = TcpCongestion.of("auto").snapshot();
        List<AutoCloseable> a = pair();
        try {
            TcpCongestion.of("bbr").applySince(before);
            Map<Integer, String> bbr = newTcp(before);
            bbr.values().forEach(c -> assertEquals("bbr", c, "set up as bbr: " + bbr));
            Map<Integer, String> mid = TcpCongestion.of("auto").snapshot();
            List<AutoCloseable> b = pair();
            try {
                TcpCongestion.of("cubic").applySince(mid);
                TcpCongestion auto = TcpCongestion.of("auto");
                auto.applySince(before);
                Map<Integer, String> after = newTcp(before);
                assertEquals(6, after.size(), after.toString());
                for (Map.Entry<Integer, String> e : after.entrySet()) {
                    // cubic is built into Debian's kernel, and the tests run as root: it is allowed
                    assertEquals(bbr.containsKey(e.getKey()) ? "reno" : "cubic", e.getValue(), "fd " + e.getKey() + ": " + after);
                }
                assertEquals(3, auto.switched(), "only the bbr sockets were switched");
            } finally {
                closeAll(b);
            }
        } finally {
            closeAll(a);
        }
    }

    @Test
    void aNameTheKernelDoesNotKnowIsReportedAndChangesNothing() throws Exception {
        String dflt = systemDefault();
        TcpCongestion cc = TcpCongestion.of("nosuchcc");
        Map<Integer, String> before = cc.snapshot();
        List<AutoCloseable> a = pair();
        try {
            cc.applySince(before);
            newTcp(before).values().forEach(c -> assertEquals(dflt, c));
            assertEquals(0, cc.switched());
            assertNotNull(cc.refused());
            assertTrue(cc.refused().startsWith("nosuchcc (errno 2"), cc.refused());
        } finally {
            closeAll(a);
        }
    }

    /**
     * Every TCP socket the transports open, on both sides and for both workers (the listeners, the
     * connections they accept, the connecting ones, the send worker's), gets the congestion control
     * asked for; with {@code keep} every one keeps the system's. A socket UCX opened outside the
     * snapshots (made lazily, or accepted without inheriting the listener's) would show here.
     */
    @Test
    void everySocketOfTheTransportsGetsIt() throws Exception {
        String name = notTheDefault();
        String dflt = systemDefault();
        for (String policy : new String[] {name, "keep"}) {
            Map<Integer, String> before = TcpCongestion.of("auto").snapshot();
            List<String> seen = new ArrayList<>();
            UcxTransportTest.rethrow(UcxTransportTest.run(2, new int[] {0, 1}, Map.of(), "on", policy, (t, boot, barrier) -> {
                int other = 1 - t.peer();
                int len = 256 * 1024; // from the send worker
                ByteBuffer out = UcxTransportTest.direct(len);
                ByteBuffer in = UcxTransportTest.direct(len);
                UcxTransportTest.fill(out, 0, len, t.peer());
                int r = t.recv(other, 5, in, 0, len);
                int s = t.send(other, 5, out, 0, len);
                UcxTransportTest.await(t, s);
                assertEquals(len, UcxTransportTest.await(t, r));
                UcxTransportTest.check(in, 0, len, other, "message from " + other);
                barrier.await();
                if (t.peer() == 0) {
                    Map<Integer, String> made = newTcp(before);
                    seen.add(made.toString());
                    // per transport: 2 listeners (worker, send worker), a connection between the workers, the send
                    // worker's connection (both ends of each live in this JVM)
                    assertTrue(made.size() >= 8, "the transports' sockets: " + made);
                    String want = policy.equals("keep") ? dflt : policy;
                    made.forEach((fd, cc) -> assertEquals(want, cc, "fd " + fd + " of " + made));
                }
                if (policy.equals("keep")) {
                    assertEquals("keep (no socket changed)", t.congestion());
                } else {
                    // Both transports live in this JVM, and a transport sets every TCP socket of the process that is
                    // newer than its snapshot: whichever applies first can switch the other's sockets too, which then
                    // reports none changed (CI, 2026-12-03: rank 1 "reno (no socket changed)"). The sockets
                    // themselves are checked above; each report is one of the two forms.
                    String c = t.congestion();
                    assertTrue(c.startsWith(policy + ": ") && c.contains(" sockets to " + policy)
                            || c.equals(policy + " (no socket changed)"), c);
                }
                barrier.await();
            }));
            assertFalse(seen.isEmpty());
        }
    }
}
