-- dlbrain schema, version 15: each job carries its newest state, exit reason
-- and OOM kill, so a history read need not look them up job by job.
--
-- A plan request that reads history (every create and OOM request, every
-- request of the dlbrain set) asked, for each of up to 100 similar jobs, for
-- its newest state and exit reason before the request and its OOM-killed
-- pods: three index probes a job, about 0.8 ms of PostgreSQL's time a
-- request, half of what the optimizer spent on a request at 1,000 gateway
-- calls a second. With these columns the probes run only where they can
-- change the answer:
--   last_state, last_state_ms, last_state_id    the newest job event with a
--       state, by (event_time_ms, event_id), as the history query orders;
--   last_exit_reason, last_exit_ms, last_exit_id    the same for exit_reason;
--   oom_max_ms    the newest oom_killed node event with a pod name (NULL: none).
-- Where last_state_ms is before the request, the newest state before it is
-- last_state; otherwise (a state the request must not see yet) the query asks
-- the table, as before; no state ever (NULL): ''. The same for the exit
-- reason. A job with no OOM kill has no OOM-killed pods. A deleted job event
-- makes the job's columns read again from the table. As for samples
-- (migration 014), a dropped partition of retention fires no trigger but
-- holds only events older than any job history.hours looks at.

ALTER TABLE jobs ADD COLUMN last_state text,
                 ADD COLUMN last_state_ms bigint,
                 ADD COLUMN last_state_id text COLLATE "C",
                 ADD COLUMN last_exit_reason text,
                 ADD COLUMN last_exit_ms bigint,
                 ADD COLUMN last_exit_id text COLLATE "C",
                 ADD COLUMN oom_max_ms bigint;

-- The newest state and exit reason of each job in uids, from the table.
CREATE FUNCTION jobs_marks_reread(uids text[]) RETURNS void LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE jobs j SET (last_state, last_state_ms, last_state_id) =
        (SELECT s.state, s.event_time_ms, s.event_id FROM
            (SELECT 1) one LEFT JOIN LATERAL
            (SELECT e.state, e.event_time_ms, e.event_id FROM job_events e
             WHERE e.job_uid = j.uid AND e.state IS NOT NULL
             ORDER BY e.event_time_ms DESC, e.event_id DESC LIMIT 1) s ON true),
        (last_exit_reason, last_exit_ms, last_exit_id) =
        (SELECT x.exit_reason, x.event_time_ms, x.event_id FROM
            (SELECT 1) one LEFT JOIN LATERAL
            (SELECT e.exit_reason, e.event_time_ms, e.event_id FROM job_events e
             WHERE e.job_uid = j.uid AND e.exit_reason IS NOT NULL
             ORDER BY e.event_time_ms DESC, e.event_id DESC LIMIT 1) x ON true)
    WHERE j.uid = ANY (uids);
END
$$;

SELECT jobs_marks_reread(ARRAY(SELECT uid FROM jobs));
UPDATE jobs j SET oom_max_ms =
    (SELECT max(n.event_time_ms) FROM node_events n WHERE n.job_uid = j.uid
     AND n.kind = 'oom_killed' AND n.pod_name <> '');

-- One statement per batch of job events, whatever path wrote them; a row
-- that is not newer than the job's mark leaves it.
CREATE FUNCTION job_events_mark_jobs() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE jobs j SET last_state = n.state, last_state_ms = n.event_time_ms,
                      last_state_id = n.event_id
    FROM (SELECT DISTINCT ON (job_uid) job_uid, state, event_time_ms, event_id FROM new_rows
          WHERE state IS NOT NULL ORDER BY job_uid, event_time_ms DESC, event_id DESC) n
    WHERE j.uid = n.job_uid AND (j.last_state_ms IS NULL OR
        (n.event_time_ms, n.event_id) > (j.last_state_ms, j.last_state_id));
    UPDATE jobs j SET last_exit_reason = n.exit_reason, last_exit_ms = n.event_time_ms,
                      last_exit_id = n.event_id
    FROM (SELECT DISTINCT ON (job_uid) job_uid, exit_reason, event_time_ms, event_id FROM new_rows
          WHERE exit_reason IS NOT NULL ORDER BY job_uid, event_time_ms DESC, event_id DESC) n
    WHERE j.uid = n.job_uid AND (j.last_exit_ms IS NULL OR
        (n.event_time_ms, n.event_id) > (j.last_exit_ms, j.last_exit_id));
    RETURN NULL;
END
$$;
CREATE TRIGGER job_events_mark_jobs AFTER INSERT ON job_events
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION job_events_mark_jobs();

CREATE FUNCTION job_events_mark_jobs_deleted() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM jobs_marks_reread(ARRAY(SELECT DISTINCT job_uid FROM old_rows));
    RETURN NULL;
END
$$;
CREATE TRIGGER job_events_mark_jobs_deleted AFTER DELETE ON job_events
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION job_events_mark_jobs_deleted();

CREATE FUNCTION node_events_mark_jobs() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE jobs j SET oom_max_ms = GREATEST(j.oom_max_ms, n.max_ms)
    FROM (SELECT job_uid, max(event_time_ms) AS max_ms FROM new_rows
          WHERE kind = 'oom_killed' AND pod_name <> '' GROUP BY job_uid) n
    WHERE j.uid = n.job_uid;
    RETURN NULL;
END
$$;
CREATE TRIGGER node_events_mark_jobs AFTER INSERT ON node_events
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION node_events_mark_jobs();

-- A job's events may come before its first job event (the row is made by
-- the first one that names the job): its row then starts with what is
-- stored already.
CREATE FUNCTION jobs_marks_init() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    SELECT e.state, e.event_time_ms, e.event_id
        INTO NEW.last_state, NEW.last_state_ms, NEW.last_state_id
        FROM job_events e WHERE e.job_uid = NEW.uid AND e.state IS NOT NULL
        ORDER BY e.event_time_ms DESC, e.event_id DESC LIMIT 1;
    SELECT e.exit_reason, e.event_time_ms, e.event_id
        INTO NEW.last_exit_reason, NEW.last_exit_ms, NEW.last_exit_id
        FROM job_events e WHERE e.job_uid = NEW.uid AND e.exit_reason IS NOT NULL
        ORDER BY e.event_time_ms DESC, e.event_id DESC LIMIT 1;
    NEW.oom_max_ms := (SELECT max(n.event_time_ms) FROM node_events n
        WHERE n.job_uid = NEW.uid AND n.kind = 'oom_killed' AND n.pod_name <> '');
    RETURN NEW;
END
$$;
CREATE TRIGGER jobs_marks_init BEFORE INSERT ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_marks_init();
