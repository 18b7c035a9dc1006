/* A client of an external Confluent-compatible schema registry (libcurl):
 * lookup, registration and schemas by id, and binding dlbrain's catalog to
 * the ids the registry assigns (schema.registry.* settings).
 *
 * With schema.registry.url set, a process binds at start-up, before it
 * makes a catalog: every schema version of every typed topic of its
 * environment is looked up under <env>.<topic>-value and registered when
 * missing, in catalog order; the ids so learnt are installed as the wire ids
 * (catalog.h), and an id met later that none of them is is fetched from the
 * registry once. The DLQ gets no subject: it holds any type's records, which
 * no compatibility rule of one subject admits. */
#ifndef DLB_SCHEMAREG_CLIENT_H
#define DLB_SCHEMAREG_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "catalog.h"
#include "conf.h"

typedef struct dlb_srclient dlb_srclient_t;

/** @brief A client of conf->sr (url, basic auth, CA file, timeout). */
int dlb_srclient_new(dlb_srclient_t **out, const dlb_sr_conf_t *conf, char *errstr,
                     size_t errstr_size);

void dlb_srclient_destroy(dlb_srclient_t *c);

/** @brief POST /subjects/{subject}: the id and version of schema there.
 *  @returns 0, DLB_ERR_NOTFOUND (no such subject, or not under it),
 *           DLB_ERR_TRANSIENT (unreachable, 5xx), DLB_ERR_CONF (any other
 *           answer: errstr has the registry's message). */
int dlb_srclient_lookup(dlb_srclient_t *c, const char *subject, const char *schema, int32_t *id,
                        int *version, char *errstr, size_t errstr_size);

/** @brief POST /subjects/{subject}/versions: register schema (the registry
 *         answers the existing id when it holds it already).
 *  @returns 0, DLB_ERR_INVALID (refused as incompatible or invalid: errstr has
 *           the registry's reason), DLB_ERR_TRANSIENT, DLB_ERR_CONF. */
int dlb_srclient_register(dlb_srclient_t *c, const char *subject, const char *schema, int32_t *id,
                          char *errstr, size_t errstr_size);

/** @brief GET /schemas/ids/{id}: the schema text, malloc'ed.
 *  @returns 0, DLB_ERR_NOTFOUND, DLB_ERR_TRANSIENT, DLB_ERR_CONF. */
int dlb_srclient_schema(dlb_srclient_t *c, int32_t id, char **schema, char *errstr,
                        size_t errstr_size);

/** @brief Look up or register every schema of env's typed topics (in catalog
 *         order, version by version) and install the ids the registry gave
 *         as this process's wire ids, with c resolving unknown ids (c must
 *         outlive every catalog made afterwards).
 *  @returns 0, DLB_ERR_INVALID (the registry refuses one: errstr names the
 *           subject, the version and its reason), DLB_ERR_TRANSIENT, or
 *           another error. */
int dlb_srclient_bind(dlb_srclient_t *c, const dlb_catalog_t *cat, const char *env, char *errstr,
                      size_t errstr_size);

/** @brief dlb_srclient_bind() into a table of wire ids of the caller's own
 *         (*out, for dlb_catalog_new_wire()) instead of the process's: what
 *         a library in another's process does (the agent). c must outlive
 *         *out, and *out every catalog made with it.
 *  @returns as dlb_srclient_bind(). */
int dlb_srclient_bind_wire(dlb_srclient_t *c, const dlb_catalog_t *cat, const char *env,
                           dlb_catalog_wire_t **out, char *errstr, size_t errstr_size);

/** @brief What a process does at start-up: nothing when conf->sr.url is
 *         empty (*out NULL); else a client bound for conf->env
 *         (dlb_srclient_bind), which the caller destroys after the last
 *         catalog, and then calls dlb_catalog_wire_reset().
 *  @returns 0, or the error of connecting or binding. */
int dlb_srclient_setup(const dlb_conf_t *conf, dlb_srclient_t **out, char *errstr,
                       size_t errstr_size);

#endif
