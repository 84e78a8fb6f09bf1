#!/usr/bin/env bash
# Every example spec whose data exists is submitted to a real sparrowd with a tiny budget and must
# succeed there, as it does with `sparrow run --local`; see examples_on_service.py.
# Usage: examples_on_service_test.sh BIN_DIR   (run from the repository root)
set -u
py=/usr/bin/python3
[[ -x $py ]] || py=python3
exec "$py" "$(dirname "$0")/examples_on_service.py" "$1"
