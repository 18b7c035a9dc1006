-- dlbrain schema, version 4: runtime_pods without its foreign key.
--
-- Pod rows are only ever written by the statement that inserts their sample,
-- and only for a sample that statement inserted (store_pg.c dlb_runtime,
-- store_pg_batch.c), so the reference always holds by construction. Checking
-- it anyway cost one index lookup through SPI per pod row, about 40% of
-- PostgreSQL's time when ingesting runtime samples (dlbrain bench ingest, 12
-- pods a sample). Nothing deletes samples but a dropped schema, so the
-- ON DELETE CASCADE had nothing to do either.
ALTER TABLE runtime_pods DROP CONSTRAINT IF EXISTS runtime_pods_event_id_fkey;
