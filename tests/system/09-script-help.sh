#!/usr/bin/env bash
# Every script under scripts/ answers -h and --help at once: exit status 0, its
# usage on stdout (naming the script or saying "usage"), and nothing else done.
# Each runs with shims first in PATH for the tools a script would install,
# build, fetch or start servers with (apt-get, pip, cmake, ninja, ctest, mvn,
# java, pg_ctl, redis-server, curl, git, ...; python3 only for -m pip / venv):
# a shim records its call and fails, and no shim may be called. The checkout
# must stay as it was: `git status --porcelain` the same and no new file.
# Scripts with subcommands (pg, redis, kafka, bench) also answer
# `<subcommand> --help` and `<subcommand> -h`.
. "$(dirname "$0")/helpers.sh"

top=$SYS_TOP
# The real tools, by absolute path: the shims shadow them for the scripts only.
real_git=$(command -v git) || fail "no git"
real_python=$(dlb_python)
[ -n "$real_python" ] || fail "no python3"

shims=$SYS_DIR/shims
calls=$SYS_DIR/shim-calls
mkdir -p "$shims"
: >"$calls"
for tool in apt-get apt apt-cache dpkg dpkg-query sudo runuser pip pip3 cmake ninja make ctest \
    mvn java pg_ctl initdb postgres psql redis-server redis-cli curl wget git gcc cc clang \
    clang-format kcat docker docker-compose; do
    printf '#!/bin/sh\necho "%s $*" >>"%s"\nexit 1\n' "$tool" "$calls" >"$shims/$tool"
    chmod +x "$shims/$tool"
done
# python3 runs scripts/compare-aggregate (and lib.sh's port picker), so it
# passes through, except for installing anything.
cat >"$shims/python3" <<EOF
#!/bin/sh
case " \$* " in
*" -m pip "* | *" -m venv "* | *" -m ensurepip "*)
    echo "python3 \$*" >>"$calls"
    exit 1
    ;;
esac
exec "$real_python" "\$@"
EOF
chmod +x "$shims/python3"

# Files of the checkout, but those that other tests running beside this one
# write: ctest's own build dir (its logs, reports) and Python's caches.
build=${DLB_BUILD_DIR:-$top/build}
files() {
    find "$top" \( -path "$top/.git" -o -path "$build" -o -name __pycache__ -o -name .pytest_cache \) \
        -prune -o -print | LC_ALL=C sort
}
git_status() { "$real_git" -C "$top" status --porcelain --untracked-files=all; }

# The scripts: every executable file of scripts/ (lib.sh is sourced, not run).
scripts=()
for f in "$top"/scripts/*; do
    [ -f "$f" ] && [ -x "$f" ] && scripts+=("$(basename "$f")")
done
for s in test setup demo pg redis kafka bench compare compare-aggregate fuzz; do
    [ -x "$top/scripts/$s" ] || fail "scripts/$s is missing or not executable"
done

git_status >"$SYS_DIR/status.before"
files >"$SYS_DIR/files.before"

# check SCRIPT ARGS...: exit 0, usage on stdout, no shim called.
check() {
    local s=$1 rc=0
    shift
    : >"$calls"
    (cd "$top" && PATH="$shims:$PATH" timeout 60 "./scripts/$s" "$@") \
        >"$SYS_DIR/out" 2>"$SYS_DIR/err" </dev/null || rc=$?
    [ "$rc" = 0 ] || fail "scripts/$s $*: exit status $rc, expected 0: $(head -c 400 "$SYS_DIR/err")"
    [ -s "$SYS_DIR/out" ] || fail "scripts/$s $*: nothing on stdout"
    grep -qiF -e usage -e "$s" "$SYS_DIR/out" ||
        fail "scripts/$s $*: stdout says neither 'usage' nor '$s': $(head -c 400 "$SYS_DIR/out")"
    [ ! -s "$calls" ] || fail "scripts/$s $*: ran $(tr '\n' ';' <"$calls")"
    ok "scripts/$s $*: usage, $(wc -l <"$SYS_DIR/out") lines, nothing run"
}

for s in "${scripts[@]}"; do
    check "$s" --help
    check "$s" -h
    case $s in
    pg | redis) subs="start stop status env" ;;
    kafka) subs="start stop status env topics fetch" ;;
    bench) subs="optimizer roundtrip gateway matcher rebuild decode config ingest scale replay all" ;;
    *) subs= ;;
    esac
    for sub in $subs; do
        check "$s" "$sub" --help
        check "$s" "$sub" -h
    done
done

git_status >"$SYS_DIR/status.after"
diff -u "$SYS_DIR/status.before" "$SYS_DIR/status.after" ||
    fail "git status --porcelain changed while the scripts printed their usage"
ok "git status --porcelain unchanged"
files >"$SYS_DIR/files.after"
new=$(comm -13 "$SYS_DIR/files.before" "$SYS_DIR/files.after")
[ -z "$new" ] || fail "new files in the checkout: $new"
ok "no new file in the checkout"
