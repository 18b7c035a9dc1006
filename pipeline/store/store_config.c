/* Versioned configuration rules and configuration matches in PostgreSQL
 * (store_config.h; tables of pipeline/store/sql/003_config.sql). */
#include "store_config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "err.h"
#include "store_pg_internal.h"

/* First key of pg_advisory_xact_lock(int, int) for appliers ("cfg"; the
 * migrations use "dlb"); the second is hashtext of the schema, so
 * environments apply independently. */
#define DLB_CFG_LOCK_CLASS 0x636667

#define VERSION_COLS                                                                               \
    "version, created_ms, source, message, COALESCE(rollback_of, 0), rules, checksum"
/* Hex SHA-256 of a text parameter's UTF-8 bytes: the same on apply and on load. */
#define SHA256_HEX(p) "encode(sha256(convert_to(" p ", 'UTF8')), 'hex')"
/* The server's clock after the lock is taken: versions get increasing times. */
#define NOW_MS       "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
#define NEXT_VERSION "(SELECT COALESCE(max(version), 0) + 1 FROM config_versions)"

static void row_version(const PGresult *res, int row, dlb_cfg_version_t *v)
{
    memset(v, 0, sizeof(*v));
    v->version = strtoll(PQgetvalue(res, row, 0), NULL, 10);
    v->created_ms = strtoll(PQgetvalue(res, row, 1), NULL, 10);
    snprintf(v->source, sizeof(v->source), "%s", PQgetvalue(res, row, 2));
    snprintf(v->message, sizeof(v->message), "%s", PQgetvalue(res, row, 3));
    v->rollback_of = strtoll(PQgetvalue(res, row, 4), NULL, 10);
    v->rules = strtoll(PQgetvalue(res, row, 5), NULL, 10);
    snprintf(v->checksum, sizeof(v->checksum), "%s", PQgetvalue(res, row, 6));
}

/* A new version: its row from version_sql (parameters vp), then its rules
 * from rules_sql ($1 the new version, $2 rules_arg), in one transaction
 * under the appliers' lock. */
static int cfg_write(dlb_pg_t *pg, const char *version_sql, const char *const *vp, int vn,
                     const char *rules_sql, const char *rules_arg, const char *notfound,
                     dlb_cfg_version_t *out, char *errstr, size_t errstr_size)
{
    char cls[24], ver[24];
    const char *lock[1] = {cls}, *rp[2] = {ver, rules_arg};
    PGresult *res = NULL;
    int err;

    memset(out, 0, sizeof(*out));
    if (dlb_pg_in_tx(pg))
        return dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                          "postgresql: a configuration version is applied in its own transaction, "
                          "not inside the caller's");
    snprintf(cls, sizeof(cls), "%d", DLB_CFG_LOCK_CLASS);
    if ((err = dlb_pg_begin(pg, errstr, errstr_size)))
        return err;
    if ((err = dlb_pg_exec(
             pg, "SELECT pg_advisory_xact_lock($1::integer, hashtext(current_schema()))", 1, lock,
             NULL, 0, NULL, "taking the configuration lock", errstr, errstr_size)) ||
        (err = dlb_pg_exec(pg, version_sql, vn, vp, NULL, 0, &res, "adding a configuration version",
                           errstr, errstr_size)))
        goto out;
    if (PQntuples(res) != 1) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND, "postgresql: %s", notfound);
        goto out;
    }
    row_version(res, 0, out);
    PQclear(res);
    res = NULL;
    snprintf(ver, sizeof(ver), "%" PRId64, out->version);
    if ((err = dlb_pg_exec(pg, rules_sql, 2, rp, NULL, 0, &res, "adding configuration rules",
                           errstr, errstr_size)))
        goto out;
    if (strtoll(PQcmdTuples(res), NULL, 10) != out->rules) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                         "postgresql: version %" PRId64 " got %s rules, expected %" PRId64,
                         out->version, PQcmdTuples(res), out->rules);
        goto out;
    }
    err = dlb_pg_commit(pg, errstr, errstr_size);
out:
    PQclear(res);
    if (err) {
        dlb_pg_rollback(pg);
        memset(out, 0, sizeof(*out));
    }
    return err;
}

