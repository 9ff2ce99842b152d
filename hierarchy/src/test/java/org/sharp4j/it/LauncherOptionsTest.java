package org.sharp4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The launcher's command line as a new user meets it: help, version, one-line errors, the user's class path. */
class LauncherOptionsTest {
    private static String run(int expectedExit, String... args) throws Exception {
        LauncherProcessTest.Job job = new LauncherProcessTest.Job(List.of(), args);
        int exit = job.waitFor(120);
        String out = String.join("\n", job.lines);
        assertEquals(expectedExit, exit, out);
        return out;
    }

    @Test
    void helpListsTheAliasesAndVersionPrintsSharp4jAndJava() throws Exception {
        String help = run(0, "--help");
        for (String alias : new String[] {"osu_allreduce", "osu_reduce", "osu_barrier", "demo"}) {
            assertTrue(help.contains(alias), alias + " missing from the help:\n" + help); // picocli wraps the line
        }
        String v = run(0, "-V");
        assertTrue(v.startsWith("sharp4j "), v);
        assertTrue(v.contains("Java " + Runtime.version().feature()), v);
    }

    @Test
    void badCommandLinesGetOneLineAndStartNoRank() throws Exception {
        String nodes = run(2, "-np", "2", "--nodes", "4", AffinityMain.class.getName());
        assertEquals("sharp4j-run: --nodes 4 needs at least 4 ranks (one per node), got -np 2 (see sharp4j-run --help)", nodes);
        String jar = run(2, "-np", "2", "/nonexistent/app.jar");
        assertEquals("sharp4j-run: /nonexistent/app.jar: no such jar file (see sharp4j-run --help)", jar);
        String unknown = run(2, "-np", "2", "--frobnicate", AffinityMain.class.getName());
        assertEquals(1, unknown.lines().count(), unknown);
        assertTrue(unknown.contains("--frobnicate"), unknown);
    }

    @Test
    void theProgramsClassPathComesFromCpOrClasspath(@TempDir Path dir) throws Exception {
        Path src = dir.resolve("HelloCp.java");
        Files.writeString(src, "public class HelloCp { public static void main(String[] a) {"
                + " System.out.println(\"hello from rank \" + System.getenv(\"SHARP4J_RANK\") + \" of \" + System.getenv(\"SHARP4J_SIZE\")); } }");
        assertEquals(0, ToolProvider.getSystemJavaCompiler().run(null, null, null, "-d", dir.toString(), src.toString()));
        String out = run(0, "-np", "2", "--cp", dir.toString(), "HelloCp");
        assertTrue(out.contains("hello from rank 0 of 2") && out.contains("hello from rank 1 of 2"), out);
        // Without --cp the class is not found: the launcher must not find it elsewhere by chance.
        LauncherProcessTest.Job job = new LauncherProcessTest.Job(List.of(), "-np", "1", "HelloCp");
        assertTrue(job.waitFor(120) != 0, String.join("\n", job.lines));
    }
}
