/* How a fuzz target reports a broken property: a message, then abort() so
 * libFuzzer keeps the input. */
#ifndef DLB_FUZZ_FAIL_H
#define DLB_FUZZ_FAIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fuzz_fail(const char *fmt, ...)
{
    va_list ap;

    fputs("fuzz property broken: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

#endif
