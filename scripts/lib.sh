# Shared helpers for scripts/ and tests/system/: source it, do not run it.
#
#   . "$(dirname "$0")/lib.sh"
#
# Run dir convention: every service started by scripts/ keeps its files (data,
# logs, pid file) under a directory of $DLB_RUN_DIR (default <repo>/.run) and
# writes an "env" file there that `source` turns into client settings.

DLB_REPO=${DLB_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
DLB_RUN_DIR=${DLB_RUN_DIR:-$DLB_REPO/.run}
DLB_PROG=${DLB_PROG:-$(basename "$0")}
# Every long-running dlbrain process serves /metrics on metrics.port (default
# 9464, and a port in use stops it). The demo, the benchmarks and the tests run
# several on one host: each takes a free port (logged) unless told otherwise.
export DLBRAIN_METRICS_PORT=${DLBRAIN_METRICS_PORT:-0}
# Likewise the gateway's HTTP Brain (gateway.http.address, default 0.0.0.0:8000).
export DLBRAIN_GATEWAY_HTTP_ADDRESS=${DLBRAIN_GATEWAY_HTTP_ADDRESS:-127.0.0.1:0}

# dlb_usage [STATUS]: print the running script's usage, its header comment (from
# line 2 to the first line that is not a comment, without the leading "# "),
# and exit STATUS (default 2): to stdout for 0 (-h, --help), else to stderr.
dlb_usage() {
    local status=${1:-2}
    if [ "$status" = 0 ]; then dlb_header; else dlb_header >&2; fi
    exit "$status"
}
dlb_header() { sed -n '2,${/^#/!q;s/^# \{0,1\}//;p}' "$0"; }
# dlb_help "$@": when the first argument is -h or --help, the usage on stdout and
# exit 0, before a script does anything else.
dlb_help() {
    case ${1:-} in -h | --help) dlb_usage 0 ;; esac
}

dlb_log() { printf '%s: %s\n' "$DLB_PROG" "$*" >&2; }
dlb_warn() { printf '%s: warning: %s\n' "$DLB_PROG" "$*" >&2; }
dlb_die() {
    printf '%s: error: %s\n' "$DLB_PROG" "$*" >&2
    exit 1
}
# Debug output only with DLB_VERBOSE=1, so scripts stay quiet when all is well.
dlb_dbg() { [ "${DLB_VERBOSE:-0}" = 1 ] && printf '%s: %s\n' "$DLB_PROG" "$*" >&2; return 0; }

dlb_python() {
    # /usr/bin/python3 first: a pyenv shim may not work from every directory.
    if [ -x /usr/bin/python3 ]; then echo /usr/bin/python3; else command -v python3; fi
}

# dlb_port_in_use PORT: true when something listens on 127.0.0.1:PORT (or any address).
dlb_port_in_use() {
    local port=$1
    if command -v ss >/dev/null 2>&1; then
        ss -Htln "sport = :$port" 2>/dev/null | grep -q .
    else
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
    fi
}

# dlb_free_port: print a TCP port nobody listens on. The kernel picks it (bind to
# port 0); there is a short window before our server binds it, which is why the
# start scripts also fail loudly when a port turns out to be taken.
dlb_free_port() {
    local py port i
    py=$(dlb_python)
    if [ -n "$py" ]; then
        port=$("$py" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()' 2>/dev/null) && [ -n "$port" ] && {
            echo "$port"
            return 0
        }
    fi
    # Fallback without python: probe random high ports with ss.
    for i in $(seq 1 200); do
        port=$((20000 + RANDOM % 40000))
        if ! dlb_port_in_use "$port"; then
            echo "$port"
            return 0
        fi
    done
    dlb_warn "no free port found"
    return 1
}

# dlb_wait_port HOST PORT TIMEOUT_S: wait until a TCP connect succeeds.
dlb_wait_port() {
    local host=$1 port=$2 timeout=${3:-30} deadline
    deadline=$((SECONDS + timeout))
    while [ "$SECONDS" -lt "$deadline" ]; do
        if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    dlb_warn "nothing listens on $host:$port after ${timeout}s"
    return 1
}

# dlb_is_port VALUE: a TCP port number 1..65535.
dlb_is_port() {
    [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le 65535 ]
}
