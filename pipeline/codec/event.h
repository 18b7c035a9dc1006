/* The events of the pipeline as plain C structs.
 *
 * These mirror the schemas/ .avsc files one to one. Decoders fill them, optimizers read
 * them, encoders write them; nothing else in dlbrain touches Avro values.
 * Identifiers are fixed-size and NUL-terminated (a longer value is rejected as
 * invalid, never truncated); texts that can be long (JSON, comma-joined lists)
 * are heap strings (char *, NULL reads as ""), and variable-length lists heap
 * arrays, all released by dlb_event_clear(). Every heap part has a bound below
 * (DLB_*_MAX), checked by the decoder before it allocates and by
 * dlb_event_validate(). Memory is int64_t bytes, CPU is double cores. */
#ifndef DLB_EVENT_H
#define DLB_EVENT_H

#include <stddef.h>
#include <stdint.h>

#define DLB_ID_MAX     128  /* event ids, job uids, pod names, node names */
#define DLB_NAME_MAX   256  /* job meta strings, reasons of node events */
#define DLB_REASON_MAX 1024 /* plan reasons, node event messages */

/* Bounds of the heap parts, so that no message makes the codec allocate
 * without bound. A text is at most DLB_TEXT_MAX bytes: DLRover's JSON texts
 * (resource, customized_data, optimization) and comma-joined feature lists. */
#define DLB_TEXT_MAX     (256 * 1024)
#define DLB_KEY_MAX      1024  /* bytes of a map key (a tensor name) */
#define DLB_LIST_MAX     65536 /* model.kv_embedding_dims items, model.tensor_alloc_bytes entries */
#define DLB_OOM_PODS_MAX 1024  /* plan_request.oom_pods items */
#define DLB_CONFIG_MAX   256   /* plan_request.config entries */
/* Items of the lists of records: checked in the encoded bytes before anything
 * is allocated for them, so a count cannot ask for memory (a 1 MB plan of
 * empty actions was 330k items, 231 MiB). Beyond what any cluster has. */
#define DLB_PODS_MAX    16384 /* runtime_sample.pods, plan.pods */
#define DLB_GROUPS_MAX  64    /* plan.groups */
#define DLB_ACTIONS_MAX 16384 /* plan.actions */

typedef enum dlb_event_type {
    DLB_EV_NONE = 0,
    DLB_EV_JOB = 1,            /* job_event */
    DLB_EV_RUNTIME = 2,        /* runtime_sample */
    DLB_EV_NODE = 3,           /* node_event */
    DLB_EV_PLAN_REQUEST = 4,   /* plan_request */
    DLB_EV_PLAN = 5,           /* plan */
    DLB_EV_CONFIG_MATCH = 6,   /* config_match */
    DLB_EV_CONFIG_REQUEST = 7, /* config_request */
    DLB_EV__CNT
} dlb_event_type_t;

/** @returns "job_event", "runtime_sample", ... (the catalog's type names). */
const char *dlb_event_type_name(dlb_event_type_t type);
/** @returns the type for a catalog type name, or DLB_EV_NONE. */
dlb_event_type_t dlb_event_type_parse(const char *name);
/** @returns the topic short name (DLB_TOPIC_*) events of this type go to. */
const char *dlb_event_type_topic(dlb_event_type_t type);

/* ---- job_event ---------------------------------------------------------- */
typedef struct dlb_job_meta {
    char name[DLB_NAME_MAX];
    char user[DLB_NAME_MAX];
    char group[DLB_NAME_MAX];
    char app[DLB_NAME_MAX];
    char cluster[DLB_NAME_MAX];
    char ns[DLB_NAME_MAX]; /* "namespace" in the schema */
    char scenario[DLB_NAME_MAX];
    char framework[DLB_NAME_MAX];
} dlb_job_meta_t;

/* The job attributes configuration rules select on, in one order: their
 * names in rules (and the namespace field's, "ns" here) and where each
 * lives in dlb_job_meta_t. */
#define DLB_META_ATTRS 8
/* "user" "group" "app" "cluster" "namespace" "scenario" "framework" "name", NULL */
extern const char *const dlb_meta_attr_names[DLB_META_ATTRS + 1];
/** @returns attribute i (< DLB_META_ATTRS) of meta: a DLB_NAME_MAX buffer. */
char *dlb_meta_attr(dlb_job_meta_t *meta, size_t i);
const char *dlb_meta_attr_c(const dlb_job_meta_t *meta, size_t i);

