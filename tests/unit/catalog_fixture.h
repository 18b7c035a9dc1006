/* Group setup for tests that need the embedded schema catalog in `cat`. */
#ifndef DLB_TEST_CATALOG_FIXTURE_H
#define DLB_TEST_CATALOG_FIXTURE_H

#include <stdio.h>

#include "catalog.h"

static dlb_catalog_t *cat;

static int setup(void **state)
{
    char err[512];

    (void)state;
    if (dlb_catalog_new(&cat, err, sizeof(err))) {
        fprintf(stderr, "catalog: %s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    dlb_catalog_destroy(cat);
    return 0;
}

#endif
