#!/usr/bin/env bash
# Start-up of the `leads` CLI: `leads --help` and `leads keys list` on the embedded SQLite default,
# timed by hyperfine (Debian's package; installed when missing). Prints median and p99 per command
# beside the bars (--help under 300 ms, keys list under 300 ms, medians) and, as the floor, a bare
# `node -e 0` measured in the same run. hyperfine's timings go to bench/results/cli-startup-<UTC time>.json.
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

hyperfine --warmup 3 --runs "$runs" --export-json "$work/times.json" -N \
  'node -e 0' "node $cli --help" "node $cli keys list" >/dev/null
node --input-type=module -e '
import fs from "node:fs"
const {results} = JSON.parse(fs.readFileSync(process.argv[1], "utf8"))
const bars = {"--help": 300, "keys list": 300}
const pct = (times, p) => { const s = [...times].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * p))] * 1000 }
console.log("command".padEnd(24), "median ms".padStart(10), "p99 ms".padStart(8), "  bar (median)")
for (const r of results) {
  const name = r.command.includes("run.js") ? "leads " + r.command.split("run.js ")[1] : r.command + " (floor)"
  const bar = Object.entries(bars).find(([k]) => name.endsWith(k))?.[1]
  console.log(name.padEnd(24), pct(r.times, 0.5).toFixed(1).padStart(10), pct(r.times, 0.99).toFixed(1).padStart(8), bar ? `  < ${bar}` : "")
}
' "$work/times.json"
cp "$work/times.json" "$results"
echo "results: $results"