typedef struct dlb_hyper_params {
    int64_t batch_size;
    int64_t epoch;
    int64_t max_steps;
} dlb_hyper_params_t;

/* A map<string, long> entry (model.tensor_alloc_bytes) and a
 * map<string, string> entry (plan_request.config): heap key and value. */
typedef struct dlb_long_entry {
    char *key;
    int64_t value;
} dlb_long_entry_t;

typedef struct dlb_str_entry {
    char *key;
    char *value;
} dlb_str_entry_t;

typedef struct dlb_dataset {
    char name[DLB_NAME_MAX];
    int64_t size; /* samples */
    char storage[DLB_NAME_MAX];
    /* job_event v2: the rest of DLRover's TrainingSetFeature. The feature
     * lists are comma-joined names as DLRover sends them (heap texts). */
    int64_t sparse_item_count;
    char *sparse_features;
    char *sparse_feature_groups;
    char *sparse_feature_shapes;
    char *dense_features;
    char *dense_feature_shapes;
    int64_t storage_size; /* bytes */
} dlb_dataset_t;

typedef struct dlb_model {
    int64_t variable_count;
    int64_t op_count;
    int64_t total_variable_size; /* bytes */
    int64_t recv_op_count;
    int64_t flops;
    int64_t embedding_dimension;
    /* job_event v2: the rest of DLRover's ModelFeature, carried as sent. */
    int64_t max_variable_size; /* bytes */
    int64_t update_op_count;
    int64_t read_op_count;
    int64_t input_fetch_dur;
    int64_t *kv_embedding_dims;
    size_t kv_embedding_dims_cnt;
    dlb_long_entry_t *tensor_alloc_bytes; /* tensor name -> bytes */
    size_t tensor_alloc_bytes_cnt;
} dlb_model_t;

/* job_event v2: DLRover's WorkflowFeature. */
typedef struct dlb_workflow {
    char job_name[DLB_NAME_MAX];
    char user_id[DLB_NAME_MAX];
    char *code_address; /* a repository address: a heap text */
    char workflow_id[DLB_NAME_MAX];
    char node_id[DLB_NAME_MAX];
    char odps_project[DLB_NAME_MAX];
    int is_prod;
} dlb_workflow_t;

/* Sections are optional (a union with null in Avro): has_* says whether this
 * event carried it. A merged job state sets has_* for every section ever seen. */
typedef struct dlb_job_event {
    char event_id[DLB_ID_MAX];
    int64_t event_time_ms;
    char job_uid[DLB_ID_MAX];
    int has_meta;
    dlb_job_meta_t meta;
    int has_state;
    char state[32]; /* created pending running succeeded failed stopped */
    int has_hyper_params;
    dlb_hyper_params_t hyper_params;
    int has_dataset;
    dlb_dataset_t dataset;
    int has_model;
    dlb_model_t model;
    int has_exit_reason;
    char exit_reason[32];
    /* job_event v2: the rest of DLRover's JobMetrics. resource, customized_data
     * and optimization are JSON texts as DLRover sends them (not parsed). */
    int has_workflow;
    dlb_workflow_t workflow;
    int has_job_type;
    char job_type[DLB_NAME_MAX]; /* distribution strategy, e.g. "ParameterServerStrategy" */
    int has_resource;
    char *resource;
    int has_customized_data;
    char *customized_data;
    int has_optimization;
    char *optimization; /* a JobOptimization */
} dlb_job_event_t;

/** @brief Release the heap parts of a job event and zero it. */
void dlb_job_event_clear(dlb_job_event_t *job);

/** @brief Deep copy of a job event. @returns 0 or DLB_ERR_NOMEM (dst zeroed). */
int dlb_job_event_copy(dlb_job_event_t *dst, const dlb_job_event_t *src);

/* ---- runtime_sample ----------------------------------------------------- */
typedef struct dlb_pod_usage {
    char name[DLB_ID_MAX];
    char type[16]; /* ps worker chief evaluator */
    int32_t index;
    double cpu_used;          /* cores */
    double cpu_requested;     /* cores */
    int64_t memory_used;      /* bytes */
    int64_t memory_requested; /* bytes */
    int has_speed;            /* runtime_sample v2: the pod reported its own speed */
    double speed;             /* steps/s of this worker alone; stragglers show here */
    /* runtime_sample v3: the rest of DLRover's PodMeta, "" when not reported.
     * Fixed-size: an IP, a host name, a Kubernetes namespace (63 bytes). */
    char pod_ip[48];
    char node_ip[48];
    char host_name[DLB_ID_MAX];
    char ns[64]; /* "namespace" in the schema */
    int is_mixed;
} dlb_pod_usage_t;

