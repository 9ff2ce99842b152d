package org.sharp4j.all;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.ConsoleAppender;
import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.sharp4j.spi.BootstrapProvider;
import org.sharp4j.spi.InterNodeProvider;
import org.slf4j.LoggerFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * The all-in-one artifact's class path (this module's test class path is exactly what a user's
 * program gets from the one dependency) holds what multi-node use needs.
 */
class AllInOneTest {
    @Test
    void theUcxHostPathAndTheSharpOffloadAreRegistered() {
        Map<String, InterNodeProvider> byId = new TreeMap<>();
        ServiceLoader.load(InterNodeProvider.class).forEach(p -> byId.put(p.id(), p));
        assertTrue(byId.containsKey("ucx"), "UCX host path missing: " + byId.keySet());
        assertFalse(byId.get("ucx").offload());
        assertEquals("org.sharp4j.fallback.ucx.UcxProvider", byId.get("ucx").getClass().getName());
        assertTrue(byId.containsKey("sharp"), "SHARP offload missing: " + byId.keySet());
        assertTrue(byId.get("sharp").offload());
        assertEquals("org.sharp4j.sharp.SharpProvider", byId.get("sharp").getClass().getName());
    }

    @Test
    void theNativeBindingsAndTheLauncherLoad() throws Exception {
        // JNA: the PMIx bootstrap (mpirun/srun) and SHARP; jucx: UCX; picocli: the launcher and `sharp4j info`
        for (String c : new String[] {"com.sun.jna.Native", "org.openucx.jucx.ucp.UcpContext", "picocli.CommandLine",
                "org.sharp4j.bootstrap.pmix.PmixBootstrap", "org.sharp4j.launch.LocalLauncher", "org.sharp4j.tuning.Collective"}) {
            assertNotNull(Class.forName(c, false, AllInOneTest.class.getClassLoader()), c);
        }
        // no bootstrap plugin that needs a jar the user does not have (the mpi module needs Open MPI's mpi.jar)
        for (BootstrapProvider b : ServiceLoader.load(BootstrapProvider.class)) {
            assertFalse(b.getClass().getName().startsWith("org.sharp4j.mpi."), b.getClass().getName());
        }
    }

    @Test
    void withoutAUserConfigurationWarningsGoToStderrNotStdout() {
        // no logback.xml nor logback-test.xml on this class path: LogbackDefaults configured Logback
        LoggerContext lc = (LoggerContext) LoggerFactory.getILoggerFactory();
        ch.qos.logback.classic.Logger root = lc.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        assertEquals(Level.WARN, root.getLevel());
        Appender<?> a = root.getAppender(org.sharp4j.logging.StderrLogback.APPENDER);
        assertNotNull(a, "LogbackDefaults did not configure Logback");
        assertEquals("System.err", ((ConsoleAppender<?>) a).getTarget());
        assertEquals(Level.WARN, lc.getLogger("org.sharp4j").getLevel());
        assertTrue(LoggerFactory.getLogger("org.sharp4j.x").isWarnEnabled());
        assertFalse(LoggerFactory.getLogger("org.sharp4j.x").isInfoEnabled());
    }

    @Test
    void sharp4jsLevelComesFromItsProperty() {
        assertEquals(Level.WARN, LogbackDefaults.sharp4jLevel(null));
        assertEquals(Level.INFO, LogbackDefaults.sharp4jLevel(" info "));
        assertEquals(Level.OFF, LogbackDefaults.sharp4jLevel("OFF"));
        assertEquals(Level.WARN, LogbackDefaults.sharp4jLevel("loud"), "a typo must not mean DEBUG (Logback's default)");
    }

    /** The BOM names every jar module of the reactor (a module added later and forgotten there fails here). */
    @Test
    void theBomListsEveryModule() throws Exception {
        Path root = Path.of(System.getProperty("sharp4j.test.root", ".."));
        Document parent = parse(root.resolve("pom.xml"));
        List<String> modules = new ArrayList<>();
        NodeList ms = parent.getElementsByTagName("module");
        for (int i = 0; i < ms.getLength(); i++) {
            modules.add(ms.item(i).getTextContent().trim());
        }
        assertTrue(modules.contains("mpi") && modules.contains("all"), modules.toString());
        List<String> managed = new ArrayList<>();
        NodeList deps = parse(root.resolve("bom/pom.xml")).getElementsByTagName("dependency");
        for (int i = 0; i < deps.getLength(); i++) {
            managed.add(child((Element) deps.item(i), "artifactId"));
        }
        for (String m : modules) {
            Document pom = parse(root.resolve(m).resolve("pom.xml"));
            String packaging = child(pom.getDocumentElement(), "packaging");
            if ("pom".equals(packaging)) {
                continue;
            }
            String artifactId = child(pom.getDocumentElement(), "artifactId");
            assertTrue(managed.contains(artifactId), "sharp4j-bom does not manage " + artifactId + " (module " + m + ")");
        }
    }

    private static Document parse(Path p) throws Exception {
        File f = p.toFile();
        assertTrue(f.isFile(), "no " + f);
        return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(f);
    }

    /** Text of the direct child element {@code name}, or null. */
    private static String child(Element e, String name) {
        for (Node n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element && ((Element) n).getTagName().equals(name)) {
                return n.getTextContent().trim();
            }
        }
        return null;
    }
}
