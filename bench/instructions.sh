#!/bin/bash
# Instructions executed to simulate 5 more seconds of the default scenario (6 s minus 1 s),
# for the checkout given (default: this one). Deterministic: no address-space randomisation,
# a fixed hash seed; imports and set-up cancel in the difference. Needs valgrind.
#   bash bench/instructions.sh [CHECKOUT] [PYTHON]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$(cd "${1:-$here}" && pwd)
python=${2:-$here/.venv/bin/python}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for seconds in 1 6; do
  cat > "$work/run_$seconds.py" <<PY
import sys
sys.path.insert(0, "$dir")
import simcache
assert simcache.__file__.startswith("$dir"), simcache.__file__
simcache.simulate(simcache.load_scenario("$dir/scenarios/default.toml"), duration=$seconds)
PY
  PYTHONHASHSEED=0 setarch -R valgrind --tool=callgrind --callgrind-out-file="$work/cg.$seconds" \
    "$python" "$work/run_$seconds.py" 2>&1 | grep -o "Collected : [0-9]*" | awk '{print $3}' > "$work/ir.$seconds" &
done
wait
echo "$dir: Ir(6 s) - Ir(1 s) = $(( ($(cat "$work/ir.6") - $(cat "$work/ir.1")) / 1000000 )) M instructions"
