-- dlbrain schema, version 12: the history partitioned by event time.
--
-- The seven history tables (job_events, runtime_samples, node_events,
-- plan_requests, plans, oom_plans, config_matches) become RANGE partitioned
-- on event_time_ms, so retention drops whole partitions instead of deleting
-- rows (docs/operations.md, "PostgreSQL history retention"). Each has a
-- DEFAULT partition, <table>_default, so a row whose time no partition covers
-- (a replay of a far past, a clock years off) is stored, never refused. The
-- partitions' span is a setting (store.partition.span.hours), which SQL
-- cannot see: the functions below take it as an argument, and the consumers'
-- maintenance (store_partition.c) creates the partitions ahead of now with
-- it. This migration gives the rows already stored one partition per UTC day
-- (the default span), so no upgrade leaves them in the default partition.
--
-- Keys. PostgreSQL requires every unique key of a partitioned table to hold
-- the partition column, so each key gains event_time_ms (migration 006
-- foresaw it; runtime_samples' key, migration 010, holds it already). A
-- redelivered event carries its time, so it still meets its row and stores
-- nothing. What the code relied on beyond that stays: the writers of
-- job_events, node_events and plan_requests also skip an id their job has at
-- any time (store_pg.c), and plans and config_matches are looked up by
-- (job, id) before one is made (dlb_pg_get_plan, dlb_cfg_get_match), so a
-- producer reusing an id with another time still gets one row and one answer.
--
-- Indexes. The keys and the (job_uid, event_time_ms, ...) indexes stay, as
-- partitioned indexes; the event-time indexes of migration 007 served
-- retention's DELETE, which partitions replace: they remain only on the
-- default partitions, whose old rows are still deleted in batches. A
-- time-range read (replay) reads the partitions the range overlaps.
--
-- Everything runs in the migration's one transaction: views, tables, rows.

-- ---- functions the maintenance calls (store_partition.c, store_prune.c) ----

-- The range partitions of a history table of this schema: name, [lo, hi).
CREATE FUNCTION history_partitions(tbl text)
RETURNS TABLE (name text, lo bigint, hi bigint) LANGUAGE sql STABLE AS $$
    SELECT c.relname::text, b[1]::bigint, b[2]::bigint
    FROM pg_catalog.pg_inherits i
    JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
    CROSS JOIN LATERAL regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid),
                                    'FROM \(''?(-?[0-9]+)''?\) TO \(''?(-?[0-9]+)''?\)') AS b
    WHERE i.inhparent = format('%I.%I', current_schema(), tbl)::regclass AND b IS NOT NULL
$$;

