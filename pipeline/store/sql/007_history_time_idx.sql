-- dlbrain schema, version 7: every history table indexed by event time.
--
-- Retention (store.retention.days, store_prune.c) removes the rows whose
-- event time is older than its window, a bounded batch at a time; each batch
-- and the final "nothing older is left" must find those rows without reading
-- the table, and the existing indexes lead with job_uid. A bigint index on an
-- almost increasing key is the cheapest there is to keep (inserts land on its
-- rightmost page): inserting 150,000 runtime sample rows as migration 005
-- stores them (12 pods each) took about 8% more of the backend's CPU time with
-- it (median of three runs; the shared test machine's noise is as large). BRIN would cost less still, but its ranges only ever
-- widen, so once pruned pages are reused by new rows every range matches and
-- each prune reads the whole table. Replay's time-range reads use it too.
-- When the tables become partitioned by event time, dropping a partition
-- replaces the DELETE and these indexes can go.
CREATE INDEX job_events_time_idx ON job_events (event_time_ms);
CREATE INDEX runtime_samples_time_idx ON runtime_samples (event_time_ms);
CREATE INDEX node_events_time_idx ON node_events (event_time_ms);
CREATE INDEX plan_requests_time_idx ON plan_requests (event_time_ms);
CREATE INDEX plans_time_idx ON plans (event_time_ms);
CREATE INDEX oom_plans_time_idx ON oom_plans (event_time_ms);
CREATE INDEX config_matches_time_idx ON config_matches (event_time_ms);
