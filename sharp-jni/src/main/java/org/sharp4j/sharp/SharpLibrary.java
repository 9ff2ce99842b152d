package org.sharp4j.sharp;

import com.sun.jna.Function;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import org.sharp4j.Sharp4jException;

/**
 * Finds, loads and checks libsharp_coll. Lookup order: the property {@code sharp4j.sharp.lib} (a
 * file, or a directory), {@code jna.library.path}, {@code LD_LIBRARY_PATH},
 * {@code $HPCX_SHARP_DIR/lib}; in each directory the names {@code libsharp_coll.so},
 * {@code .so.5}, {@code .so.4}. The first file found is loaded; when none is, the error names every
 * place looked at.
 *
 * <p>Loading checks that JNA lays every structure out as the reference header does
 * ({@link SharpAbi#check()}), binds the required functions ({@link SharpNative}, once per JVM) and
 * reads {@code sharp_coll_default_config}. Optional functions are looked up on first use.
 */
public final class SharpLibrary {
    /** File names tried in each directory (HPC-X installs .so.5, older ones .so.4). */
    static final String[] NAMES = {"libsharp_coll.so", "libsharp_coll.so.5", "libsharp_coll.so.4"};

    private static SharpLibrary bound;

    private final File file;
    private final NativeLibrary lib;
    private final SharpAbi.CollConfig defaultConfig;
    private final Map<String, Function> optional = new ConcurrentHashMap<>();

    private SharpLibrary(File file, NativeLibrary lib, SharpAbi.CollConfig defaultConfig) {
        this.file = file;
        this.lib = lib;
        this.defaultConfig = defaultConfig;
    }

    /** Result of a lookup: the file, or null and where it looked. */
    public static final class Location {
        public final File file;
        public final List<String> looked;

        Location(File file, List<String> looked) {
            this.file = file;
            this.looked = looked;
        }

        public String describe() {
            return String.join("; ", looked);
        }
    }

    /** Searches in the documented order; {@code env} is the process environment (a parameter for tests). */
    public static Location locate(Properties props, Map<String, String> env) {
        List<String> looked = new ArrayList<>();
        String p = props.getProperty(SharpSettings.LIB);
        if (p != null && !p.isBlank()) {
            File f = new File(p.trim());
            if (f.isFile()) {
                return new Location(f, looked);
            }
            File hit = f.isDirectory() ? inDir(f) : null;
            if (hit != null) {
                return new Location(hit, looked);
            }
            looked.add(SharpSettings.LIB + "=" + p.trim() + (f.exists() ? " (no libsharp_coll.so in it)" : " (no such file)"));
        } else {
            looked.add(SharpSettings.LIB + " (unset)");
        }
        File hit = searchPath("jna.library.path", props.getProperty("jna.library.path"), looked);
        if (hit == null) {
            hit = searchPath("LD_LIBRARY_PATH", env.get("LD_LIBRARY_PATH"), looked);
        }
        if (hit == null) {
            String hpcx = env.get("HPCX_SHARP_DIR");
            if (hpcx == null || hpcx.isBlank()) {
                looked.add("$HPCX_SHARP_DIR/lib (HPCX_SHARP_DIR unset)");
            } else {
                File d = new File(hpcx.trim(), "lib");
                hit = inDir(d);
                if (hit == null) {
                    looked.add("$HPCX_SHARP_DIR/lib=" + d);
                }
            }
        }
        return new Location(hit, looked);
    }

    private static File searchPath(String what, String path, List<String> looked) {
        if (path == null || path.isBlank()) {
            looked.add(what + " (unset)");
            return null;
        }
        for (String dir : path.split(File.pathSeparator)) {
            if (!dir.isBlank()) {
                File hit = inDir(new File(dir.trim()));
                if (hit != null) {
                    return hit;
                }
            }
        }
        looked.add(what + "=" + path);
        return null;
    }