typedef struct dlb_runtime_sample {
    char event_id[DLB_ID_MAX];
    int64_t event_time_ms;
    char job_uid[DLB_ID_MAX];
    int64_t global_step;
    double speed; /* steps/s */
    dlb_pod_usage_t *pods;
    size_t pods_cnt;
    /* Not on the wire: positions of pods sorted by name, then position, which
     * a job state's window builds (dlb_job_state_apply) so that looking a pod
     * up by name is a binary search, not a scan of up to 16,384 pods; NULL
     * elsewhere. Freed with pods. */
    uint32_t *pods_by_name;
} dlb_runtime_sample_t;

/* ---- node_event --------------------------------------------------------- */
typedef struct dlb_node_event {
    char event_id[DLB_ID_MAX];
    int64_t event_time_ms;
    char job_uid[DLB_ID_MAX];
    char kind[32]; /* pod_phase node_phase oom_killed evicted node_not_ready preempted deleted
                      error hardware_error no_heartbeat */
    char pod_name[DLB_ID_MAX];
    char pod_type[16];
    int32_t pod_index;
    char node_name[DLB_ID_MAX];
    int has_phase;
    char phase[32];
    char reason[DLB_NAME_MAX];
    char message[DLB_REASON_MAX];
    int has_memory_requested;
    int64_t memory_requested; /* bytes */
    int has_cpu_requested;
    double cpu_requested; /* cores */
} dlb_node_event_t;

/* ---- plan_request ------------------------------------------------------- */
typedef struct dlb_plan_request {
    char event_id[DLB_ID_MAX];
    int64_t event_time_ms;
    char job_uid[DLB_ID_MAX];
    char stage[64];
    int has_oom_pod;
    char oom_pod[DLB_ID_MAX]; /* with oom_pods: the first of them, for v1 readers */
    /* plan_request v2: every OOM pod of the request (heap strings, each at
     * most DLB_ID_MAX - 1 bytes), and DLRover's OptimizeConfig.customized_config
     * (keys and values at most DLB_KEY_MAX bytes). */
    char **oom_pods;
    size_t oom_pods_cnt;
    dlb_str_entry_t *config;
    size_t config_cnt;
} dlb_plan_request_t;

/* The key of plan_request.config that holds DLRover's worker phase:
 * "initial" or "sample" (with job_stage_worker_initial), "stable" (with
 * job_stage_worker_running). */
#define DLB_CONFIG_WORKER_PHASE "optimizer.worker.optimize-phase"

/** @returns the value of key in the request's config, or NULL. */
const char *dlb_plan_request_config(const dlb_plan_request_t *req, const char *key);

/* ---- plan --------------------------------------------------------------- */
/* 0 in any field means "keep the current value". */
typedef struct dlb_resource {
    double cpu;     /* cores */
    int64_t memory; /* bytes */
    int32_t gpu;
    char gpu_type[64];
    char priority[32];
} dlb_resource_t;

typedef struct dlb_group_resource {
    char group[16]; /* ps worker chief evaluator */
    int32_t count;  /* 0 = keep the current count */
    dlb_resource_t resource;
} dlb_group_resource_t;

typedef struct dlb_pod_resource {
    char name[DLB_ID_MAX];
    dlb_resource_t resource;
} dlb_pod_resource_t;

/* An action on one pod, beside any resource change (plan v2): "relaunch"
 * restarts the pod where it is (a hang), "replace" starts it on another node
 * and removes the old one (a straggler). */
#define DLB_ACTION_RELAUNCH "relaunch"
#define DLB_ACTION_REPLACE  "replace"

typedef struct dlb_pod_action {
    char pod[DLB_ID_MAX];
    char action[16];
    char reason[DLB_NAME_MAX];
} dlb_pod_action_t;

typedef struct dlb_plan {
    char event_id[DLB_ID_MAX]; /* = plan_id */
    int64_t event_time_ms;     /* = the trigger's event time */
    char plan_id[DLB_ID_MAX];
    char job_uid[DLB_ID_MAX];
    char stage[64];
    dlb_group_resource_t *groups;
    size_t groups_cnt;
    dlb_pod_resource_t *pods;
    size_t pods_cnt;
    dlb_pod_action_t *actions; /* plan v2; none in v1 plans */
    size_t actions_cnt;
    char optimizer[64];
    char reason[DLB_REASON_MAX];
    char trigger_event_id[DLB_ID_MAX];
} dlb_plan_t;

