-- dlbrain schema, version 5: a sample's pods in its own row.
--
-- Ingesting runtime samples was bound by PostgreSQL inserting 12.8 rows a
-- sample (the sample and 11.8 pods on average, dlbrain bench ingest) into
-- B-trees with text keys, plus their WAL. The pods now travel with their
-- sample as parallel arrays (element i of every pod_* column is pod i), so a
-- sample is one row and one index entry, and runtime_pods becomes a view with
-- the table's columns and types, so analysts' queries, the evaluator and the
-- tests read it as before. Nothing ever read a pod row by its own key (the
-- optimizers rebuild pods from raw), so no index on pods is lost that a
-- query used. Pod names are unique within a sample, as the old primary key
-- (event_id, pod_name) made them: the writers keep a repeated name's first
-- copy (store_pg.c dlb_runtime, store_pg_batch.c).
ALTER TABLE runtime_samples
    ADD COLUMN pod_names text[] COLLATE "C" NOT NULL DEFAULT '{}',
    ADD COLUMN pod_types text[] NOT NULL DEFAULT '{}',
    ADD COLUMN pod_indexes integer[] NOT NULL DEFAULT '{}',
    ADD COLUMN pod_cpu_used double precision[] NOT NULL DEFAULT '{}',
    ADD COLUMN pod_cpu_requested double precision[] NOT NULL DEFAULT '{}',
    ADD COLUMN pod_memory_used bigint[] NOT NULL DEFAULT '{}',
    ADD COLUMN pod_memory_requested bigint[] NOT NULL DEFAULT '{}',
    -- NULL elements: pods that reported no speed (runtime_sample v1).
    ADD COLUMN pod_speeds double precision[] NOT NULL DEFAULT '{}';

-- Rows stored before this migration, their pods in name order (the old
-- primary key's; a table has no other order to keep).
UPDATE runtime_samples s SET
    pod_names = p.names, pod_types = p.types, pod_indexes = p.indexes,
    pod_cpu_used = p.cpu_used, pod_cpu_requested = p.cpu_requested,
    pod_memory_used = p.memory_used, pod_memory_requested = p.memory_requested,
    pod_speeds = p.speeds
FROM (SELECT event_id,
             array_agg(pod_name ORDER BY pod_name) AS names,
             array_agg(pod_type ORDER BY pod_name) AS types,
             array_agg(pod_index ORDER BY pod_name) AS indexes,
             array_agg(cpu_used ORDER BY pod_name) AS cpu_used,
             array_agg(cpu_requested ORDER BY pod_name) AS cpu_requested,
             array_agg(memory_used ORDER BY pod_name) AS memory_used,
             array_agg(memory_requested ORDER BY pod_name) AS memory_requested,
             array_agg(speed ORDER BY pod_name) AS speeds
      FROM runtime_pods GROUP BY event_id) p
WHERE s.event_id = p.event_id;

-- unnest() of arrays of different lengths pads the short ones with NULLs:
-- the view would show pods that do not exist. One comparison per row.
ALTER TABLE runtime_samples ADD CONSTRAINT runtime_samples_pods_check CHECK (
    cardinality(pod_types) = cardinality(pod_names)
    AND cardinality(pod_indexes) = cardinality(pod_names)
    AND cardinality(pod_cpu_used) = cardinality(pod_names)
    AND cardinality(pod_cpu_requested) = cardinality(pod_names)
    AND cardinality(pod_memory_used) = cardinality(pod_names)
    AND cardinality(pod_memory_requested) = cardinality(pod_names)
    AND cardinality(pod_speeds) = cardinality(pod_names));

DROP TABLE runtime_pods;

-- The old table's columns, names and types (pod_name keeps the "C" collation
-- of pod_names); one row per pod. A query on event_id reaches the sample
-- through runtime_samples' primary key.
CREATE VIEW runtime_pods AS
SELECT s.event_id, p.pod_name, p.pod_type, p.pod_index, p.cpu_used, p.cpu_requested,
       p.memory_used, p.memory_requested, p.speed
FROM runtime_samples s
CROSS JOIN LATERAL unnest(s.pod_names, s.pod_types, s.pod_indexes, s.pod_cpu_used,
                          s.pod_cpu_requested, s.pod_memory_used, s.pod_memory_requested,
                          s.pod_speeds)
    AS p(pod_name, pod_type, pod_index, cpu_used, cpu_requested, memory_used,
         memory_requested, speed);

-- A sample's row is now about 2 kB, over the size (toast_tuple_target, 2032
-- bytes by default) above which PostgreSQL compresses its largest values;
-- with the default pglz that was an eighth of the backend's time when
-- ingesting (perf, dlbrain bench ingest). lz4 compresses about as well for a
-- fraction of the CPU; a server built without it keeps pglz.
DO $$
BEGIN
    ALTER TABLE runtime_samples ALTER COLUMN raw SET COMPRESSION lz4,
        ALTER COLUMN pod_names SET COMPRESSION lz4, ALTER COLUMN pod_types SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'runtime_samples: no lz4 in this server, compression stays pglz';
END
$$;
