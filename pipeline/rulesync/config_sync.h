/* A directory of rule files as a second source of configuration rules: a
 * Kubernetes ConfigMap mounted as a volume (one key per file), synced into
 * PostgreSQL as new versions.
 *
 * The files are the directory's *.yaml and *.yml entries (names not starting
 * with '.', so the kubelet's "..data" machinery is skipped) that are regular
 * files, or links to them, whose real path stays inside the directory; any
 * other entry (a link out of it, a FIFO, socket, device or directory, a
 * dangling link) is skipped with a warning naming it, once per change, and
 * never opened. The files are loaded in name order as one rule set, all or
 * nothing (dlb_rules_load_files_as(): read by their real paths without
 * following a link swapped in since, and without blocking). When their rules differ from the newest
 * version's (canonical JSON without file and line), they are applied as a new version with source
 * "configmap:<dir>". A directory without rule files is refused (a mount not populated yet looks the
 * same). An invalid set changes nothing and is reported once, with the file:line:col the loader
 * names, until the files change again. The kubelet swaps a ConfigMap's files at once (a symlink
 * rename); a sync that sees the directory change while it reads starts over
 * on the next round. */
#ifndef DLB_CONFIG_SYNC_H
#define DLB_CONFIG_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include "store_config.h"
#include "store_pg.h"

typedef struct dlb_cfg_sync {
    const char *dir;
    uint64_t seen;   /* fingerprint of the files last synced or refused */
    int64_t version; /* the version the last sync applied or found equal, 0 if none */
} dlb_cfg_sync_t;

typedef enum {
    DLB_SYNC_UNCHANGED = 0, /* the files did not change since the last round */
    DLB_SYNC_SAME,          /* they changed, their rules equal the newest version's */
    DLB_SYNC_APPLIED,       /* a new version was applied */
    DLB_SYNC_REFUSED,       /* the files are invalid; nothing applied */
} dlb_sync_result_t;

/** @brief One round: look at the directory and sync it when its files changed.
 *  @param s       the sync state (dir set, the rest zero before the first round)
 *  @param pg      a migrated connection
 *  @param result  what the round did
 *  @param applied the version applied (DLB_SYNC_APPLIED) or matched (SAME)
 *  @param errstr  for DLB_SYNC_REFUSED, the loader's error; else the error
 *  @returns 0 (see result), or DLB_ERR_TRANSIENT (PostgreSQL unreachable:
 *           retried next round), DLB_ERR_NOTFOUND (no such directory),
 *           DLB_ERR_NOMEM. */
int dlb_cfg_sync_round(dlb_cfg_sync_t *s, dlb_pg_t *pg, dlb_sync_result_t *result,
                       dlb_cfg_version_t *applied, char *errstr, size_t errstr_size);

#endif