/* ---- config_match ------------------------------------------------------- */
typedef struct dlb_config_value {
    char *key;
    char *json; /* the value as JSON text */
} dlb_config_value_t;

typedef struct dlb_config_match {
    char event_id[DLB_ID_MAX];
    int64_t event_time_ms;
    char job_uid[DLB_ID_MAX];
    int64_t rules_version;
    char **rule_ids;
    size_t rule_ids_cnt;
    dlb_config_value_t *values;
    size_t values_cnt;
    char trigger_event_id[DLB_ID_MAX];
} dlb_config_match_t;

/* ---- config_request ----------------------------------------------------- */
/* A job asks for its configuration; has_meta when the asker sent attributes
 * (an empty one is taken from the job's own job events). */
typedef struct dlb_config_request {
    char event_id[DLB_ID_MAX];
    int64_t event_time_ms;
    char job_uid[DLB_ID_MAX];
    int has_meta;
    dlb_job_meta_t meta;
} dlb_config_request_t;

/* ---- the tagged union every codec function takes ------------------------ */
typedef struct dlb_event {
    dlb_event_type_t type;
    union {
        dlb_job_event_t job;
        dlb_runtime_sample_t rt;
        dlb_node_event_t node;
        dlb_plan_request_t req;
        dlb_plan_t plan;
        dlb_config_match_t cm;
        dlb_config_request_t creq;
    } u;
} dlb_event_t;

/** @brief Common header fields of any event. */
const char *dlb_event_id(const dlb_event_t *ev);
const char *dlb_event_job_uid(const dlb_event_t *ev);
int64_t dlb_event_time_ms(const dlb_event_t *ev);

/** @brief Release heap arrays and zero the event. Safe on a zeroed event. */
/** @brief Heap bytes a decoded event holds beyond its struct and the texts
 *         its record's bytes bound (lists of fixed-size items, which a few
 *         bytes of Avro each can make large), for a memory budget. */
size_t dlb_event_heap_bytes(const dlb_event_t *ev);
void dlb_event_clear(dlb_event_t *ev);

/** @brief Semantic checks after decoding: non-empty ids, known stage / state /
 *         kind / pod type / exit reason, finite non-negative CPU and speed,
 *         non-negative memory and times.
 *  @returns 0 or DLB_ERR_INVALID with errstr naming the field, e.g.
 *           "pods[2].memory_used: negative (-5)". */
int dlb_event_validate(const dlb_event_t *ev, char *errstr, size_t errstr_size);

/** @brief Deep copy (heap arrays duplicated). @returns 0 or DLB_ERR_NOMEM. */
int dlb_event_copy(dlb_event_t *dst, const dlb_event_t *src);

/** @returns 1 if a and b hold the same event: every field, string tails and
 *           padding included (decoders start from zeroed structs), doubles by
 *           their bits, a NULL heap string equal to "". */
int dlb_event_equal(const dlb_event_t *a, const dlb_event_t *b);

/* Known values, NULL-terminated, used by validation and documented in docs/events.md. */
extern const char *const dlb_stages[];
extern const char *const dlb_job_states[];
extern const char *const dlb_exit_reasons[];
extern const char *const dlb_node_kinds[];
extern const char *const dlb_pod_types[];
/** @returns 1 if s is in the NULL-terminated list. */
int dlb_in_list(const char *const *list, const char *s);

/* Stage names (DLRover's request types). */
#define DLB_STAGE_CREATE         "job_stage_create"
#define DLB_STAGE_PS_INITIAL     "job_stage_ps_initial"
#define DLB_STAGE_WORKER_INITIAL "job_stage_worker_initial"
#define DLB_STAGE_RUNNING        "job_stage_running"
#define DLB_STAGE_PS_RUNNING     "job_stage_ps_running"
#define DLB_STAGE_WORKER_RUNNING "job_stage_worker_running"

/** @brief Deterministic plan id of a request: "plan-" + the request's event
 *         id, shortened with a hash when that does not fit (dlb_id_derive()):
 *         the optimizer names its plan so, and the gateways find it by it. */
void dlb_plan_id(const dlb_plan_request_t *req, char *buf, size_t size);

#endif
