package org.sharp4j.fallback.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.sharp4j.Config;
import org.sharp4j.ThreadRanks;

/**
 * What a user without UCX sees: a JVM in a private mount namespace whose library directory lacks
 * libucm/libucs/libuct/libucp (a hard-link copy without them, bind-mounted over the real one).
 * Needs root and {@code unshare -m}; skipped with the reason otherwise.
 */
class UcxMissingLibraryTest {
    static final Path LIBDIR = Path.of("/usr/lib/x86_64-linux-gnu");

    /** Child: prints the load error, then what forcing the UCX path on two simulated nodes says. */
    public static void main(String[] args) {
        System.out.println("LOAD-ERROR: " + UcxTransport.loadError());
        System.out.println("PROVIDER: " + new UcxProvider().unavailableReason(null));
        Throwable[] errs = ThreadRanks.runCollect(2, Config.defaults().withSimulatedTopology(2, 1).withInterNode("ucx"),
                comm -> { }, 60_000);
        System.out.println("INIT: " + errs[0]);
    }

    @Test
    void withoutLibucpTheErrorSaysWhatIsMissingAndHowToInstallIt() throws Exception {
        Assumptions.assumeTrue(Files.isRegularFile(LIBDIR.resolve("libucp.so.0")) || Files.isSymbolicLink(LIBDIR.resolve("libucp.so.0")),
                "no " + LIBDIR + "/libucp.so.0 to hide");
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "needs root for unshare -m / mount --bind");
        Path farm = LIBDIR.getParent().resolve(".sharp4j-noucx-" + ProcessHandle.current().pid());
        try {
            int rc = sh("cp -al " + LIBDIR + "/. " + farm + "/ && rm -rf " + farm + "/libucm.so* " + farm + "/libucs.so* "
                    + farm + "/libucs_signal.so* " + farm + "/libuct.so* " + farm + "/libucp.so* " + farm + "/ucx");
            Assumptions.assumeTrue(rc == 0, "cannot make a hard-link copy of " + LIBDIR + " (another file system?)");
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
            List<String> cmd = new ArrayList<>(List.of("unshare", "-m", "sh", "-c",
                    "mount --bind \"$0\" \"$1\" && exec \"$2\" -cp \"$3\" " + UcxMissingLibraryTest.class.getName(),
                    farm.toString(), LIBDIR.toString(), java, cp));
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(120, TimeUnit.SECONDS));
            Assumptions.assumeFalse(out.contains("unshare failed") || out.contains("mount: ") && !out.contains("LOAD-ERROR"),
                    "mount namespaces not permitted: " + out);
            assertEquals(0, p.exitValue(), out);
            String load = line(out, "LOAD-ERROR: ");
            assertTrue(load.contains("libucp.so.0: cannot open shared object file"), out);
            assertTrue(load.contains("apt-get install libucx0"), out);
            assertTrue(load.contains("UCX module"), out);
            assertEquals(load, line(out, "PROVIDER: "));
            String init = line(out, "INIT: ");
            assertTrue(init.contains("sharp4j.internode=ucx") && init.contains("apt-get install libucx0"), out);
            System.out.println("without libucp: " + load + "\n  forced: " + init);
        } finally {
            sh("rm -rf " + farm);
        }
    }

    static String line(String out, String prefix) {
        for (String l : out.split("\n")) {
            if (l.startsWith(prefix)) {
                return l.substring(prefix.length());
            }
        }
        throw new AssertionError("no line starting with " + prefix + " in:\n" + out);
    }

    static int sh(String script) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("sh", "-c", script).redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        return p.waitFor();
    }
}
