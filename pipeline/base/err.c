#include "err.h"

#include <stdarg.h>
#include <stdio.h>

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
