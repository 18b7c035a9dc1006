#include "embedded.h"

#include <string.h>

const dlb_embedded_t *dlb_embedded_find(const dlb_embedded_t *table, const char *name)
{
    for (; table->name; table++)
        if (!strcmp(table->name, name))
            return table;
    return NULL;
}
