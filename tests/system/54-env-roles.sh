#!/usr/bin/env bash
# The registry's failover roles against a real PostgreSQL: the roles the
# failover decider reads (the environment the newest switch made real),
# env promote --no-pin while pinned refused with nothing changed, and who a
# mark row names and which ones count. Runs the cmocka program itest_env_roles.
. "$(dirname "$0")/helpers.sh"
build=${DLB_BUILD_DIR:-$SYS_TOP/build}
[ -x "$build/itest_env_roles" ] || fail "$build/itest_env_roles not built (set DLB_BUILD_DIR)"

sys_start_pg
export DLBRAIN_PG_DSN
"$build/itest_env_roles" || fail "itest_env_roles"
ok "failover roles, the pin and mark rows against PostgreSQL"