    private static File inDir(File dir) {
        for (String n : NAMES) {
            File f = new File(dir, n);
            if (f.isFile()) {
                return f;
            }
        }
        return null;
    }

    /**
     * Locates and loads the library (the JVM binds one libsharp_coll: a second call that finds the
     * same file returns the same instance, one that finds another file fails).
     *
     * @throws Sharp4jException naming where it looked, or why the file found is unusable
     */
    public static SharpLibrary load(Properties props, Map<String, String> env) {
        Location loc = locate(props, env);
        if (loc.file == null) {
            throw new Sharp4jException("libsharp_coll not found; looked in: " + loc.describe()
                    + " (set " + SharpSettings.LIB + " to its path, or add HPC-X's sharp/lib to LD_LIBRARY_PATH)");
        }
        return load(loc.file);
    }

    /** Loads {@code file}, binding it for the JVM on first use. */
    public static synchronized SharpLibrary load(File file) {
        File canon;
        try {
            canon = file.getCanonicalFile();
        } catch (java.io.IOException e) {
            canon = file.getAbsoluteFile();
        }
        if (bound != null) {
            if (bound.file.equals(canon)) {
                return bound;
            }
            throw new Sharp4jException("cannot load " + canon + ": this JVM already bound libsharp_coll from " + bound.file);
        }
        String abi = SharpAbi.check();
        if (abi != null) {
            throw new Sharp4jException("cannot use " + canon + ": " + abi);
        }
        NativeLibrary lib;
        try {
            lib = NativeLibrary.getInstance(canon.getPath());
        } catch (UnsatisfiedLinkError e) {
            throw new Sharp4jException("cannot load " + canon + ": " + e.getMessage(), e);
        }
        SharpAbi.CollConfig def;
        try {
            Pointer p = lib.getGlobalVariableAddress("sharp_coll_default_config");
            def = new SharpAbi.CollConfig(p);
            def.read();
        } catch (UnsatisfiedLinkError e) {
            throw new Sharp4jException("cannot use " + canon + ": no symbol sharp_coll_default_config", e);
        }
        try {
            Native.register(SharpNative.class, lib);
        } catch (UnsatisfiedLinkError | IllegalArgumentException e) {
            throw new Sharp4jException("cannot use " + canon + ": a required function is missing: " + e.getMessage(), e);
        }
        bound = new SharpLibrary(canon, lib, def);
        return bound;
    }

    /** The file loaded. */
    public File file() {
        return file;
    }

    /** A copy of the library's {@code sharp_coll_default_config}. */
    public SharpAbi.CollConfig defaultConfig() {
        SharpAbi.CollConfig c = new SharpAbi.CollConfig();
        c.ib_dev_list = defaultConfig.ib_dev_list;
        c.user_progress_num_polls = defaultConfig.user_progress_num_polls;
        c.coll_timeout = defaultConfig.coll_timeout;
        c.flags = defaultConfig.flags;
        c.reserved = defaultConfig.reserved.clone();
        return c;
    }

    /** {@code sharp_coll_strerror}'s text. */
    public String strerror(int code) {
        long p = SharpNative.sharp_coll_strerror(code);
        return p == 0 ? "error " + code : new Pointer(p).getString(0);
    }

    /** An optional function (reduce_scatter, allgather, reg_mr_v2, ...), or null when this library lacks it. */
    public Function optional(String name) {
        Function f = optional.get(name);
        if (f == null) {
            try {
                f = lib.getFunction(name);
            } catch (UnsatisfiedLinkError e) {
                return null;
            }
            optional.put(name, f);
        }
        return f;
    }

    public boolean supportsReduceScatter() {
        return optional("sharp_coll_do_reduce_scatter") != null;
    }

    public boolean supportsAllgather() {
        return optional("sharp_coll_do_allgather") != null;
    }

    public boolean supportsRegMrV2() {
        return optional("sharp_coll_reg_mr_v2") != null;
    }
}
