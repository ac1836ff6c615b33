/*
 * capreport.h: gpuadmit capacity: the GPUs of the cluster view per node and resource, and how
 * many replicas of a workload fit (capreport.c).
 */
#ifndef GPUADMIT_CAPREPORT_H
#define GPUADMIT_CAPREPORT_H

/* argv[0] is "capacity". Returns the exit code. */
int capreport_main(int argc, char **argv);

#endif
