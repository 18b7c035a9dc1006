-- dlbrain schema, version 9: the consumed positions of each consumer group.
--
-- The stream writes, in the transaction of each batch, where the group stands
-- in every input partition the batch read: next_offset is the offset after
-- the newest message whose rows that transaction committed. A batch Kafka
-- delivers again (the consumer died, or its Kafka transaction failed, after
-- PostgreSQL committed) is then recognised: its messages before next_offset
-- are stored already and are written with the idempotent statement, the
-- others with COPY, which runs no per-row ON CONFLICT check
-- (docs/operations.md, "Exactly once in PostgreSQL"). A position only moves
-- forward (GREATEST), so a late writer of a rebalanced partition cannot
-- move it back. Keyed by group: two groups reading the same topics into one
-- schema keep their own.
CREATE TABLE consumer_positions (
    consumer_group text COLLATE "C" NOT NULL,
    topic text COLLATE "C" NOT NULL,
    kafka_partition integer NOT NULL,
    next_offset bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, topic, kafka_partition)
);
