#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *dlb_err_name(int err)
{
    switch (err) {
    case DLB_OK:
        return "ok";
    case DLB_ERR_NOMEM:
        return "nomem";
    case DLB_ERR_FRAMING:
        return "framing";
    case DLB_ERR_SCHEMA_ID:
        return "schema_id";
    case DLB_ERR_DECODE:
        return "decode";
    case DLB_ERR_INVALID:
        return "invalid";
    case DLB_ERR_TRANSIENT:
        return "transient";
    case DLB_ERR_NOTFOUND:
        return "notfound";
    case DLB_ERR_CONF:
        return "conf";
    case DLB_ERR_FATAL:
        return "fatal";
    default:
        return "generic";
    }
}

int dlb_seterr(char *errstr, size_t errstr_size, int err, const char *fmt, ...)
{
    va_list ap;

    if (errstr && errstr_size > 0) {
        va_start(ap, fmt);
        vsnprintf(errstr, errstr_size, fmt, ap);
        va_end(ap);
    }
    return err;
}

void dlb_err_prepend(char *errstr, size_t size, const char *fmt, ...)
{
    char pre[192];
    size_t pl, el;
    va_list ap;

    if (!errstr || !size)
        return;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof(pre), fmt, ap);
    va_end(ap);
    pl = strlen(pre);
    el = strnlen(errstr, size - 1);
    if (pl > size - 1)
        pl = size - 1;
    if (pl + el > size - 1)
        el = size - 1 - pl;
    memmove(errstr + pl, errstr, el);
    memcpy(errstr, pre, pl);
    errstr[pl + el] = '\0';
}
