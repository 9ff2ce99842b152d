package org.sharp4j.bootstrap.pmix;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The hand-written PMIx structure layouts of {@link PmixBootstrap} against the real header: a C
 * program compiled with gcc against pmix.h prints sizes, offsets and constants. Skipped (with the
 * reason) when gcc or the libpmix-dev headers are missing.
 */
class PmixAbiTest {
    static final List<String> INCLUDE_DIRS = List.of("/usr/include", "/usr/include/pmix",
            "/usr/lib/x86_64-linux-gnu/pmix2/include", "/usr/lib/aarch64-linux-gnu/pmix2/include", "/usr/local/include");

    static final String PROGRAM = String.join("\n",
            "#include <stdio.h>",
            "#include <stddef.h>",
            "#include <pmix.h>",
            "int main(void) {",
            "  printf(\"PROC_SIZE=%zu\\n\", sizeof(pmix_proc_t));",
            "  printf(\"PROC_RANK_OFFSET=%zu\\n\", offsetof(pmix_proc_t, rank));",
            "  printf(\"NSPACE_LEN=%zu\\n\", sizeof(((pmix_proc_t *) 0)->nspace));",
            "  printf(\"VALUE_SIZE=%zu\\n\", sizeof(pmix_value_t));",
            "  printf(\"VALUE_TYPE_SIZE=%zu\\n\", sizeof(((pmix_value_t *) 0)->type));",
            "  printf(\"VALUE_DATA_OFFSET=%zu\\n\", offsetof(pmix_value_t, data));",
            "  printf(\"BO_IN_VALUE_SIZE_OFFSET=%zu\\n\", offsetof(pmix_value_t, data.bo.size));",
            "  printf(\"INFO_SIZE=%zu\\n\", sizeof(pmix_info_t));",
            "  printf(\"KEY_LEN=%zu\\n\", sizeof(((pmix_info_t *) 0)->key));",
            "  printf(\"INFO_FLAGS_OFFSET=%zu\\n\", offsetof(pmix_info_t, flags));",
            "  printf(\"INFO_VALUE_OFFSET=%zu\\n\", offsetof(pmix_info_t, value));",
            "  printf(\"BYTE_OBJECT_SIZE=%zu\\n\", sizeof(pmix_byte_object_t));",
            "  printf(\"SCOPE_SIZE=%zu\\n\", sizeof(pmix_scope_t));",
            "  printf(\"STATUS_SIZE=%zu\\n\", sizeof(pmix_status_t));",
            "  printf(\"PMIX_GLOBAL=%d\\n\", (int) PMIX_GLOBAL);",
            "  printf(\"RANK_WILDCARD=%u\\n\", (unsigned) PMIX_RANK_WILDCARD);",
            "  printf(\"T_BOOL=%d\\nT_STRING=%d\\nT_UINT16=%d\\nT_UINT32=%d\\nT_BYTE_OBJECT=%d\\nT_PROC_RANK=%d\\nT_SIZE=%d\\nT_UINT64=%d\\n\",",
            "      PMIX_BOOL, PMIX_STRING, PMIX_UINT16, PMIX_UINT32, PMIX_BYTE_OBJECT, PMIX_PROC_RANK, PMIX_SIZE, PMIX_UINT64);",
            "  printf(\"KEY_JOB_SIZE=%s\\nKEY_LOCAL_RANK=%s\\nKEY_LOCAL_SIZE=%s\\nKEY_HOSTNAME=%s\\nKEY_NODEID=%s\\nKEY_COLLECT_DATA=%s\\n\",",
            "      PMIX_JOB_SIZE, PMIX_LOCAL_RANK, PMIX_LOCAL_SIZE, PMIX_HOSTNAME, PMIX_NODEID, PMIX_COLLECT_DATA);",
            "  return 0;",
            "}", "");

