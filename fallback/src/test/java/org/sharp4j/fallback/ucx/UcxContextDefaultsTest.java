package org.sharp4j.fallback.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The entries UcxTransport adds to its UCX context: the keepalive interval and log level always,
 * the TCP segment sizes only where TCP is the only transport; each one yields to the same entry in
 * the configuration and to its UCX_ variable in the environment. (No UCX needed.)
 */
class UcxContextDefaultsTest {
    static Map<String, String> defaults(Map<String, String> config, Map<String, String> env) {
        return UcxTransport.contextDefaults(config, env::get);
    }

    @Test
    void tcpAloneGetsTheLargerSegmentsUnlessTheyAreSet() {
        Map<String, String> d = defaults(Map.of("TLS", "tcp"), Map.of());
        assertEquals("64k", d.get("TX_SEG_SIZE"));
        assertEquals("256k", d.get("RX_SEG_SIZE"));
        assertEquals(UcxTransport.KEEPALIVE_INTERVAL, d.get("KEEPALIVE_INTERVAL"));
        assertEquals(UcxTransport.LOG_LEVEL, d.get("LOG_LEVEL"));
        // from the environment's UCX_TLS, spelled as users do
        assertEquals("64k", defaults(Map.of(), Map.of("UCX_TLS", " TCP ")).get("TX_SEG_SIZE"));
        // the user's choice wins: environment, configuration (either spelling)
        Map<String, String> env = new HashMap<>();
        env.put("UCX_TCP_TX_SEG_SIZE", "16k");
        d = defaults(Map.of("TLS", "tcp"), env);
        assertEquals(null, d.get("TX_SEG_SIZE"));
        assertEquals("256k", d.get("RX_SEG_SIZE"));
        d = defaults(Map.of("TLS", "tcp", "RX_SEG_SIZE", "1m", "TCP_TX_SEG_SIZE", "32k"), Map.of());
        assertEquals(null, d.get("RX_SEG_SIZE"));
        assertEquals(null, d.get("TX_SEG_SIZE"));
    }

    @Test
    void otherTransportsAreLeftAlone() {
        for (Map<String, String> config : new Map[] {Map.of(), Map.of("TLS", "rc,tcp"), Map.of("TLS", "all")}) {
            Map<String, String> d = defaults(config, Map.of());
            assertEquals(null, d.get("TX_SEG_SIZE"), config.toString());
            assertEquals(null, d.get("RX_SEG_SIZE"), config.toString());
        }
        // the configuration's TLS wins over the environment's
        assertEquals(null, defaults(Map.of("TLS", "ud"), Map.of("UCX_TLS", "tcp")).get("TX_SEG_SIZE"));
        assertEquals(Map.of(), defaults(Map.of("TLS", "rc"), Map.of("UCX_KEEPALIVE_INTERVAL", "1s", "UCX_LOG_LEVEL", "warn")));
    }
}
