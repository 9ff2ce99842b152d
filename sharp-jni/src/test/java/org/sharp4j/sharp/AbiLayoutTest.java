package org.sharp4j.sharp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The JNA structures against the C header: every size, offset and constant abi_dump prints. */
class AbiLayoutTest {
    static Map<String, Integer> structs = new LinkedHashMap<>();
    static Map<String, Integer> consts = new LinkedHashMap<>();
    static Map<String, Integer> enumSizes = new LinkedHashMap<>();

    /** Runs target/native/abi_dump (built from the header by the Makefile) and parses its lines. */
    @BeforeAll
    static void dump() throws IOException, InterruptedException {
        File exe = new File(SharpTestSupport.nativeDir(), "abi_dump");
        assertTrue(exe.canExecute(), exe + " missing: the Makefile builds it in generate-resources");
        Process p = new ProcessBuilder(exe.getPath()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), out);
        for (String line : out.split("\n")) {
            String[] w = line.trim().split(" ");
            if (w.length == 4 && w[0].equals("struct") && w[2].equals("size")) {
                structs.put("struct " + w[1] + " size", Integer.parseInt(w[3]));
            } else if (w.length == 4 && w[0].equals("field") && w[2].equals("offset")) {
                structs.put("field " + w[1] + " offset", Integer.parseInt(w[3]));
            } else if (w.length == 4 && w[0].equals("const") && w[2].equals("value")) {
                consts.put(w[1], Integer.parseInt(w[3]));
            } else if (w.length == 4 && w[0].equals("enum") && w[2].equals("size")) {
                enumSizes.put(w[1], Integer.parseInt(w[3]));
            }
        }
        assertTrue(structs.size() > 80, "abi_dump printed " + structs.size() + " struct/field lines:\n" + out);
    }

    @Test
    void everyStructureSizeAndFieldOffsetMatchesAbiDump() {
        Map<String, Integer> jna = SharpAbi.layout();
        List<String> diffs = new ArrayList<>();
        for (Map.Entry<String, Integer> e : structs.entrySet()) {
            Integer mine = jna.get(e.getKey());
            if (!e.getValue().equals(mine)) {
                diffs.add(e.getKey() + ": abi_dump " + e.getValue() + ", JNA " + mine);
            }
        }
        for (String k : jna.keySet()) {
            if (!structs.containsKey(k)) {
                diffs.add(k + ": computed by the binding but not printed by abi_dump");
            }
        }
        assertTrue(diffs.isEmpty(), String.join("\n", diffs));
        assertEquals(structs.size(), jna.size());
    }

    @Test
    void theLoadTimeTableIsTheHeaderAndJnaAgreesWithIt() {
        assertEquals(structs, SharpAbi.EXPECTED, "SharpAbi.EXPECTED (the reference) vs abi_dump");
        assertNull(SharpAbi.check());
    }

    @Test
    void everyEnumConstantTheBindingUsesMatches() {
        Map<String, Integer> mine = SharpAbi.constants();
        Set<String> enums = new TreeSet<>();
        for (Map.Entry<String, Integer> e : mine.entrySet()) {
            assertEquals(consts.get(e.getKey()), e.getValue(), e.getKey());
            enums.add(e.getKey().substring(0, e.getKey().indexOf('.')));
        }
        for (Map.Entry<String, Integer> e : consts.entrySet()) {
            String en = e.getKey().substring(0, e.getKey().indexOf('.'));
            if (enums.contains(en) && !e.getKey().endsWith("_LAST")) {
                assertTrue(mine.containsKey(e.getKey()), "abi_dump has " + e.getKey() + " that the binding lacks");
            }
        }
        for (String en : enums) {
            assertEquals(4, enumSizes.get(en), "enum " + en + " size");
        }
    }

    @Test
    void theEmulatorLoadsWithItsDefaultConfigAndOptionalSymbols() {
        SharpLibrary lib = SharpLibrary.load(SharpTestSupport.emulator());
        SharpAbi.CollConfig c = lib.defaultConfig();
        assertEquals(128, c.user_progress_num_polls, "sharp_coll_default_config.user_progress_num_polls");
        assertEquals(-1, c.coll_timeout, "sharp_coll_default_config.coll_timeout");
        assertEquals(0, c.flags);
        assertNull(c.ib_dev_list);
        assertEquals("Cannot create SHARP job", lib.strerror(SharpAbi.EJOB_CREATE));
        assertEquals("Streaming Tree lock failed", lib.strerror(SharpAbi.ELOCK_FAILED));
        assertTrue(lib.supportsReduceScatter());
        assertTrue(lib.supportsAllgather());
        assertTrue(lib.supportsRegMrV2());
        assertNotNull(lib.optional("sharp_coll_do_bcast"));
        assertNull(lib.optional("sharp_coll_no_such_function"));
    }
}
