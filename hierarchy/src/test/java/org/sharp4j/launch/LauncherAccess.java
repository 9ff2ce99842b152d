package org.sharp4j.launch;

/** Lets tests in other packages reach the launcher's package-private helpers. */
public final class LauncherAccess {
    private LauncherAccess() {
    }

    public static int[] bindPlan(int np, int[] allowed) {
        return LocalLauncher.bindPlan(np, allowed);
    }
}
