package org.sharp4j;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Properties;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** A bad setting is rejected with a message that names the property (issue 16: some did not). */
class ConfigMessagesTest {
    @ParameterizedTest(name = "{0}={1}")
    @CsvSource(delimiter = '|', value = {
        "sharp4j.timeout|-1", "sharp4j.timeout|0", "sharp4j.timeout|soon",
        "sharp4j.tiled.threshold|-5", "sharp4j.tiled.threshold|lots",
        "sharp4j.tree.radix|1", "sharp4j.tree.radix|two",
        "sharp4j.slot.bytes|1000", "sharp4j.slot.bytes|-4k", "sharp4j.shared.bytes|12345",
        "sharp4j.topology.nodes|-2", "sharp4j.topology.sockets|x", "sharp4j.topology.group|core",
        "sharp4j.warmup|-1", "sharp4j.warmup.long|yes", "sharp4j.wait|spin", "sharp4j.wait|nap:1ms", "sharp4j.internode|' '", "sharp4j.stores|fast", "sharp4j.stores|' '",
        "sharp4j.internode.fragment|1m", "sharp4j.internode.fragment|100000", "sharp4j.internode.fragment|0", "sharp4j.internode.fragment|big"})
    void badValueNamesItsProperty(String name, String value) {
        Properties p = new Properties();
        p.setProperty(name, value);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Config.fromProperties(p));
        assertTrue(e.getMessage().contains(name), "message does not name " + name + ": " + e.getMessage());
    }

    /** sharp4j.cma: auto (peer reads, the built-in cma Reduces gated by the read cost), on (not gated), off (none). */
    @org.junit.jupiter.api.Test
    void cmaIsAutoOnOrOff() {
        Properties p = new Properties();
        assertTrue(Config.fromProperties(p).cma() && Config.fromProperties(p).cmaCostGate());
        p.setProperty("sharp4j.cma", "ON");
        assertTrue(Config.fromProperties(p).cma() && !Config.fromProperties(p).cmaCostGate());
        p.setProperty("sharp4j.cma", "off");
        assertTrue(!Config.fromProperties(p).cma());
        assertTrue(Config.defaults().withCmaOn().cma() && !Config.defaults().withCmaOn().cmaCostGate());
        assertTrue(Config.defaults().withCmaOn().withCma(true).cmaCostGate());
    }

    /** The host path's fragment: auto (0, the host path's choice) or pages from 4 KiB to 512 KiB, job-wide. */
    @org.junit.jupiter.api.Test
    void theInterNodeFragmentIsAutoOrPagesUpTo512k() {
        org.junit.jupiter.api.Assertions.assertEquals(0, Config.defaults().interFragment());
        Properties p = new Properties();
        p.setProperty("sharp4j.internode.fragment", "128k");
        Config c = Config.fromProperties(p);
        org.junit.jupiter.api.Assertions.assertEquals(128 * 1024, c.interFragment());
        assertTrue(c.jobWideSettings().contains("sharp4j.internode.fragment=131072"), c.jobWideSettings().toString());
        p.setProperty("sharp4j.internode.fragment", "AUTO");
        org.junit.jupiter.api.Assertions.assertEquals(0, Config.fromProperties(p).interFragment());
        org.junit.jupiter.api.Assertions.assertEquals(Config.MAX_INTER_FRAGMENT, c.withInterFragment(512 * 1024).interFragment());
        assertThrows(IllegalArgumentException.class, () -> c.withInterFragment(512 * 1024 + 4096));
    }
}
