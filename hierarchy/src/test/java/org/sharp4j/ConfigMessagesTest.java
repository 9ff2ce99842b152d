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
        "sharp4j.warmup|-1", "sharp4j.warmup.long|yes", "sharp4j.wait|spin", "sharp4j.wait|nap:1ms", "sharp4j.internode|' '", "sharp4j.stores|fast", "sharp4j.stores|' '"})
    void badValueNamesItsProperty(String name, String value) {
        Properties p = new Properties();
        p.setProperty(name, value);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Config.fromProperties(p));
        assertTrue(e.getMessage().contains(name), "message does not name " + name + ": " + e.getMessage());
    }
}