int dlb_cfg_apply(dlb_pg_t *pg, const dlb_rules_t *rules, const char *source, const char *message,
                  dlb_cfg_version_t *out, char *errstr, size_t errstr_size)
{
    /* The rows come from the canonical JSON with file and line, element by
     * element (json, unlike jsonb, keeps each element's text as written); the
     * checksum from the JSON without them. */
    static const char version_sql[] =
        "INSERT INTO config_versions (version, created_ms, source, message, rules, checksum) "
        "SELECT " NEXT_VERSION ", " NOW_MS
        ", $1, $2, $3::integer, " SHA256_HEX("$4") " RETURNING " VERSION_COLS;
    static const char rules_sql[] =
        "INSERT INTO config_rules (version, position, rule_id, priority, file, line, include, "
        "exclude, configure, rule_json) "
        "SELECT $1::bigint, (r.ord - 1)::integer, r.e->>'id', (r.e->>'priority')::integer, "
        "r.e->>'file', (r.e->>'line')::integer, (r.e->'include')::jsonb, "
        "(r.e->'exclude')::jsonb, (r.e->'configure')::jsonb, r.e::text "
        "FROM json_array_elements($2::json) WITH ORDINALITY AS r(e, ord)";
    char *full = NULL, *bare = NULL, cnt[24];
    const char *vp[4] = {source ? source : "", message ? message : "", cnt, NULL};
    int err;

    memset(out, 0, sizeof(*out));
    if ((err = dlb_rules_to_json(rules, 0, &full, errstr, errstr_size)) ||
        (err = dlb_rules_to_json(rules, DLB_RULES_JSON_NO_SOURCE, &bare, errstr, errstr_size)))
        goto out;
    snprintf(cnt, sizeof(cnt), "%zu", rules->cnt);
    vp[3] = bare;
    err = cfg_write(pg, version_sql, vp, 4, rules_sql, full, "no version added", out, errstr,
                    errstr_size);
out:
    free(full);
    free(bare);
    return err;
}

int dlb_cfg_rollback(dlb_pg_t *pg, int64_t to, const char *message, dlb_cfg_version_t *out,
                     char *errstr, size_t errstr_size)
{
    static const char version_sql[] =
        "INSERT INTO config_versions (version, created_ms, source, message, rollback_of, rules, "
        "checksum) "
        "SELECT " NEXT_VERSION ", " NOW_MS ", 'rollback', $2, v.version, v.rules, v.checksum "
        "FROM config_versions v WHERE v.version = $1::bigint RETURNING " VERSION_COLS;
    static const char rules_sql[] =
        "INSERT INTO config_rules (version, position, rule_id, priority, file, line, include, "
        "exclude, configure, rule_json) "
        "SELECT $1::bigint, position, rule_id, priority, file, line, include, exclude, configure, "
        "rule_json FROM config_rules WHERE version = $2::bigint";
    char ver[24], notfound[64];
    const char *vp[2] = {ver, message ? message : ""};

    snprintf(ver, sizeof(ver), "%" PRId64, to);
    snprintf(notfound, sizeof(notfound), "no configuration version %" PRId64, to);
    return cfg_write(pg, version_sql, vp, 2, rules_sql, ver, notfound, out, errstr, errstr_size);
}

/* Version rows of a query; *cnt of them into out (at most max). */
static int cfg_versions(dlb_pg_t *pg, const char *sql, int nparams, const char *const *values,
                        dlb_cfg_version_t *out, size_t max, size_t *cnt, char *errstr,
                        size_t errstr_size)
{
    PGresult *res = NULL;
    int err;

    *cnt = 0;
    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)) ||
        (err = dlb_pg_exec(pg, sql, nparams, values, NULL, 0, &res,
                           "reading configuration versions", errstr, errstr_size)))
        return err;
    for (int i = 0; i < PQntuples(res) && *cnt < max; i++)
        row_version(res, i, &out[(*cnt)++]);
    PQclear(res);
    return 0;
}

int dlb_cfg_latest(dlb_pg_t *pg, dlb_cfg_version_t *out, char *errstr, size_t errstr_size)
{
    size_t n;
    int err;

    err = cfg_versions(pg,
                       "SELECT " VERSION_COLS " FROM config_versions ORDER BY version DESC LIMIT 1",
                       0, NULL, out, 1, &n, errstr, errstr_size);
    if (err || !n)
        memset(out, 0, sizeof(*out));
    return err;
}

int dlb_cfg_get(dlb_pg_t *pg, int64_t version, dlb_cfg_version_t *out, char *errstr,
                size_t errstr_size)
{
    char ver[24];
    const char *v[1] = {ver};
    size_t n;
    int err;

    snprintf(ver, sizeof(ver), "%" PRId64, version);
    err =
        cfg_versions(pg, "SELECT " VERSION_COLS " FROM config_versions WHERE version = $1::bigint",
                     1, v, out, 1, &n, errstr, errstr_size);
    if (!err && !n)
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND,
                         "postgresql: no configuration version %" PRId64, version);
    if (err)
        memset(out, 0, sizeof(*out));
    return err;
}

