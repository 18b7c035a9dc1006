-- dlbrain schema, version 2: per-pod speed, plan actions, answered OOMs.
--
-- Schema ids 7 (runtime_sample v2) and 8 (plan v2). Rows written before this
-- migration keep their values: a pod without a reported speed is NULL, a plan
-- without actions holds '[]', as the v2 readers see v1 messages.

-- Steps/s of one worker alone (runtime_sample v2 pods[].speed); NULL when the
-- pod did not report one. Analysts find stragglers here; the optimizers read raw.
ALTER TABLE runtime_pods ADD COLUMN speed double precision;

-- Per-pod actions of a plan (plan v2), [{"pod", "action", "reason"}].
ALTER TABLE plans ADD COLUMN actions jsonb NOT NULL DEFAULT '[]';

-- OOMs an earlier plan of the job already answered, so the same OOM never gets
-- a second memory bump: one row per (plan, pod), written in the transaction
-- that writes the plan. Loaded as of a request's event time.
CREATE TABLE oom_plans (
    job_uid text COLLATE "C" NOT NULL,
    pod_name text COLLATE "C" NOT NULL,
    oom_event_id text COLLATE "C" NOT NULL,
    plan_id text COLLATE "C" NOT NULL,
    memory bigint NOT NULL,        -- bytes the plan gave the pod
    event_time_ms bigint NOT NULL, -- the plan's event time (its request's)
    PRIMARY KEY (plan_id, pod_name)
);
CREATE INDEX oom_plans_job_time_idx ON oom_plans (job_uid, event_time_ms);
