#!/usr/bin/env bash
# Start-up of the `leads` CLI: `leads --help` and `leads keys list` on the embedded SQLite default,
# the latter into a pipe and at a terminal, timed by hyperfine (Debian's package; installed when
# missing). Prints median and p99 per command beside the bars (--help under 300 ms, keys list into
# a pipe under 300 ms, medians) and, as the floors, a bare `node -e 0` in the same two ways, measured
# in the same run. hyperfine's timings go to bench/results/cli-startup-<UTC time>.json.
# Run: npm run build && bash bench/cli-startup.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-30}
command -v hyperfine >/dev/null || apt-get install -y hyperfine >/dev/null
cli="$PWD/bin/run.js"
results="$PWD/bench/results/cli-startup-$(date -u +%Y%m%dT%H%M%SZ).json"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# A database as the daemon leaves it (migrated, with a master key), holding a customer and 20 keys.
LEADS_DATABASE_URL="sqlite://$work/.leads/leads.db" node "$cli" migrate >/dev/null
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > .leads/master.key
customer=$(node "$cli" customers create --name "Bench Realty")
for i in $(seq 1 20); do node "$cli" keys issue --customer "$customer" --scope public_api:leads:read --name "key $i" --json >/dev/null; done

# At a terminal (a pseudo-terminal made by script, 80 columns), a table is an Ink view: Ink and
# React load only there.
terminal() { echo "script -qec 'stty cols 80 rows 40; exec $1' /dev/null"; }
hyperfine --warmup 3 --runs "$runs" --export-json "$work/times.json" -N \
  -n 'node -e 0 (floor)' 'node -e 0' -n 'leads --help' "node $cli --help" -n 'leads keys list' "node $cli keys list" \
  -n 'node -e 0 at a terminal (floor)' "$(terminal 'node -e 0')" -n 'leads keys list at a terminal' "$(terminal "node $cli keys list")" >/dev/null
node --input-type=module -e '
import fs from "node:fs"
const {results} = JSON.parse(fs.readFileSync(process.argv[1], "utf8"))
const bars = {"leads --help": 300, "leads keys list": 300}
const pct = (times, p) => { const s = [...times].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * p))] * 1000 }
console.log("command".padEnd(34), "median ms".padStart(10), "p99 ms".padStart(8), "  bar (median)")
for (const r of results) {
  const bar = bars[r.command]
  console.log(r.command.padEnd(34), pct(r.times, 0.5).toFixed(1).padStart(10), pct(r.times, 0.99).toFixed(1).padStart(8), bar ? `  < ${bar}` : "")
}
' "$work/times.json"
cp "$work/times.json" "$results"
echo "results: $results"
