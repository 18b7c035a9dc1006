-- dlbrain schema, version 1.
--
-- Runs inside the environment's schema (dlb_pg_migrate sets search_path), so
-- no schema name appears here. Every input-event table is keyed by the
-- producer's event_id (inserts are ON CONFLICT DO NOTHING: a redelivered event
-- changes nothing) and keeps the framed Avro bytes in raw, so a job's state can
-- be rebuilt exactly by decoding and replaying them. Times are epoch ms
-- (bigint), memory is bytes (bigint), CPU is cores (double precision).
-- Event ids and uids use the "C" collation so ORDER BY event_time_ms, event_id
-- is bytewise, the order dlb_job_state_apply() breaks timestamp ties in.

-- One row per job: the merge of its job events (sections never reported stay NULL).
CREATE TABLE jobs (
    uid text COLLATE "C" PRIMARY KEY,
    name text,
    user_name text,
    grp text,
    app text,
    cluster text,
    namespace text,
    scenario text,
    framework text,
    state text,
    exit_reason text,
    batch_size bigint,
    epoch bigint,
    max_steps bigint,
    dataset_name text,
    dataset_size bigint,
    dataset_storage text,
    model_variable_count bigint,
    model_op_count bigint,
    model_total_variable_size bigint,
    model_recv_op_count bigint,
    model_flops bigint,
    model_embedding_dimension bigint,
    created_ms bigint NOT NULL,      -- event time of the job's first job event
    updated_ms bigint NOT NULL,      -- event time of its newest job event
    last_event_id text COLLATE "C" NOT NULL
);
-- History query: same scenario, created in a time window, newest first.
CREATE INDEX jobs_scenario_created_idx ON jobs (scenario, created_ms DESC);

CREATE TABLE job_events (
    event_id text COLLATE "C" PRIMARY KEY,
    job_uid text COLLATE "C" NOT NULL,
    event_time_ms bigint NOT NULL,
    state text,
    exit_reason text,
    raw bytea NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_events_job_time_idx ON job_events (job_uid, event_time_ms, event_id);

CREATE TABLE runtime_samples (
    event_id text COLLATE "C" PRIMARY KEY,
    job_uid text COLLATE "C" NOT NULL,
    event_time_ms bigint NOT NULL,
    global_step bigint NOT NULL,
    speed double precision NOT NULL,
    raw bytea NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
-- A job's newest samples (window rebuild, history).
CREATE INDEX runtime_samples_job_time_idx ON runtime_samples (job_uid, event_time_ms, event_id);

-- The pods of each sample, normalised for analysts (the optimizers read raw).
CREATE TABLE runtime_pods (
    event_id text COLLATE "C" NOT NULL REFERENCES runtime_samples (event_id) ON DELETE CASCADE,
    pod_name text COLLATE "C" NOT NULL,
    pod_type text NOT NULL,
    pod_index integer NOT NULL,
    cpu_used double precision NOT NULL,
    cpu_requested double precision NOT NULL,
    memory_used bigint NOT NULL,
    memory_requested bigint NOT NULL,
    PRIMARY KEY (event_id, pod_name)
);

CREATE TABLE node_events (
    event_id text COLLATE "C" PRIMARY KEY,
    job_uid text COLLATE "C" NOT NULL,
    event_time_ms bigint NOT NULL,
    kind text NOT NULL,
    pod_name text COLLATE "C" NOT NULL,
    pod_type text NOT NULL,
    pod_index integer NOT NULL,
    node_name text NOT NULL,
    phase text,
    reason text NOT NULL,
    message text NOT NULL,
    memory_requested bigint,
    cpu_requested double precision,
    raw bytea NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX node_events_job_time_idx ON node_events (job_uid, event_time_ms, event_id);
-- OOM-killed pods of history jobs.
CREATE INDEX node_events_oom_idx ON node_events (job_uid, pod_name) WHERE kind = 'oom_killed';

CREATE TABLE plan_requests (
    event_id text COLLATE "C" PRIMARY KEY,
    job_uid text COLLATE "C" NOT NULL,
    event_time_ms bigint NOT NULL,
    stage text NOT NULL,
    oom_pod text,
    raw bytea NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX plan_requests_job_time_idx ON plan_requests (job_uid, event_time_ms);

-- Plans are deterministic from their trigger: one plan per trigger event.
CREATE TABLE plans (
    plan_id text COLLATE "C" PRIMARY KEY,
    job_uid text COLLATE "C" NOT NULL,
    trigger_event_id text COLLATE "C" UNIQUE,
    stage text NOT NULL,
    optimizer text NOT NULL,
    reason text NOT NULL,
    event_time_ms bigint NOT NULL,
    groups jsonb NOT NULL,
    pods jsonb NOT NULL,
    raw bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX plans_job_time_idx ON plans (job_uid, event_time_ms);