-- <table>_p<UTC start, YYYYMMDD"t"HHMI>; a start outside years 1970..9999
-- (to_char's) is named by its ms.
CREATE FUNCTION history_partition_name(tbl text, lo bigint)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT tbl || '_p' || CASE WHEN lo >= 0 AND lo < 253402300800000
        THEN to_char(to_timestamp(lo / 1000.0) AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MI')
        ELSE 'ms' || replace(lo::text, '-', 'm') END
$$;

-- A partition [lo, hi) of tbl; returns the rows it took over from the
-- default partition. PostgreSQL refuses a partition whose range holds rows of
-- the default one, so when some are there the default is detached, the
-- partition created, those rows moved into it and the default attached again,
-- all in the caller's transaction (the parent stays locked until it ends).
CREATE FUNCTION history_partition_add(tbl text, lo bigint, hi bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    s text := current_schema();
    part text := history_partition_name(tbl, lo);
    def text := tbl || '_default';
    held boolean;
    moved bigint := 0;
BEGIN
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.%I WHERE event_time_ms >= $1 '
                   'AND event_time_ms < $2)', s, def) INTO held USING lo, hi;
    IF NOT held THEN
        EXECUTE format('CREATE TABLE %I.%I PARTITION OF %I.%I FOR VALUES FROM (%s) TO (%s)',
                       s, part, s, tbl, lo, hi);
        RETURN 0;
    END IF;
    EXECUTE format('ALTER TABLE %I.%I DETACH PARTITION %I.%I', s, tbl, s, def);
    EXECUTE format('CREATE TABLE %I.%I PARTITION OF %I.%I FOR VALUES FROM (%s) TO (%s)',
                   s, part, s, tbl, lo, hi);
    EXECUTE format('WITH m AS (DELETE FROM %I.%I WHERE event_time_ms >= $1 AND event_time_ms < $2 '
                   'RETURNING *) INSERT INTO %I.%I SELECT * FROM m', s, def, s, part) USING lo, hi;
    GET DIAGNOSTICS moved = ROW_COUNT;
    EXECUTE format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I DEFAULT', s, tbl, s, def);
    RETURN moved;
END
$$;

-- Partitions of span ms (aligned on multiples of span from the epoch) for
-- every span that meets [from_ms, to_ms), where none exists yet. A span that
-- overlaps partitions made with another span (the setting changed) is cut to
-- the gap before the next one, so ranges never overlap. Returns how many it
-- created.
CREATE FUNCTION history_partitions_ensure(tbl text, span bigint, from_ms bigint, to_ms bigint)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    k bigint := floor(from_ms::numeric / span)::bigint;
    v_lo bigint;
    v_hi bigint;
    nxt bigint;
    n integer := 0;
BEGIN
    IF span < 1 THEN
        RAISE EXCEPTION 'history_partitions_ensure: span % ms is not positive', span;
    END IF;
    WHILE k * span < to_ms LOOP
        v_lo := k * span;
        v_hi := v_lo + span;
        k := k + 1;
        LOOP
            SELECT p.hi INTO nxt FROM history_partitions(tbl) p WHERE p.lo <= v_lo AND p.hi > v_lo;
            EXIT WHEN NOT FOUND;
            v_lo := nxt;
        END LOOP;
        CONTINUE WHEN v_lo >= v_hi;
        SELECT min(p.lo) INTO nxt FROM history_partitions(tbl) p WHERE p.lo > v_lo AND p.lo < v_hi;
        IF nxt IS NOT NULL THEN
            v_hi := nxt;
        END IF;
        PERFORM history_partition_add(tbl, v_lo, v_hi);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;

-- Drop one partition of tbl (retention): its rows counted for the caller's
-- report, then detached and dropped; with dry_run only counted. Anything but
-- a range partition of tbl is refused, so the name cannot reach another
-- table.
CREATE FUNCTION history_partition_drop(tbl text, part text, dry_run boolean)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    s text := current_schema();
    n bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM history_partitions(tbl) p WHERE p.name = part) THEN
        RAISE EXCEPTION 'history_partition_drop: % is not a range partition of %', part, tbl;
    END IF;
    EXECUTE format('SELECT count(*) FROM %I.%I', s, part) INTO n;
    IF NOT dry_run THEN
        EXECUTE format('ALTER TABLE %I.%I DETACH PARTITION %I.%I', s, tbl, s, part);
        EXECUTE format('DROP TABLE %I.%I', s, part);
    END IF;
    RETURN n;
END
$$;

-- ---- the tables -------------------------------------------------------------

-- The views read the tables being replaced; they are created again below,
-- unchanged.
DROP VIEW plan_outcomes;
DROP VIEW oom_history;
DROP VIEW job_outcomes;
DROP VIEW runtime_pods;

-- One table: the old one renamed and stripped of its indexes (only read once
-- more, whole), the new one with its columns, defaults, CHECKs, storage and
-- compression, partitioned, its default partition, a partition per UTC day
-- its rows fall in, then the rows. The keys are created by the caller.
CREATE OR REPLACE FUNCTION pg_temp.history_convert_begin(tbl text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    s text := current_schema();
    old text := tbl || '_v11';
    r record;
BEGIN
    EXECUTE format('ALTER TABLE %I.%I RENAME TO %I', s, tbl, old);
    FOR r IN SELECT c.conname FROM pg_catalog.pg_constraint c
             WHERE c.conrelid = format('%I.%I', s, old)::regclass AND c.contype IN ('p', 'u') LOOP
        EXECUTE format('ALTER TABLE %I.%I DROP CONSTRAINT %I', s, old, r.conname);
    END LOOP;
    FOR r IN SELECT ic.relname FROM pg_catalog.pg_index x
             JOIN pg_catalog.pg_class ic ON ic.oid = x.indexrelid
             WHERE x.indrelid = format('%I.%I', s, old)::regclass LOOP
        EXECUTE format('DROP INDEX %I.%I', s, r.relname);
    END LOOP;
    EXECUTE format('CREATE TABLE %I.%I (LIKE %I.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
                   'INCLUDING STORAGE INCLUDING COMPRESSION) PARTITION BY RANGE (event_time_ms)',
                   s, tbl, s, old);
END
$$;

CREATE OR REPLACE FUNCTION pg_temp.history_convert_end(tbl text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    s text := current_schema();
    old text := tbl || '_v11';
    d bigint;
BEGIN
    EXECUTE format('CREATE TABLE %I.%I PARTITION OF %I.%I DEFAULT', s, tbl || '_default', s, tbl);
    EXECUTE format('CREATE INDEX %I ON %I.%I (event_time_ms)', tbl || '_default_time_idx', s,
                   tbl || '_default');
    FOR d IN EXECUTE format('SELECT DISTINCT floor(event_time_ms / 86400000.0)::bigint FROM %I.%I',
                            s, old) LOOP
        PERFORM history_partitions_ensure(tbl, 86400000, d * 86400000, d * 86400000 + 1);
    END LOOP;
    EXECUTE format('INSERT INTO %I.%I SELECT * FROM %I.%I', s, tbl, s, old);
    EXECUTE format('DROP TABLE %I.%I', s, old);
    EXECUTE format('ANALYZE %I.%I', s, tbl);
END
$$;

SELECT pg_temp.history_convert_begin('job_events');
ALTER TABLE job_events ADD PRIMARY KEY (event_id, job_uid, event_time_ms);
CREATE INDEX job_events_job_time_idx ON job_events (job_uid, event_time_ms, event_id);
SELECT pg_temp.history_convert_end('job_events');

SELECT pg_temp.history_convert_begin('runtime_samples');
ALTER TABLE runtime_samples ADD PRIMARY KEY (job_uid, event_time_ms, event_id);
SELECT pg_temp.history_convert_end('runtime_samples');

SELECT pg_temp.history_convert_begin('node_events');
ALTER TABLE node_events ADD PRIMARY KEY (event_id, job_uid, event_time_ms);
CREATE INDEX node_events_job_time_idx ON node_events (job_uid, event_time_ms, event_id);
CREATE INDEX node_events_oom_idx ON node_events (job_uid, pod_name) WHERE kind = 'oom_killed';
SELECT pg_temp.history_convert_end('node_events');

SELECT pg_temp.history_convert_begin('plan_requests');
ALTER TABLE plan_requests ADD PRIMARY KEY (event_id, job_uid, event_time_ms);
CREATE INDEX plan_requests_job_time_idx ON plan_requests (job_uid, event_time_ms);
SELECT pg_temp.history_convert_end('plan_requests');

-- A plan's event time is its request's, so a redone request meets its plan
-- on either key.
SELECT pg_temp.history_convert_begin('plans');
ALTER TABLE plans ADD PRIMARY KEY (plan_id, job_uid, event_time_ms),
    ADD UNIQUE (trigger_event_id, job_uid, event_time_ms);
CREATE INDEX plans_job_time_idx ON plans (job_uid, event_time_ms);
SELECT pg_temp.history_convert_end('plans');

SELECT pg_temp.history_convert_begin('oom_plans');
ALTER TABLE oom_plans ADD PRIMARY KEY (plan_id, pod_name, oom_event_id, job_uid, event_time_ms);
CREATE INDEX oom_plans_job_time_idx ON oom_plans (job_uid, event_time_ms);
SELECT pg_temp.history_convert_end('oom_plans');

SELECT pg_temp.history_convert_begin('config_matches');
ALTER TABLE config_matches ADD PRIMARY KEY (event_id, job_uid, event_time_ms);
CREATE INDEX config_matches_job_time_idx ON config_matches (job_uid, event_time_ms);
SELECT pg_temp.history_convert_end('config_matches');
DROP FUNCTION pg_temp.history_convert_begin(text);
DROP FUNCTION pg_temp.history_convert_end(text);

-- ---- the views, as migrations 006 and 011 made them --------------------------

CREATE VIEW runtime_pods AS
SELECT s.event_id, p.pod_name, p.pod_type, p.pod_index, p.cpu_used, p.cpu_requested,
       p.memory_used, p.memory_requested, p.speed, s.job_uid
FROM runtime_samples s
CROSS JOIN LATERAL unnest(s.pod_names, s.pod_types, s.pod_indexes, s.pod_cpu_used,
                          s.pod_cpu_requested, s.pod_memory_used, s.pod_memory_requested,
                          s.pod_speeds)
    AS p(pod_name, pod_type, pod_index, cpu_used, cpu_requested, memory_used,
         memory_requested, speed);

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
