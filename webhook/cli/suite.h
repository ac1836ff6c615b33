/*
 * suite.h: gpuadmit test PATH...: policy test suites (suite.c; the format is in
 * rules/tests/README.md).
 */
#ifndef GPUADMIT_SUITE_H
#define GPUADMIT_SUITE_H

/* argv[0] is "test". Returns the exit code. */
int suite_main(int argc, char **argv);

#endif
