package org.sharp4j.coll;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.management.JMException;
import org.junit.jupiter.api.Test;

class JitDirectiveTest {
    /**
     * The directive reaches the JVM's stack, excludes the JDK's ASM from C2 only (C1 still compiles
     * it), is added once however often it is asked for, and its file is gone afterwards.
     */
    @Test
    void theDirectiveExcludesTheJdksAsmFromC2OnceAndLeavesNoFile() throws JMException, IOException {
        assertNull(JitDirective.keepClassSpinnerOutOfC2());
        assertNull(JitDirective.keepClassSpinnerOutOfC2());
        String stack = JitDirective.print();
        String match = "matching: jdk/internal/classfile/impl/*.*, jdk/internal/org/objectweb/asm/*.*";
        assertEquals(1, stack.split(java.util.regex.Pattern.quote(match), -1).length - 1, () -> "directive not there once:\n" + stack);
        String ours = stack.substring(stack.indexOf(match), stack.indexOf("Directive: (default)"));
        String c1 = ours.substring(ours.indexOf("c1 directives:"), ours.indexOf("c2 directives:"));
        String c2 = ours.substring(ours.indexOf("c2 directives:"));
        assertTrue(c2.contains("Exclude:true"), () -> "C2 not excluded:\n" + ours);
        assertTrue(!c1.contains("Exclude:true"), () -> "C1 excluded too:\n" + ours);
        try (DirectoryStream<Path> d = Files.newDirectoryStream(Path.of(System.getProperty("java.io.tmpdir")),
                JitDirective.PREFIX + ProcessHandle.current().pid() + "-*")) {
            for (Path p : d) {
                throw new AssertionError("left behind: " + p);
            }
        }
    }
}
