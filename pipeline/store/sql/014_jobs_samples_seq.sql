-- dlbrain schema, version 14: each job says when its samples last changed.
--
-- Every create-stage plan request reads the newest samples of up to 100
-- similar jobs (history.max.jobs), and most of them finished long ago: their
-- samples never change again, yet each request asked for their keys anew,
-- 70% of PostgreSQL's time at 200 simulated jobs (pg_stat_statements). With
-- these two columns a consumer keeps a job's sample keys and asks again only
-- when they may have changed:
--   samples_seq     counts the statements that added samples of the job;
--   samples_max_ms  is the newest sample's event time (NULL: none).
-- A key list read while samples_seq was N holds, for any request later than
-- samples_max_ms, exactly what the query would return as long as samples_seq
-- is still N. A DELETE moves samples_seq too (samples_max_ms may then be
-- later than the newest left: that only stops keys being kept). A dropped
-- partition of retention fires no trigger, but holds only samples older
-- than any job history.hours looks at (the settings check refuses a
-- shorter store.retention.days).

ALTER TABLE jobs ADD COLUMN samples_seq bigint NOT NULL DEFAULT 0,
                 ADD COLUMN samples_max_ms bigint;

UPDATE jobs j SET samples_max_ms =
    (SELECT max(r.event_time_ms) FROM runtime_samples r WHERE r.job_uid = j.uid);

-- One statement per batch of samples (COPY, or the row inserts), whatever
-- path wrote them; rows ON CONFLICT skipped are not in new_rows.
CREATE FUNCTION runtime_samples_mark_jobs() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE jobs j SET samples_seq = j.samples_seq + 1,
                      samples_max_ms = GREATEST(j.samples_max_ms, n.max_ms)
    FROM (SELECT job_uid, max(event_time_ms) AS max_ms FROM new_rows GROUP BY job_uid) n
    WHERE j.uid = n.job_uid;
    RETURN NULL;
END
$$;
CREATE TRIGGER runtime_samples_mark_jobs AFTER INSERT ON runtime_samples
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION runtime_samples_mark_jobs();

CREATE FUNCTION runtime_samples_mark_jobs_deleted() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE jobs j SET samples_seq = j.samples_seq + 1
    FROM (SELECT DISTINCT job_uid FROM old_rows) o WHERE j.uid = o.job_uid;
    RETURN NULL;
END
$$;
CREATE TRIGGER runtime_samples_mark_jobs_deleted AFTER DELETE ON runtime_samples
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION runtime_samples_mark_jobs_deleted();

-- A job's samples may come before its first job event: its row then starts
-- with what is stored already (on an upsert that updates, the proposed
-- values are not used).
CREATE FUNCTION jobs_samples_init() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    NEW.samples_seq := 0;
    NEW.samples_max_ms :=
        (SELECT max(r.event_time_ms) FROM runtime_samples r WHERE r.job_uid = NEW.uid);
    RETURN NEW;
END
$$;
CREATE TRIGGER jobs_samples_init BEFORE INSERT ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_samples_init();
