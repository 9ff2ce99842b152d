package org.sharp4j.spi;

import java.util.Locale;

/**
 * The Maven artifacts that bring sharp4j's own providers, so that an error about a missing one
 * says what to add to the build rather than only a provider id.
 */
public final class KnownProviders {
    /** The all-in-one artifact: every module needed for multi-node use. */
    public static final String ALL_IN_ONE = "org.sharp4j:sharp4j";
    /** The UCX host path ({@code sharp4j.internode=ucx}). */
    public static final String UCX = "org.sharp4j:sharp4j-fallback";
    /** The SHARP offload ({@code sharp4j.sharp}). */
    public static final String SHARP = "org.sharp4j:sharp4j-sharp-jni";

    private KnownProviders() {
    }

    /** groupId:artifactId of the module that provides {@code id} (ucx, sharp), or null when sharp4j has none. */
    public static String artifactOf(String id) {
        switch (id == null ? "" : id.toLowerCase(Locale.ROOT)) {
            case "ucx": return UCX;
            case "sharp": return SHARP;
            default: return null;
        }
    }

    /** "add the dependency A (or the all-in-one ..., which brings every module)", for the provider id. */
    public static String addHint(String id) {
        String a = artifactOf(id);
        return a == null ? null : "add the dependency " + a + " (or " + ALL_IN_ONE + ", which brings every module) to the class path";
    }
}
