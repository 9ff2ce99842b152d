package org.sharp4j.tuning;

/** The collectives sharp4j implements; tuning rules are keyed by these. */
public enum Collective {
    ALLREDUCE, REDUCE, BARRIER
}
