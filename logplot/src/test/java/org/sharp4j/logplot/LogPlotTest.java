package org.sharp4j.logplot;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The axis labels and ticks every plot (OSU, tuner, model) shares. */
class LogPlotTest {
    @Test
    void ticksArePowersOfTwoAndOneTwoFive() {
        assertEquals("8", LogPlot.bytesLabel(8));
        assertEquals("512", LogPlot.bytesLabel(512));
        assertEquals("1K", LogPlot.bytesLabel(1024));
        assertEquals("64K", LogPlot.bytesLabel(65536));
        assertEquals("1M", LogPlot.bytesLabel(1048576));
        assertEquals("1G", LogPlot.bytesLabel(1L << 30));
        assertEquals(List.of(2.0, 5.0, 10.0, 20.0, 50.0), LogPlot.yTicks(2, 60, 20), "2-60 us: five labels, not one");
        assertEquals(List.of(0.5, 1.0, 2.0, 3.0, 5.0), LogPlot.yTicks(0.45, 6, 20));
        assertEquals(List.of(3.0, 5.0, 10.0, 20.0, 30.0, 50.0), LogPlot.yTicks(2.2, 60, 20), "the model plot's range");
        assertEquals(List.of(1.0, 100.0, 10000.0, 1000000.0), LogPlot.yTicks(1, 2e6, 4), "every other decade");
        assertEquals(List.of(1.0, 10.0, 100.0, 1000.0, 10000.0), LogPlot.yTicks(1, 20000, 6), "crowded: decades only");
        assertEquals(List.of(1.5, 2.0, 3.0), LogPlot.yTicks(1.2, 3.5, 20), "narrow: denser than 1-2-5");
        assertEquals("0.5", LogPlot.plainLabel(0.5));
        assertEquals("20", LogPlot.plainLabel(20));
    }
}
