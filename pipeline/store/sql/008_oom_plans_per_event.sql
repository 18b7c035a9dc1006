-- dlbrain schema, version 8: an answer row per (plan, pod, event).
--
-- oom_plans holds, per plan, the events it answered: an OOM (the memory the
-- plan gave the pod) and, with the dlbrain set, a node failure (memory 0: the
-- plan replaced the pod). One plan can answer both for one pod: a pod whose
-- OOM is still open when its node fails gets its memory and its replace from
-- the same plan (the OOM route takes every request while an OOM is open).
-- Keyed by (plan, pod) the second row was lost, so the failure stayed
-- unanswered until a later plan, as long as the pod waited on a dead node.
-- The key gains the event id; rows stored before are unique by (plan, pod),
-- so by (plan, pod, event) too, and a redone batch still writes the same
-- rows (ON CONFLICT DO NOTHING finds the new key).
ALTER TABLE oom_plans DROP CONSTRAINT oom_plans_pkey,
    ADD PRIMARY KEY (plan_id, pod_name, oom_event_id, job_uid);
