-- dlbrain schema, version 6: event ids are unique per job, not across jobs.
--
-- Every history table was keyed by its producer-assigned id alone and written
-- with ON CONFLICT DO NOTHING, so a producer that knew or guessed another job's
-- event id could store it first: the real event was then dropped as a repeat,
-- and its plan or configuration match (whose ids derive from the trigger's id)
-- answered with the other job's (issue 18, finding 7). The key of each table
-- is now the id within its job: the same id in two jobs is two rows, the same
-- id in one job still one, so a redelivery stores nothing, as before.
--
-- The key columns are listed id first so that a look-up by id alone (analysts'
-- queries, the runtime_pods view) still uses the key's index; a job's rows are
-- read through the (job_uid, event_time_ms, ...) indexes. ON CONFLICT
-- (job_uid, event_id) finds these keys whatever their column order.
--
-- Rows stored before are unique by id, so by (id, job) too: the new keys
-- always build; each holds its table's lock while its index builds, so an
-- upgrade of a large history pauses the writers for that long. Nothing
-- references these tables, so when they become time-partitioned, whose unique
-- keys must hold the partition column, the keys only gain event_time_ms (a
-- redelivery carries the same time).
ALTER TABLE job_events DROP CONSTRAINT job_events_pkey,
    ADD PRIMARY KEY (event_id, job_uid);
ALTER TABLE runtime_samples DROP CONSTRAINT runtime_samples_pkey,
    ADD PRIMARY KEY (event_id, job_uid);
ALTER TABLE node_events DROP CONSTRAINT node_events_pkey,
    ADD PRIMARY KEY (event_id, job_uid);
ALTER TABLE plan_requests DROP CONSTRAINT plan_requests_pkey,
    ADD PRIMARY KEY (event_id, job_uid);
-- A plan id is "plan-" + its request's id (dlb_plan_id()): per job as well,
-- and so is the one plan a trigger gets.
ALTER TABLE plans DROP CONSTRAINT plans_pkey, DROP CONSTRAINT plans_trigger_event_id_key,
    ADD PRIMARY KEY (plan_id, job_uid), ADD UNIQUE (trigger_event_id, job_uid);
ALTER TABLE oom_plans DROP CONSTRAINT oom_plans_pkey,
    ADD PRIMARY KEY (plan_id, pod_name, job_uid);
-- A match's id is "cfg-" + its trigger's id (configurer.c match_id()).
ALTER TABLE config_matches DROP CONSTRAINT config_matches_pkey,
    ADD PRIMARY KEY (event_id, job_uid);

-- A pod row names its sample by (event_id, job_uid) now: job_uid joins the
-- view, last, as CREATE OR REPLACE VIEW requires of a new column.
CREATE OR REPLACE VIEW runtime_pods AS
SELECT s.event_id, p.pod_name, p.pod_type, p.pod_index, p.cpu_used, p.cpu_requested,
       p.memory_used, p.memory_requested, p.speed, s.job_uid
FROM runtime_samples s
CROSS JOIN LATERAL unnest(s.pod_names, s.pod_types, s.pod_indexes, s.pod_cpu_used,
                          s.pod_cpu_requested, s.pod_memory_used, s.pod_memory_requested,
                          s.pod_speeds)
    AS p(pod_name, pod_type, pod_index, cpu_used, cpu_requested, memory_used,
         memory_requested, speed);
