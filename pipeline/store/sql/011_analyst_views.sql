-- dlbrain schema, version 11: views for analysts (docs/analysts.md).
--
-- Nothing in the pipeline reads them; they name what analysts otherwise
-- rebuild by hand from the event tables, with the evaluator's definitions
-- (docs/evaluator.md): a job's JCT is its first terminal job event
-- (succeeded, failed, stopped) minus its first job event, its pending time
-- its first running event minus its first created or pending event. Each is
-- computed when read, from the rows retention left, so a pruned job's times
-- are NULL while its jobs row stays.

-- One row per job: the merged meta of the jobs registry and its outcome.
CREATE VIEW job_outcomes AS
SELECT j.uid AS job_uid, j.name, j.user_name, j.grp, j.app, j.cluster, j.namespace, j.scenario,
       j.framework, j.state, j.exit_reason, e.first_ms, e.running_ms, e.finished_ms,
       e.final_state, e.finished_ms - e.first_ms AS jct_ms,
       e.running_ms - COALESCE(e.queued_ms, e.first_ms) AS pending_ms
FROM jobs j
LEFT JOIN LATERAL (
    SELECT min(event_time_ms) AS first_ms,
           min(event_time_ms) FILTER (WHERE state IN ('created', 'pending')) AS queued_ms,
           min(event_time_ms) FILTER (WHERE state = 'running') AS running_ms,
           min(event_time_ms) FILTER (WHERE state IN ('succeeded', 'failed', 'stopped'))
               AS finished_ms,
           (array_agg(state ORDER BY event_time_ms, event_id)
                FILTER (WHERE state IN ('succeeded', 'failed', 'stopped')))[1] AS final_state
    FROM job_events ev WHERE ev.job_uid = j.uid) e ON true;

-- One row per OOM kill and plan that answered it (the dlrover set answers an
-- OOM at every request while it is open: one row each); an OOM no plan
-- answered has one row with plan_id NULL.
CREATE VIEW oom_history AS
SELECT n.job_uid, n.pod_name, n.pod_type, n.pod_index, n.node_name, n.event_id AS oom_event_id,
       n.event_time_ms AS oom_ms, n.memory_requested AS memory_before, a.plan_id,
       a.memory AS memory_after, a.event_time_ms AS plan_ms,
       a.event_time_ms - n.event_time_ms AS answered_after_ms, p.optimizer, p.reason
FROM node_events n
LEFT JOIN oom_plans a
    ON a.job_uid = n.job_uid AND a.oom_event_id = n.event_id AND a.pod_name = n.pod_name
LEFT JOIN plans p ON p.job_uid = a.job_uid AND p.plan_id = a.plan_id
WHERE n.kind = 'oom_killed';

-- One row per plan with what followed it until the job's next plan (or its
-- end): OOM kills, the mean speed (steps/s) of its samples against the mean
-- since the plan before, and the job's outcome. Reads runtime_samples
-- through its key (job_uid, event_time_ms, ...): filter on job_uid or
-- plan_ms for a fast answer.
CREATE VIEW plan_outcomes AS
SELECT p.job_uid, p.plan_id, p.trigger_event_id, p.stage, p.optimizer, p.reason,
       p.event_time_ms AS plan_ms, jsonb_array_length(p.actions) AS actions, w.next_plan_ms,
       (SELECT count(*) FROM node_events n
        WHERE n.job_uid = p.job_uid AND n.kind = 'oom_killed'
          AND n.event_time_ms >= p.event_time_ms
          AND (w.next_plan_ms IS NULL OR n.event_time_ms < w.next_plan_ms)) AS ooms_after,
       (SELECT avg(s.speed) FROM runtime_samples s
        WHERE s.job_uid = p.job_uid AND s.event_time_ms < p.event_time_ms
          AND (w.prev_plan_ms IS NULL OR s.event_time_ms >= w.prev_plan_ms)) AS speed_before,
       (SELECT avg(s.speed) FROM runtime_samples s
        WHERE s.job_uid = p.job_uid AND s.event_time_ms >= p.event_time_ms
          AND (w.next_plan_ms IS NULL OR s.event_time_ms < w.next_plan_ms)) AS speed_after,
       o.final_state, o.exit_reason, o.jct_ms
FROM plans p
LEFT JOIN LATERAL (
    SELECT max(q.event_time_ms) FILTER (WHERE q.event_time_ms < p.event_time_ms) AS prev_plan_ms,
           min(q.event_time_ms) FILTER (WHERE q.event_time_ms > p.event_time_ms) AS next_plan_ms
    FROM plans q WHERE q.job_uid = p.job_uid) w ON true
LEFT JOIN job_outcomes o ON o.job_uid = p.job_uid;
