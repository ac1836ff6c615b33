/*
 * quantity.h: Kubernetes resource quantities ("1", 1, "1000m", "2k", "1Gi", "1e3").
 * The grammar is the API's (resource.Quantity); values are returned in milli-units rounded up,
 * as Quantity.MilliValue() does, so an extended resource is an integer when milli % 1000 == 0.
 */
#ifndef GPUADMIT_QUANTITY_H
#define GPUADMIT_QUANTITY_H

#include <stdint.h>
#include <yyjson.h>

/* Parses a quantity string. Returns 0 with *milli set, or -1 when the text is not a quantity or
 * its value does not fit in int64 milli-units. */
int quantity_parse_milli(const char *s, int64_t *milli);

/* The same for a JSON value, which may be a string or a number. */
int quantity_json_milli(yyjson_val *v, int64_t *milli);

#endif
