# The analysts' page (docs/analysts.md) and views against a history in
# PostgreSQL: source it (the caller defines ok and fail, and has PGHOST etc.
# set for psql), then call
#   analysts_check_docs        every ```sql block of the page, as written
#   analysts_check_views SCHEMA   plan_outcomes.ooms_after worked out from the tables
# The demo's history (12-scale.sh) runs both; a closed-loop simulation, whose
# master asks for an OOM plan at the kill's time (42-sim.sh), the second.

ANALYSTS_DOC=${ANALYSTS_DOC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/docs/analysts.md}
# A row wider than this is not read at a terminal: the page's queries shorten
# what runs to kilobytes (a plan's reason).
ANALYSTS_ROW_MAX=200

# analysts_blocks DIR: each ```sql block of the page to DIR/NN.sql; prints the count.
analysts_blocks() {
    awk -v dir="$1" '
        /^```sql[[:space:]]*$/ { n++; f = sprintf("%s/%02d.sql", dir, n); inb = 1; next }
        /^```/ && inb { inb = 0; close(f); next }
        inb { print > f }
        END { print n + 0 }' "$ANALYSTS_DOC"
}

# analysts_check_docs: the blocks that SET something set up the session (the
# schema); every other block must run after them as written, in a session of
# its own, and return at least one row, none wider than ANALYSTS_ROW_MAX.
analysts_check_docs() {
    local dir n f setup=() out rows width
    dir=$(mktemp -d /tmp/dlbrain-analysts.XXXXXX)
    n=$(analysts_blocks "$dir")
    [ "$n" -ge 5 ] || fail "docs/analysts.md: only $n sql blocks"
    for f in "$dir"/*.sql; do
        grep -qiE '^[[:space:]]*SET[[:space:]]' "$f" && setup+=(-f "$f")
    done
    for f in "$dir"/*.sql; do
        grep -qiE '^[[:space:]]*SET[[:space:]]' "$f" && continue
        if ! out=$(psql -X -q -A -F ' | ' -v ON_ERROR_STOP=1 "${setup[@]}" -f "$f" 2>&1); then
            rm -rf "$dir"
            fail "docs/analysts.md block $(basename "$f" .sql) fails: $out"
        fi
        # Unaligned output: a header, the rows, then "(N rows)".
        rows=$(printf '%s\n' "$out" | sed -n 's/^(\([0-9]*\) rows\{0,1\})$/\1/p' | tail -n 1)
        width=$(printf '%s\n' "$out" | sed '1d;$d' | awk '{ if (length > m) m = length } END { print m + 0 }')
        if [ "${rows:-0}" -lt 1 ]; then
            out=$(tr '\n' ' ' <"$f")
            rm -rf "$dir"
            fail "docs/analysts.md block $(basename "$f" .sql) returns no row: $out"
        fi
        if [ "$width" -gt "$ANALYSTS_ROW_MAX" ]; then
            rm -rf "$dir"
            fail "docs/analysts.md block $(basename "$f" .sql): rows up to $width characters wide"
        fi
        ok "docs/analysts.md block $(basename "$f" .sql): $rows row(s), at most $width characters wide"
    done
    rm -rf "$dir"
}

# analysts_check_views SCHEMA: from the tables, not the view's own windows:
# - a plan that answered OOMs counts at most the job's OOM kills at or after
#   its time that it did not answer (never the one it answered);
# - an OOM kill counts for the job's latest plan strictly before it (the plan
#   in effect) unless that plan answered it.
# Fails naming the plans that break either, with the numbers.
analysts_check_views() {
    local schema=$1 bad plans ooms
    plans=$(psql -X -q -At -v ON_ERROR_STOP=1 -c "SET search_path = $schema" -c "
        SELECT count(*) FROM plans p
        WHERE EXISTS (SELECT 1 FROM oom_plans a WHERE a.job_uid = p.job_uid AND a.plan_id = p.plan_id)") ||
        fail "$schema: no plans table"
    ooms=$(psql -X -q -At -v ON_ERROR_STOP=1 -c "SET search_path = $schema" \
        -c "SELECT count(*) FROM node_events WHERE kind = 'oom_killed'")
    [ "$plans" -ge 1 ] || fail "$schema: no plan answered an OOM; nothing to check"
    bad=$(psql -X -q -At -v ON_ERROR_STOP=1 -c "SET search_path = $schema" -c "
        SELECT string_agg(o.plan_id || ' ooms_after=' || o.ooms_after || ' > ' || b.n, ', ')
        FROM plan_outcomes o
        CROSS JOIN LATERAL (
            SELECT count(*) AS n FROM node_events k
            WHERE k.job_uid = o.job_uid AND k.kind = 'oom_killed' AND k.event_time_ms >= o.plan_ms
              AND NOT EXISTS (SELECT 1 FROM oom_plans a WHERE a.job_uid = o.job_uid
                              AND a.plan_id = o.plan_id AND a.oom_event_id = k.event_id)) b
        WHERE EXISTS (SELECT 1 FROM oom_plans a WHERE a.job_uid = o.job_uid AND a.plan_id = o.plan_id)
          AND o.ooms_after > b.n") || fail "$schema: plan_outcomes query failed"
    [ -z "$bad" ] || fail "$schema: OOM plans counting the OOM they answered: $bad"
    ok "$schema: none of $plans OOM plans counts an OOM it answered"
    bad=$(psql -X -q -At -v ON_ERROR_STOP=1 -c "SET search_path = $schema" -c "
        SELECT string_agg(DISTINCT o.plan_id || ' ooms_after=0 under ' || k.event_id, ', ')
        FROM node_events k
        JOIN plan_outcomes o ON o.job_uid = k.job_uid
            AND o.plan_ms = (SELECT max(q.event_time_ms) FROM plans q
                             WHERE q.job_uid = k.job_uid AND q.event_time_ms < k.event_time_ms)
        WHERE k.kind = 'oom_killed' AND o.ooms_after = 0
          AND NOT EXISTS (SELECT 1 FROM oom_plans a WHERE a.job_uid = o.job_uid
                          AND a.plan_id = o.plan_id AND a.oom_event_id = k.event_id)") ||
        fail "$schema: plan_outcomes query failed"
    [ -z "$bad" ] || fail "$schema: plans in effect at an OOM that count none: $bad"
    ok "$schema: each of $ooms OOM kills counts for the plan in effect when it came"
}
