#!/usr/bin/env bash
# End-to-end chaos on three sparrowd replicas sharing a real PostgreSQL 15 (the script starts
# it): SIGKILL and SIGSTOP of replicas running jobs, a cancel across replicas, watchers on
# every replica; see replicas_chaos.py. Usage: replicas_chaos_test.sh BIN_DIR
set -u
py=/usr/bin/python3
[[ -x $py ]] || py=python3
exec "$py" "$(dirname "$0")/replicas_chaos.py" "$1"