int dlb_cfg_list(dlb_pg_t *pg, dlb_cfg_version_t **out, size_t *cnt, char *errstr,
                 size_t errstr_size)
{
    PGresult *res = NULL;
    int err, n;

    *out = NULL;
    *cnt = 0;
    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)) ||
        (err = dlb_pg_exec(pg, "SELECT " VERSION_COLS " FROM config_versions ORDER BY version", 0,
                           NULL, NULL, 0, &res, "listing configuration versions", errstr,
                           errstr_size)))
        return err;
    n = PQntuples(res);
    if (n > 0 && !(*out = calloc((size_t)n, sizeof(**out)))) {
        PQclear(res);
        return dlb_seterr(errstr, errstr_size, DLB_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++)
        row_version(res, i, &(*out)[i]);
    *cnt = (size_t)n;
    PQclear(res);
    return 0;
}

/* Loaded rules hash to their version's checksum: the rows were not changed
 * behind our back, and reading them back lost nothing the checksum covers. */
static int cfg_verify(dlb_pg_t *pg, const dlb_rules_t *rules, int64_t version, const char *checksum,
                      char *errstr, size_t errstr_size)
{
    char *bare = NULL;
    const char *v[1];
    PGresult *res = NULL;
    int err;

    if ((err = dlb_rules_to_json(rules, DLB_RULES_JSON_NO_SOURCE, &bare, errstr, errstr_size)))
        return err;
    v[0] = bare;
    if (!(err = dlb_pg_exec(pg, "SELECT " SHA256_HEX("$1"), 1, v, NULL, 0, &res,
                            "checking a configuration version", errstr, errstr_size)) &&
        strcmp(PQgetvalue(res, 0, 0), checksum))
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                         "postgresql: the rules of configuration version %" PRId64
                         " do not match its checksum %.12s (they hash to %.12s)",
                         version, checksum, PQgetvalue(res, 0, 0));
    PQclear(res);
    free(bare);
    return err;
}

int dlb_cfg_load(dlb_pg_t *pg, int64_t version, dlb_rules_t *out, int64_t *loaded, char *errstr,
                 size_t errstr_size)
{
    static const char sql[] =
        "SELECT v.version, v.checksum, v.rules, "
        "'[' || COALESCE(string_agg(r.rule_json, ',' ORDER BY r.position), '') || ']' "
        "FROM config_versions v LEFT JOIN config_rules r ON r.version = v.version "
        "WHERE v.version = CASE WHEN $1::bigint = 0 "
        "THEN (SELECT max(version) FROM config_versions) ELSE $1::bigint END "
        "GROUP BY v.version";
    char ver[24], sub[512];
    const char *v[1] = {ver};
    dlb_rules_t rs = {0};
    PGresult *res = NULL;
    int64_t got = 0;
    int err;

    out->rules = NULL;
    out->cnt = 0;
    if (loaded)
        *loaded = 0;
    snprintf(ver, sizeof(ver), "%" PRId64, version);
    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)) ||
        (err = dlb_pg_exec(pg, sql, 1, v, NULL, 0, &res, "loading configuration rules", errstr,
                           errstr_size)))
        return err;
    if (PQntuples(res) != 1) {
        if (version)
            err = dlb_seterr(errstr, errstr_size, DLB_ERR_NOTFOUND,
                             "postgresql: no configuration version %" PRId64, version);
        goto out;
    }
    got = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    if ((err = dlb_rules_from_json(PQgetvalue(res, 0, 3), (size_t)PQgetlength(res, 0, 3), &rs, sub,
                                   sizeof(sub)))) {
        dlb_seterr(errstr, errstr_size, err,
                   "postgresql: configuration version %" PRId64 " does not load: %s", got, sub);
        goto out;
    }
    if ((int64_t)rs.cnt != strtoll(PQgetvalue(res, 0, 2), NULL, 10)) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_GENERIC,
                         "postgresql: configuration version %" PRId64 " has %zu rules, not %s", got,
                         rs.cnt, PQgetvalue(res, 0, 2));
        goto out;
    }
    if ((err = cfg_verify(pg, &rs, got, PQgetvalue(res, 0, 1), errstr, errstr_size)))
        goto out;
    *out = rs;
    memset(&rs, 0, sizeof(rs));
    if (loaded)
        *loaded = got;
