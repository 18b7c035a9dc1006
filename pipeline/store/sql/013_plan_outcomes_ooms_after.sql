-- dlbrain schema, version 13: plan_outcomes.ooms_after counts the OOM kills
-- that came while the plan was in effect.
--
-- Migrations 011 and 012 counted a job's OOM kills from the plan's time
-- (inclusive) to the next plan's (exclusive). A master asks for an OOM plan
-- at the kill's time (the simulator does, to the millisecond), so each OOM
-- plan counted the very OOM it answered, and the plan in effect when the
-- kill came, the one that gave the pod too little, counted nothing: in "which
-- optimizers' plans are followed by OOMs" the OOM fixer came out worst.
--
-- A plan can act only after it is made, so a kill at the plan's time came
-- under the plan before: the window is now after the plan's time up to and
-- with the next plan's, (plan_ms, next_plan_ms]. A kill the plan answered is
-- never counted for it, even when the kill is stamped after the plan by
-- another clock (the optimizer saw it, so it came before the plan acted).
-- Only this column changes; the speed windows stay as they were.

CREATE OR REPLACE VIEW plan_outcomes AS
SELECT p.job_uid, p.plan_id, p.trigger_event_id, p.stage, p.optimizer, p.reason,
       p.event_time_ms AS plan_ms, jsonb_array_length(p.actions) AS actions, w.next_plan_ms,
       (SELECT count(*) FROM node_events n
        WHERE n.job_uid = p.job_uid AND n.kind = 'oom_killed'
          AND n.event_time_ms > p.event_time_ms
          AND (w.next_plan_ms IS NULL OR n.event_time_ms <= w.next_plan_ms)
          AND NOT EXISTS (SELECT 1 FROM oom_plans a
                          WHERE a.job_uid = p.job_uid AND a.plan_id = p.plan_id
                            AND a.oom_event_id = n.event_id)) AS ooms_after,
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
