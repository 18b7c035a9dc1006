/* dlbrain gateway: DLRover's brain.Brain gRPC service (schemas/dlrover/
 * brain.proto) in front of the pipeline, so DLRover's masters use dlbrain
 * unchanged: persist_metrics becomes events on the environment's topics,
 * optimize a plan request whose plan is awaited on <env>.plans, and
 * get_job_metrics reads the job's history from PostgreSQL. Stateless: any
 * number run behind one address, each answering the calls it got. */
#ifndef DLB_GATEWAY_H
#define DLB_GATEWAY_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"

typedef struct dlb_gateway_stats {
    int64_t calls;     /* calls read */
    int64_t events;    /* events acknowledged by Kafka */
    int64_t plans;     /* optimize calls answered with a plan */
    int64_t no_plan;   /* optimize calls answered success=false (no plan in time) */
    int64_t refused;   /* calls refused as bad input */
    int64_t failed;    /* calls failed on a dependency (Kafka, PostgreSQL) */
    int64_t cancelled; /* calls the client gave up before the answer */
    int64_t stalled;   /* calls cancelled for stalling on their client */
} dlb_gateway_stats_t;

/** @brief Serve until *stop. The port is bound before the function logs
 *         "serving", so a master started afterwards finds it ready.
 *  @returns 0 when stopped, or an error (errstr says which) when the service
 *           could not start: the address cannot be bound, Kafka's metadata
 *           never came, a setting is out of range. */
int dlb_gateway_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop, dlb_gateway_stats_t *stats,
                    char *errstr, size_t errstr_size);

#endif