out:
    PQclear(res);
    dlb_rules_clear(&rs);
    return err;
}

/* ---- matches --------------------------------------------------------------------- */

/* rule_ids as a JSON array and values as a JSON object of their JSON texts. */
static int match_json(const dlb_config_match_t *m, char **ids, char **values)
{
    cJSON *a = cJSON_CreateArray(), *o = cJSON_CreateObject();
    int err = DLB_ERR_NOMEM;

    *ids = *values = NULL;
    if (!a || !o)
        goto out;
    for (size_t i = 0; i < m->rule_ids_cnt; i++) {
        cJSON *s = cJSON_CreateString(m->rule_ids[i]);

        if (!s)
            goto out;
        cJSON_AddItemToArray(a, s);
    }
    for (size_t i = 0; i < m->values_cnt; i++)
        if (!cJSON_AddRawToObject(o, m->values[i].key,
                                  m->values[i].json ? m->values[i].json : "null"))
            goto out;
    if ((*ids = cJSON_PrintUnformatted(a)) && (*values = cJSON_PrintUnformatted(o)))
        err = 0;
out:
    cJSON_Delete(a);
    cJSON_Delete(o);
    return err;
}

int dlb_cfg_put_match(dlb_pg_t *pg, const dlb_config_match_t *m, const void *raw, size_t raw_len,
                      char *errstr, size_t errstr_size)
{
    /* One match per id of a job at any time: the key holds the event time
     * too (migration 012), so the id is looked up first, as store_pg.c does
     * for the events. */
    static const char sql[] =
        "INSERT INTO config_matches (event_id, job_uid, event_time_ms, rules_version, rule_ids, "
        "values, trigger_event_id, raw) SELECT $1, $2, $3::bigint, $4::bigint, $5::jsonb, "
        "$6::jsonb, NULLIF($7, ''), $8::bytea WHERE NOT EXISTS (SELECT 1 FROM config_matches "
        "WHERE event_id = $1 AND job_uid = $2) "
        "ON CONFLICT (job_uid, event_id, event_time_ms) DO NOTHING";
    dlb_event_t ev = {.type = DLB_EV_CONFIG_MATCH};
    char t[24], rv[24], *ids = NULL, *values = NULL;
    const char *v[8];
    int lens[8] = {0}, err;
    void *owned = NULL;

    if (!m->event_id[0] || !m->job_uid[0])
        return dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID,
                          "postgresql: a configuration match needs an event id and a job uid");
    ev.u.cm = *m; /* shallow: encoding only reads it */
    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)) ||
        (err = dlb_pg_raw_bytes(pg, &ev, &raw, &raw_len, &owned, errstr, errstr_size)))
        return err;
    if (raw_len > (size_t)INT32_MAX) {
        err = dlb_seterr(errstr, errstr_size, DLB_ERR_INVALID, "postgresql: match too large");
        goto out;
    }
    if ((err = match_json(m, &ids, &values))) {
        dlb_seterr(errstr, errstr_size, err, "out of memory");
        goto out;
    }
    snprintf(t, sizeof(t), "%" PRId64, m->event_time_ms);
    snprintf(rv, sizeof(rv), "%" PRId64, m->rules_version);
    v[0] = m->event_id;
    v[1] = m->job_uid;
    v[2] = t;
    v[3] = rv;
    v[4] = ids;
    v[5] = values;
    v[6] = m->trigger_event_id;
    v[7] = raw;
    lens[7] = (int)raw_len;
    err = dlb_pg_exec(pg, sql, 8, v, lens, DLB_PG_INPUT, NULL, "storing a configuration match",
                      errstr, errstr_size);
out:
    cJSON_free(ids);
    cJSON_free(values);
    free(owned);
    return err;
}

int dlb_cfg_get_match(dlb_pg_t *pg, const char *job_uid, const char *event_id, void **raw,
                      size_t *raw_len, char *errstr, size_t errstr_size)
{
    const char *v[2] = {job_uid, event_id};
    PGresult *res = NULL;
    int err;

    *raw = NULL;
    *raw_len = 0;
    if ((err = dlb_pg_ensure(pg, errstr, errstr_size)) ||
        (err = dlb_pg_exec(
             pg, "SELECT raw FROM config_matches WHERE job_uid = $1 AND event_id = $2", 2, v, NULL,
             DLB_PG_BINARY, &res, "reading a configuration match", errstr, errstr_size)))
        return err;
    err = dlb_pg_first_bytes(res, raw, raw_len, errstr, errstr_size);
    PQclear(res);
    return err;
}
