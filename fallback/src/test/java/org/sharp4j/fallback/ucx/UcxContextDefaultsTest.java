package org.sharp4j.fallback.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The entries UcxTransport adds to its UCX context: the keepalive interval and log level always,
 * the TCP segment sizes and the rendezvous threshold where the network is TCP (TCP named alone, or
 * UCX's choice on a host without RDMA devices); each one yields to the same entry in
 * the configuration and to its UCX_ variable in the environment. (No UCX needed.)
 */
class UcxContextDefaultsTest {
    static Map<String, String> defaults(Map<String, String> config, Map<String, String> env) {
        return UcxTransport.contextDefaults(config, env::get, true);
    }

    @Test
    void aTcpNetworkSendsTheHostPathsMessagesEagerlyUnlessTheThresholdIsSet() {
        String t = UcxTransport.TCP_RNDV_THRESH;
        // TCP named alone, with or without RDMA devices
        assertEquals(t, UcxTransport.contextDefaults(Map.of("TLS", "tcp"), k -> null, true).get("RNDV_THRESH"));
        assertEquals(t, UcxTransport.contextDefaults(Map.of(), Map.of("UCX_TLS", "tcp")::get, true).get("RNDV_THRESH"));
        // UCX's choice on a host without RDMA devices is TCP; with them, UCX's thresholds stay
        assertEquals(t, UcxTransport.contextDefaults(Map.of(), k -> null, false).get("RNDV_THRESH"));
        assertEquals(null, UcxTransport.contextDefaults(Map.of(), k -> null, true).get("RNDV_THRESH"));
        // other transports named: left alone even without RDMA devices (the user chose)
        assertEquals(null, UcxTransport.contextDefaults(Map.of("TLS", "rc,tcp"), k -> null, false).get("RNDV_THRESH"));
        // the user's threshold wins, from the environment or the configuration
        assertEquals(null, UcxTransport.contextDefaults(Map.of(), Map.of("UCX_RNDV_THRESH", "8k")::get, false).get("RNDV_THRESH"));
        assertEquals(null, UcxTransport.contextDefaults(Map.of("TLS", "tcp", "RNDV_THRESH", "inf"), k -> null, false)
                .get("RNDV_THRESH"));
        // above the host path's largest message (a posted part's fragment, or a blocking round's plus its 48-byte header)
        assertTrue(parse(t) > org.sharp4j.fallback.HostStep.DEFAULT_FRAG_BYTES + 48);
        assertTrue(parse(t) >= org.sharp4j.fallback.HostStep.MAX_PART_FRAG_BYTES + 64 * 1024);
        for (int peers = 2; peers <= 4096; peers *= 2) {
            assertTrue(org.sharp4j.fallback.HostStep.partFragBytes(peers, org.sharp4j.fallback.HostStep.DEFAULT_FRAG_BYTES)
                    <= org.sharp4j.fallback.HostStep.MAX_PART_FRAG_BYTES);
        }
    }

    private static long parse(String size) {
        String s = size.toLowerCase(java.util.Locale.ROOT);
        long unit = s.endsWith("k") ? 1024 : s.endsWith("m") ? 1 << 20 : 1;
        return Long.parseLong(unit == 1 ? s : s.substring(0, s.length() - 1)) * unit;
    }

    @Test
    void aTcpNetworkGetsTheLargerSegmentsUnlessTheyAreSet() {
        Map<String, String> d = defaults(Map.of("TLS", "tcp"), Map.of());
        assertEquals("64k", d.get("TX_SEG_SIZE"));
        assertEquals("576k", d.get("RX_SEG_SIZE"));
        // UCX's choice on a host without RDMA devices is TCP: the same segments
        d = UcxTransport.contextDefaults(Map.of(), k -> null, false);
        assertEquals("64k", d.get("TX_SEG_SIZE"));
        assertEquals("576k", d.get("RX_SEG_SIZE"));
        // larger than UCX 1.13's own (8 KiB send, 64 KiB receive), a receive segment holds a whole send segment
        // and the largest host-path message (a posted part's fragment and UCX's headers) whole
        assertTrue(parse(UcxTransport.TCP_TX_SEG) > 8 * 1024 && parse(UcxTransport.TCP_RX_SEG) >= parse(UcxTransport.TCP_TX_SEG));
        assertTrue(parse(UcxTransport.TCP_RX_SEG) >= org.sharp4j.fallback.HostStep.MAX_PART_FRAG_BYTES + 64 * 1024);
        assertEquals(UcxTransport.KEEPALIVE_INTERVAL, d.get("KEEPALIVE_INTERVAL"));
        assertEquals(UcxTransport.LOG_LEVEL, d.get("LOG_LEVEL"));
        // from the environment's UCX_TLS, spelled as users do
        assertEquals("64k", defaults(Map.of(), Map.of("UCX_TLS", " TCP ")).get("TX_SEG_SIZE"));
        // the user's choice wins: environment, configuration (either spelling)
        Map<String, String> env = new HashMap<>();
        env.put("UCX_TCP_TX_SEG_SIZE", "16k");
        d = defaults(Map.of("TLS", "tcp"), env);
        assertEquals(null, d.get("TX_SEG_SIZE"));
        assertEquals("576k", d.get("RX_SEG_SIZE"));
        d = defaults(Map.of("TLS", "tcp", "RX_SEG_SIZE", "1m", "TCP_TX_SEG_SIZE", "32k"), Map.of());
        assertEquals(null, d.get("RX_SEG_SIZE"));
        assertEquals(null, d.get("TX_SEG_SIZE"));
    }

    @Test
    void otherTransportsAreLeftAlone() {
        // RDMA devices and UCX's choice, or other transports named (this helper: a host with RDMA devices)
        for (Map<String, String> config : new Map[] {Map.of(), Map.of("TLS", "rc,tcp"), Map.of("TLS", "all")}) {
            Map<String, String> d = defaults(config, Map.of());
            assertEquals(null, d.get("TX_SEG_SIZE"), config.toString());
            assertEquals(null, d.get("RX_SEG_SIZE"), config.toString());
        }
        // other transports named: left alone on a host without RDMA devices too (the user chose)
        assertEquals(null, UcxTransport.contextDefaults(Map.of("TLS", "rc,tcp"), k -> null, false).get("TX_SEG_SIZE"));
        // the configuration's TLS wins over the environment's
        assertEquals(null, defaults(Map.of("TLS", "ud"), Map.of("UCX_TLS", "tcp")).get("TX_SEG_SIZE"));
        assertEquals(Map.of(), defaults(Map.of("TLS", "rc"), Map.of("UCX_KEEPALIVE_INTERVAL", "1s", "UCX_LOG_LEVEL", "warn")));
    }
}
