-- dlbrain schema, version 10: runtime_samples keyed by (job_uid, event_time_ms, event_id).
--
-- The table carried two B-trees with text keys for one row model: its key
-- (event_id, job_uid), which only the ON CONFLICT check used, and the index
-- (job_uid, event_time_ms, event_id) that every read of a job's samples uses
-- (window rebuild, similar-job history, replay). Samples now go in with COPY
-- (store_pg_copy.c) and the key's only work is to refuse a sample stored
-- twice, which the read index does as well once it is the key: one B-tree
-- less to update per sample, about 15% of COPY's time on the server (psql
-- \copy of 100,000 rows as the stream sends them, three rounds each).
--
-- A sample is now the same sample when its job, id and event time are: a
-- producer that sends it again sends the same time (as migration 006 foresaw
-- for time-partitioned tables, whose keys must hold the partition column),
-- and the Redis window, whose members are the frames, already counted a
-- reused id with another time as another sample. A look-up by event id alone
-- (runtime_pods WHERE event_id = ...) reads the table; by job, the key.
--
-- Rows stored before are unique by (event_id, job_uid), so by the new key
-- too: it always builds, holding the table's lock while it does.
ALTER TABLE runtime_samples DROP CONSTRAINT runtime_samples_pkey,
    ADD PRIMARY KEY (job_uid, event_time_ms, event_id);
DROP INDEX runtime_samples_job_time_idx;
