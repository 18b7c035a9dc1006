/* Node-shape files of the job simulator (--cluster-nodes FILE): how many
 * nodes of which shape the virtual cluster has.
 *
 * CSV, '#' lines are comments (a file names its source there). The first
 * other line is the header, naming the columns in any order:
 *   count,cpu_cores,memory_gib[,gpus][,gpu_type][,label]
 * count, cpu_cores (allocatable cores) and memory_gib (allocatable GiB) are
 * required; gpus and gpu_type are read and checked but not scheduled (the
 * simulated pods request no GPUs); label names the nodes, "<label>-NNNN"
 * (default "node"; lowercase letters, digits, '-' and '.', as Kubernetes
 * node names), NNNN counting every node of the file from 0. */
#ifndef DLB_SIM_NODE_FILE_H
#define DLB_SIM_NODE_FILE_H

#include <stddef.h>

#include "sim_cluster.h"

/* At most this many nodes in one file. */
#define DLB_SIM_MAX_NODES 100000

/** @brief Read a node-shape file into one node per machine (nothing bound).
 *  @param nodes  set to a malloc'd array of *n nodes (free() it)
 *  @returns 0, DLB_ERR_NOTFOUND, DLB_ERR_INVALID (errstr names path:line
 *           and what is wrong), DLB_ERR_NOMEM. */
int dlb_sim_node_file_load(const char *path, dlb_sim_node_t **nodes, size_t *n, char *errstr,
                           size_t errstr_size);

/** @brief The simulator's default cluster: data/pai/nodes.csv, compiled
 *         into the binary (a 64-node sample of Alibaba PAI's machines).
 *  @returns as dlb_sim_node_file_load(). */
int dlb_sim_nodes_default(dlb_sim_node_t **nodes, size_t *n, char *errstr, size_t errstr_size);

#endif
