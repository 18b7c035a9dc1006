-- dlbrain schema, version 3: versioned configuration rules and their matches.
--
-- Every apply of rules (dlbrain config apply, a ConfigMap sync) adds a version
-- and its rules; nothing here is ever updated or deleted (the triggers below
-- refuse it), so the two tables are the audit trail, and a rollback is a new
-- version holding an old one's rules, like a Kubernetes rollout undo.
-- Appliers serialise on an advisory lock, so versions are dense: 1, 2, ...

CREATE TABLE config_versions (
    version bigint PRIMARY KEY,
    created_ms bigint NOT NULL,      -- server clock at the apply, ms since the epoch
    source text NOT NULL,            -- "cli", "configmap:<dir>", "rollback"
    message text NOT NULL DEFAULT '',
    rollback_of bigint REFERENCES config_versions (version), -- NULL unless a rollback
    rules integer NOT NULL,
    -- Hex SHA-256 of the rules' canonical JSON without file and line
    -- (dlb_rules_to_json(DLB_RULES_JSON_NO_SOURCE)): equal rules, equal
    -- checksum, whatever files or layout they came from.
    checksum text NOT NULL
);

-- One row per rule, in applied order (position 0, 1, ...: the matcher's last
-- tie-break). include / exclude / configure are there for analysts' queries
-- (e.g. include @> '{"user": ["ana"]}'); jsonb reorders object keys, so the
-- rule is loaded from rule_json, its canonical JSON with file and line exactly
-- as written at the apply, which the checksum was computed from.
CREATE TABLE config_rules (
    version bigint NOT NULL REFERENCES config_versions (version),
    position integer NOT NULL,
    rule_id text COLLATE "C" NOT NULL,
    priority integer NOT NULL,
    file text NOT NULL,
    line integer NOT NULL,
    include jsonb NOT NULL,
    exclude jsonb NOT NULL,
    configure jsonb NOT NULL,
    rule_json text NOT NULL,
    PRIMARY KEY (version, position),
    UNIQUE (version, rule_id)
);

-- The audit trail stays whole: UPDATE, DELETE and TRUNCATE are refused. (An
-- operator who must purge old versions drops the triggers deliberately.)
CREATE FUNCTION config_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% on %: configuration versions are never changed; apply a new version',
        TG_OP, TG_TABLE_NAME;
END
$$;
CREATE TRIGGER config_versions_immutable BEFORE UPDATE OR DELETE OR TRUNCATE ON config_versions
    FOR EACH STATEMENT EXECUTE FUNCTION config_immutable();
CREATE TRIGGER config_rules_immutable BEFORE UPDATE OR DELETE OR TRUNCATE ON config_rules
    FOR EACH STATEMENT EXECUTE FUNCTION config_immutable();

-- Configuration matches (the config_match event, schema ConfigMatch), keyed
-- and kept like the input events: a redelivered trigger is answered with raw,
-- the framed Avro already sent, rather than a match against newer rules.
-- rules_version is not a foreign key: a match against no rules has version 0.
CREATE TABLE config_matches (
    event_id text COLLATE "C" PRIMARY KEY,
    job_uid text COLLATE "C" NOT NULL,
    event_time_ms bigint NOT NULL,
    rules_version bigint NOT NULL,
    rule_ids jsonb NOT NULL,         -- ["id", ...], highest precedence first
    values jsonb NOT NULL,           -- {"key": value, ...}, the merged Configure values
    trigger_event_id text COLLATE "C",
    raw bytea NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX config_matches_job_time_idx ON config_matches (job_uid, event_time_ms);
