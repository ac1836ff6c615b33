/*
 * names.h: the shapes Kubernetes gives names, as k8s.io/apimachinery pkg/util/validation
 * checks them, for what gpuadmit must get past the apiserver (an audit annotation key) or
 * refuse in a rule file (a label key or value).
 */
#ifndef GPUADMIT_NAMES_H
#define GPUADMIT_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#define NAMES_PART_MAX 63u /* qualifiedNameMaxLength */

/* The len bytes at s are a qualified name's name part: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?,
 * 1 to NAMES_PART_MAX bytes (IsQualifiedName after its prefix; a label value that is not empty,
 * IsValidLabelValue; an audit annotation key). */
bool names_part_ok(const char *s, size_t len);

#endif
