/*
 * check.h: gpuadmit check FILE...: manifests judged by the webhook's evaluator, offline
 * (check.c explains the report and the exit codes).
 */
#ifndef GPUADMIT_CHECK_H
#define GPUADMIT_CHECK_H

/* argv[0] is "check". Returns the exit code. */
int check_main(int argc, char **argv);

#endif
