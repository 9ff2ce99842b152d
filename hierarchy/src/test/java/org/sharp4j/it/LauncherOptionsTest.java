package org.sharp4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher's command line as a new user meets it: help, version, one-line errors, the user's
 * class path, -D properties, tagged output.
 */
class LauncherOptionsTest {
    /** {stdout, stderr} of {@code java -cp <test class path> LocalLauncher args}, after checking its exit code. */
    private static String[] runSplit(int expectedExit, String... args) throws Exception {
        Path out = Files.createTempFile("sharp4j-launcher", ".out");
        Path err = Files.createTempFile("sharp4j-launcher", ".err");
        try {
            List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                    System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")), "org.sharp4j.launch.LocalLauncher"));
            cmd.addAll(List.of(args));
            Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            boolean ended = p.waitFor(120, TimeUnit.SECONDS);
            if (!ended) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                p.waitFor();
            }
            String[] r = {Files.readString(out), Files.readString(err)};
            String both = "\n--- stdout\n" + r[0] + "\n--- stderr\n" + r[1];
            assertTrue(ended, "launcher did not end within 120 s" + both);
            assertEquals(expectedExit, p.exitValue(), both);
            return r;
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

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

    @Test
    void dashDOptionsReachEveryRankAfterTheLaunchersOwnAndNativeAccessIsEnabled() throws Exception {
        String[] r = runSplit(0, "-np", "2", "-Dsharp4j.x=y", "-Dplain.prop=a=b", "-Dempty", "--nodes", "1",
                OutputMain.class.getName(), "0", "0", "sharp4j.x", "plain.prop", "empty", "sharp4j.topology.nodes");
        for (int rank = 0; rank < 2; rank++) {
            String p = "rank " + rank + " prop ";
            assertTrue(r[0].contains(p + "sharp4j.x=y\n"), r[0]);
            assertTrue(r[0].contains(p + "plain.prop=a=b\n"), r[0]);
            assertTrue(r[0].contains(p + "empty=\n"), r[0]);
            assertTrue(r[0].contains(p + "sharp4j.topology.nodes=1\n"), r[0]);
            String argsLine = "rank " + rank + " args ";
            String args = r[0].lines().filter(l -> l.contains(argsLine)).findFirst().orElseThrow();
            assertTrue(args.contains("--enable-native-access=ALL-UNNAMED"), args);
        }
        // without a name: one line naming the option, no rank started
        String[] bad = runSplit(2, "-np", "2", "-D==x", OutputMain.class.getName(), "0", "0");
        assertEquals("", bad[0]);
        assertEquals("sharp4j-run: -D needs NAME=VALUE, got the name '' (see sharp4j-run --help)", bad[1].strip());
    }

    @Test
    void tagOutputPrefixesEveryLineWithItsRankAndStreamAndNeverCutsALine() throws Exception {
        int lines = 300;
        int length = 5000; // longer than a pipe's atomic write (4096 B): a line written in pieces would show
        String[] r = runSplit(0, "--tag-output", "-np", "2", OutputMain.class.getName(), String.valueOf(lines), String.valueOf(length));
        int[] next = new int[2];
        for (String l : r[0].split("\n")) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\[1,([01])\\]<stdout>:(.*)").matcher(l);
            assertTrue(m.matches(), "untagged or cut stdout line: " + l.substring(0, Math.min(200, l.length())));
            int rank = Integer.parseInt(m.group(1));
            String body = m.group(2);
            if (body.startsWith("rank " + rank + " line ")) {
                assertEquals(OutputMain.line(rank, next[rank], length), body, "rank " + rank + " line " + next[rank]);
                next[rank]++;
            } else {
                assertTrue(body.equals("rank " + rank + " last") || body.startsWith("rank " + rank + " args "), l);
            }
        }
        assertEquals(lines, next[0]);
        assertEquals(lines, next[1]);
        assertTrue(r[0].contains("[1,0]<stdout>:rank 0 last\n") && r[0].contains("[1,1]<stdout>:rank 1 last\n"), "last line without newline lost");
        List<String> err = r[1].lines().toList();
        assertEquals(2 * (lines / 10), err.size(), r[1]);
        for (String l : err) {
            assertTrue(l.matches("\\[1,([01])\\]<stderr>:rank \\1 err \\d+"), l);
        }
        // off by default: the ranks' own lines, untagged
        String[] plain = runSplit(0, "-np", "2", OutputMain.class.getName(), "2", "10");
        assertTrue(plain[0].contains("rank 1 line 1 ") && !plain[0].contains("<stdout>"), plain[0]);
        assertTrue(plain[1].contains("rank 0 err 0") && !plain[1].contains("<stderr>"), plain[1]);
    }
}