    @Test
    void structLayoutsAndConstantsMatchTheHeader(@TempDir Path dir) throws Exception {
        String gcc = onPath("gcc");
        Assumptions.assumeTrue(gcc != null, "gcc not on PATH: cannot check the PMIx ABI against pmix.h");
        String inc = INCLUDE_DIRS.stream().filter(d -> Files.exists(Path.of(d, "pmix.h")) && Files.exists(Path.of(d, "pmix_common.h")))
                .findFirst().orElse(null);
        Assumptions.assumeTrue(inc != null, "pmix.h not found in " + INCLUDE_DIRS
                + " (install libpmix-dev to check the PMIx ABI against the header)");
        Path src = dir.resolve("abi.c");
        Files.writeString(src, PROGRAM);
        Path exe = dir.resolve("abi");
        List<String> cmd = new ArrayList<>(List.of(gcc, "-I" + inc));
        if (Files.isDirectory(Path.of(inc, "pmix"))) {
            cmd.add("-I" + inc + "/pmix");
        }
        cmd.addAll(List.of("-o", exe.toString(), src.toString()));
        String out = run(cmd);
        Map<String, String> m = new HashMap<>();
        for (String l : run(List.of(exe.toString())).split("\n")) {
            int eq = l.indexOf('=');
            if (eq > 0) {
                m.put(l.substring(0, eq), l.substring(eq + 1).trim());
            }
        }
        assertTrue(m.size() > 20, "abi program output: " + m + " / gcc: " + out);
        assertEquals(PmixBootstrap.PROC_SIZE, num(m, "PROC_SIZE"));
        assertEquals(PmixBootstrap.PROC_RANK_OFFSET, num(m, "PROC_RANK_OFFSET"));
        assertEquals(PmixBootstrap.NSPACE_LEN, num(m, "NSPACE_LEN"));
        assertEquals(PmixBootstrap.VALUE_SIZE, num(m, "VALUE_SIZE"));
        assertEquals(2, num(m, "VALUE_TYPE_SIZE"));
        assertEquals(PmixBootstrap.VALUE_DATA_OFFSET, num(m, "VALUE_DATA_OFFSET"));
        assertEquals(PmixBootstrap.VALUE_DATA_OFFSET + 8, num(m, "BO_IN_VALUE_SIZE_OFFSET"));
        assertEquals(PmixBootstrap.INFO_SIZE, num(m, "INFO_SIZE"));
        assertEquals(PmixBootstrap.KEY_LEN, num(m, "KEY_LEN"));
        assertEquals(PmixBootstrap.INFO_FLAGS_OFFSET, num(m, "INFO_FLAGS_OFFSET"));
        assertEquals(PmixBootstrap.INFO_VALUE_OFFSET, num(m, "INFO_VALUE_OFFSET"));
        assertEquals(PmixBootstrap.BYTE_OBJECT_SIZE, num(m, "BYTE_OBJECT_SIZE"));
        assertEquals(1, num(m, "SCOPE_SIZE"));
        assertEquals(4, num(m, "STATUS_SIZE"));
        assertEquals(PmixBootstrap.PMIX_GLOBAL, num(m, "PMIX_GLOBAL"));
        assertEquals(Integer.toUnsignedLong(PmixBootstrap.RANK_WILDCARD), Long.parseLong(m.get("RANK_WILDCARD")));
        assertEquals(PmixBootstrap.T_BOOL, num(m, "T_BOOL"));
        assertEquals(PmixBootstrap.T_STRING, num(m, "T_STRING"));
        assertEquals(PmixBootstrap.T_UINT16, num(m, "T_UINT16"));
        assertEquals(PmixBootstrap.T_UINT32, num(m, "T_UINT32"));
        assertEquals(PmixBootstrap.T_BYTE_OBJECT, num(m, "T_BYTE_OBJECT"));
        assertEquals(PmixBootstrap.T_PROC_RANK, num(m, "T_PROC_RANK"));
        assertEquals(PmixBootstrap.T_SIZE, num(m, "T_SIZE"));
        assertEquals(PmixBootstrap.T_UINT64, num(m, "T_UINT64"));
        assertEquals(PmixBootstrap.KEY_JOB_SIZE, m.get("KEY_JOB_SIZE"));
        assertEquals(PmixBootstrap.KEY_LOCAL_RANK, m.get("KEY_LOCAL_RANK"));
        assertEquals(PmixBootstrap.KEY_LOCAL_SIZE, m.get("KEY_LOCAL_SIZE"));
        assertEquals(PmixBootstrap.KEY_HOSTNAME, m.get("KEY_HOSTNAME"));
        assertEquals(PmixBootstrap.KEY_NODEID, m.get("KEY_NODEID"));
        assertEquals(PmixBootstrap.KEY_COLLECT_DATA, m.get("KEY_COLLECT_DATA"));
    }

    @Test
    void jobIdIsFileNameSafeAndBounded() {
        assertEquals("pmix-413597697", PmixBootstrap.sanitize("413597697"));
        assertEquals("pmix-prterun-host-123_1", PmixBootstrap.sanitize("prterun-host-123@1"));
        String longNs = "x/".repeat(100);
        String id = PmixBootstrap.sanitize(longNs);
        assertTrue(id.length() <= 64 && id.matches("[A-Za-z0-9._-]+"), id);
        assertTrue(!id.equals(PmixBootstrap.sanitize("x/".repeat(99) + "y/")), "long namespaces differing at the end must differ");
    }

    @Test
    void environmentDetection() {
        assertTrue(PmixBootstrap.environmentPresent(Map.of("PMIX_RANK", "0", "PMIX_NAMESPACE", "42")));
        assertTrue(!PmixBootstrap.environmentPresent(Map.of("PMIX_RANK", "0")));
        assertTrue(!PmixBootstrap.environmentPresent(Map.of()));
    }

    static long num(Map<String, String> m, String k) {
        String v = m.get(k);
        assertTrue(v != null, k + " missing in " + m);
        return Long.parseLong(v);
    }

    static String onPath(String exe) {
        for (String d : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(File.pathSeparator)) {
            Path p = Path.of(d.isEmpty() ? "." : d, exe);
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        return null;
    }

    static String run(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "timed out: " + cmd);
        String s = new String(out, StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), cmd + ":\n" + s);
        return s;
    }
}
