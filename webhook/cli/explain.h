/*
 * explain.h: gpuadmit explain: why GPU pods are Pending, from a snapshot or one list of the
 * live cluster (explain.c).
 */
#ifndef GPUADMIT_EXPLAIN_H
#define GPUADMIT_EXPLAIN_H

/* argv[0] is "explain". Returns the exit code. */
int explain_main(int argc, char **argv);

#endif
