/* names.c: Kubernetes name shapes (see names.h). */
#include "names.h"

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool names_part_ok(const char *s, size_t len)
{
    if (len == 0 || len > NAMES_PART_MAX || !alnum(s[0]) || !alnum(s[len - 1]))
        return false;
    for (size_t i = 1; i + 1 < len; i++) {
        if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    }
    return true;
}
