/* The read side of the Confluent Schema Registry REST API over dlbrain's
 * schema catalog, so standard Kafka tooling (kcat -s avro, confluent-kafka's
 * AvroDeserializer, Kafka UI, Spark's from_avro) reads dlbrain's topics.
 *
 * Subjects follow TopicNameStrategy: "<env>.<topic>-value" for every topic of
 * every environment served; a subject's versions are the catalog's schemas
 * of its topic's event type in id order (version 1 = the lowest id), and
 * <env>.dlq-value holds every schema (the DLQ keeps copies of any topic's
 * input). Schema ids are the catalog's. Read-only: a write answers 405.
 *
 * dlb_schemareg_answer() is the whole API as a function of method, path and
 * body, without I/O; schemareg_http.c serves it. */
#ifndef DLB_SCHEMAREG_H
#define DLB_SCHEMAREG_H

#include <stddef.h>

#include "catalog.h"
#include "conf.h"

#define DLB_SCHEMAREG_CONTENT_TYPE "application/vnd.schemaregistry.v1+json"
/* Largest request body read (a lookup's schema); dlbrain's are a few KiB. */
#define DLB_SCHEMAREG_BODY_MAX (1024 * 1024)

typedef struct dlb_schemareg dlb_schemareg_t;

/** @brief A registry over cat (which must outlive it), serving no
 *         environment until dlb_schemareg_set_envs(). */
int dlb_schemareg_new(dlb_schemareg_t **out, const dlb_catalog_t *cat, char *errstr,
                      size_t errstr_size);

void dlb_schemareg_destroy(dlb_schemareg_t *r);

/** @brief Serve the subjects of these environments from now on (a copy is
 *         kept; safe while requests are answered on another thread).
 *  @returns 0, DLB_ERR_INVALID (a bad environment name) or DLB_ERR_NOMEM. */
int dlb_schemareg_set_envs(dlb_schemareg_t *r, const char *const *envs, size_t n, char *errstr,
                           size_t errstr_size);

/** @brief Answer one request: method, path (unescaped, without the query),
 *         the request body (may be NULL when body_len is 0).
 *  @param out  the response body, malloc'ed, JSON in the registry's content
 *              type (DLB_SCHEMAREG_CONTENT_TYPE), or the raw schema for the
 *              .../schema routes
 *  @returns the HTTP status, or DLB_ERR_NOMEM (nothing in *out). */
int dlb_schemareg_answer(dlb_schemareg_t *r, const char *method, const char *path, const char *body,
                         size_t body_len, char **out, size_t *out_len);

typedef struct dlb_schemareg_server dlb_schemareg_server_t;

/** @brief Serve r over HTTP on addr:port (port 0 = any free port).
 *  @param bounds  what a client may hold of the server (http.*)
 *  @param bound   the port listened on
 *  @returns 0 or DLB_ERR_CONF (bad address, port in use). */
int dlb_schemareg_serve(dlb_schemareg_t *r, const char *addr, int port,
                        const dlb_http_conf_t *bounds, dlb_schemareg_server_t **out, int *bound,
                        char *errstr, size_t errstr_size);

/** @brief Stop serving (waits for the requests under way); NULL is fine. */
void dlb_schemareg_server_stop(dlb_schemareg_server_t *s);

#endif
