/* dlbrain registry: the read-only Confluent Schema Registry API over the
 * schema catalog (pipeline/schemareg) for the environments of registry.envs,
 * or for env and every live environment of the environment registry,
 * re-read every registry.refresh.ms. */
#ifndef DLB_ENV_SCHEMAREG_H
#define DLB_ENV_SCHEMAREG_H

#include <signal.h>
#include <stddef.h>

#include "conf.h"

/** @brief Serve at registry.address until *stop.
 *  @param envs_served  how many environments were served last
 *  @returns 0 when stopped, DLB_ERR_CONF (bad address or environment name,
 *           port in use), DLB_ERR_NOMEM. */
int dlb_env_schemareg_run(const dlb_conf_t *conf, volatile sig_atomic_t *stop, size_t *envs_served,
                          char *errstr, size_t errstr_size);

#endif
