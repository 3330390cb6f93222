#!/usr/bin/env bash
# End-to-end check of the Dockerfile with podman, for machines without a Docker engine:
#   1. makes or reuses a local Node 22 base image (scripts/container-base.sh: debootstrap + Node
#      from the npm registry), since Docker Hub's node:22-bookworm-slim cannot be pulled here;
#   2. builds the project's image on it (--build-arg BASE_IMAGE=...);
#   3. against this machine's MariaDB and Redis (host network): migrate, create a customer and
#      issue a key through one-off containers, start the daemon container, wait for /healthz,
#      list leads with the key, run the image's HEALTHCHECK, and stop it with SIGTERM;
#   4. also checks the image's own defaults: non-root user, embedded SQLite in /var/lib/leads.
# Ends with "container smoke: ok", or exits non-zero; its containers and database go either way.
#
# Environment (all optional):
#   LEADS_SMOKE_IMAGE   tag to build            (localhost/leads:smoke)
#   LEADS_BASE_IMAGE    base image to build on  (localhost/leads-node-base:22, made if missing)
#   LEADS_SMOKE_DB      MariaDB database, dropped and recreated (leads_container_smoke)
#   LEADS_SMOKE_MYSQL   user[:password]@host:port of the MySQL URL (root@127.0.0.1:3306)
#   LEADS_SMOKE_REDIS   Redis URL; its database is flushed  (redis://127.0.0.1:6379/13)
#   LEADS_CONTAINER_CACHE  cache of the base rootfs and podman settings
#                          (${XDG_CACHE_HOME:-$HOME/.cache}/leads-container)
#   LEADS_OCI_RUNTIME   podman's OCI runtime (runc)
set -euo pipefail
cd "$(dirname "$0")/.."

image=${LEADS_SMOKE_IMAGE:-localhost/leads:smoke}
base_image=${LEADS_BASE_IMAGE:-localhost/leads-node-base:22}
db=${LEADS_SMOKE_DB:-leads_container_smoke}
mysql_server=${LEADS_SMOKE_MYSQL:-root@127.0.0.1:3306}
redis_url=${LEADS_SMOKE_REDIS:-redis://127.0.0.1:6379/13}
cache=${LEADS_CONTAINER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/leads-container}
runtime=${LEADS_OCI_RUNTIME:-runc}
export LEADS_CONTAINER_CACHE=$cache

started=$(date +%s)
log() { printf '[smoke] %s\n' "$*"; }
fail() { printf '[smoke] FAILED: %s\n' "$*" >&2; exit 1; }
elapsed() { echo "$(( $(date +%s) - ${1:-$started} ))s"; }

# ---- tools -------------------------------------------------------------------------------------
mkdir -p "$cache"
declare -A package_of=([podman]=podman [runc]=runc [debootstrap]=debootstrap [curl]=curl
  [mysql]=mariadb-client [redis-cli]=redis-tools)
missing=()
for tool in "${!package_of[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("${package_of[$tool]}")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
    >"$cache/apt.log" 2>&1 || { tail -n 20 "$cache/apt.log" >&2; fail "apt-get install ${missing[*]} failed"; }
fi

# podman's default nofile ulimit cannot be applied in this sandbox; with runc and no default
# ulimits, containers start. A CONTAINERS_CONF of the caller's own is left alone.
if [ -z "${CONTAINERS_CONF:-}" ]; then
  printf '[containers]\ndefault_ulimits = []\n' >"$cache/containers.conf"
  export CONTAINERS_CONF=$cache/containers.conf
fi
pod() { podman --runtime "$runtime" "$@"; }

# ---- services ----------------------------------------------------------------------------------
mysql_host=${mysql_server#*@}; mysql_host=${mysql_host%:*}
mysql_port=${mysql_server##*:}
mysql_user=${mysql_server%@*}
if [[ $mysql_user == *:* ]]; then export MYSQL_PWD=${mysql_user#*:}; mysql_user=${mysql_user%%:*}; fi
sql() { mysql -u"$mysql_user" -h"$mysql_host" -P"$mysql_port" -e "$1"; }
redis_db=${redis_url##*/}
redis_hostport=${redis_url#redis://}; redis_hostport=${redis_hostport%%/*}

wait_for() {
  local what=$1; shift
  for _ in $(seq 1 60); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  fail "$what did not come up"
}
# Same start commands as .ci/run, for a machine whose services stopped.
if ! mysqladmin -u"$mysql_user" -h"$mysql_host" -P"$mysql_port" ping >/dev/null 2>&1; then
  log 'starting MariaDB'
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
  wait_for MariaDB mysqladmin -u"$mysql_user" -h"$mysql_host" -P"$mysql_port" ping
fi
if ! redis-cli -h "${redis_hostport%:*}" -p "${redis_hostport##*:}" ping >/dev/null 2>&1; then
  log 'starting Redis'
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_for Redis redis-cli -h "${redis_hostport%:*}" -p "${redis_hostport##*:}" ping
fi

# ---- cleanup, whatever happens -----------------------------------------------------------------
work=$(mktemp -d)
name="leads-smoke-$$"
containers=()
cleanup() {
  local status=$?
  if [ ${#containers[@]} -gt 0 ]; then
    if [ "$status" -ne 0 ] && pod container exists "$name-daemon" 2>/dev/null; then
      printf '[smoke] daemon log (last 40 lines):\n' >&2
      pod logs --tail 40 "$name-daemon" >&2 2>&1 || true
    fi
    pod rm -f -i -t 0 "${containers[@]}" >/dev/null 2>&1 || true
  fi
  pod volume rm -f "$name-data" >/dev/null 2>&1 || true
  sql "DROP DATABASE IF EXISTS \`$db\`" >/dev/null 2>&1 || true
  rm -rf "$work"
  [ "$status" -eq 0 ] || printf '[smoke] failed after %s\n' "$(elapsed)" >&2
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- images ------------------------------------------------------------------------------------
t=$(date +%s)
log "base image $base_image"
bash scripts/container-base.sh "$base_image"
log "base image ready ($(elapsed "$t"))"

t=$(date +%s)
log "building $image from Dockerfile (log: $work/build.log)"
if ! pod build --format docker --network host --build-arg "BASE_IMAGE=$base_image" \
    -t "$image" -f Dockerfile . >"$work/build.log" 2>&1; then
  tail -n 40 "$work/build.log" >&2
  fail 'image build failed'
fi
size=$(pod image inspect --format '{{.Size}}' "$image")
log "built $image, $(( size / 1000000 )) MB ($(elapsed "$t"); $(grep -c -- '--> Using cache' "$work/build.log" || true) steps from cache)"

# ---- image defaults ----------------------------------------------------------------------------
[ "$(pod image inspect --format '{{.Config.User}}' "$image")" = leads ] || fail 'image does not run as user leads'
pod run --rm --no-healthcheck --entrypoint /bin/sh "$image" -c \
  'test "$(id -u)" = 10001 && test "$PWD" = /var/lib/leads && test "$LEADS_HOST" = 0.0.0.0 &&
   test -d /app/dist/migrations && ! test -e /app/dist/test && ! test -e /app/dist/bench &&
   ! test -e /app/node_modules/typescript && ! test -w /app' \
  || fail 'image layout: expected uid 10001, WORKDIR /var/lib/leads, LEADS_HOST=0.0.0.0, dist without test/bench, no dev deps, read-only /app'
log 'image: user leads (10001), WORKDIR /var/lib/leads, no tests, bench or dev dependencies'

# Embedded mode with no configuration: the native better-sqlite3 addon loads and the SQLite file
# lands in the data directory, on a volume as docs/container.md describes.
containers+=("$name-sqlite")
pod run --rm --name "$name-sqlite" --no-healthcheck -v "$name-data:/var/lib/leads" "$image" migrate \
  >"$work/sqlite.log" 2>&1 || { cat "$work/sqlite.log" >&2; fail 'migrate on the embedded SQLite store failed'; }
pod run --rm --no-healthcheck -v "$name-data:/var/lib/leads" --entrypoint /bin/sh "$image" -c 'test -s .leads/leads.db' \
  || fail 'no SQLite database in /var/lib/leads/.leads'
log 'embedded SQLite: migrate wrote /var/lib/leads/.leads/leads.db'

# ---- MariaDB + Redis ---------------------------------------------------------------------------
sql "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\` CHARACTER SET utf8mb4"
redis-cli -h "${redis_hostport%:*}" -p "${redis_hostport##*:}" -n "$redis_db" flushdb >/dev/null
master_key=$(od -An -vtx1 -N32 /dev/urandom | tr -d ' \n')
env_args=(
  -e "LEADS_DATABASE_URL=mysql://$mysql_server/$db"
  -e "LEADS_REDIS_URL=$redis_url"
  -e "LEADS_MASTER_KEY=$master_key"
  -e LEADS_LOG_LEVEL=warn
)
cli() {
  local n=$name-cli-$((${#containers[@]} + 1))
  containers+=("$n")
  pod run --rm --name "$n" --network host --no-healthcheck "${env_args[@]}" "$image" "$@"
}

log "migrate against mysql://$mysql_server/$db"
cli migrate >"$work/migrate.log" 2>&1 || { cat "$work/migrate.log" >&2; fail 'migrate failed'; }

cli customers create --name 'Container Smoke' --json >"$work/customer.json" \
  || fail 'customers create failed'
customer=$(sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' "$work/customer.json" | head -n 1)
[ -n "$customer" ] || fail "no id in: $(cat "$work/customer.json")"
log "customer $customer"

cli keys issue --customer "$customer" --scope public_api:leads:read --json >"$work/key.json" \
  || fail 'keys issue failed'
token=$(sed -n 's/.*"token": *"\([^"]*\)".*/\1/p' "$work/key.json" | head -n 1)
[ -n "$token" ] || fail 'no token in the keys issue output'
log 'key issued (public_api:leads:read)'

# A port nobody listens on (bash's /dev/tcp connects only where something does).
port=
for candidate in $(shuf -i 20000-39999 -n 50); do
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then port=$candidate; break; fi
done
[ -n "$port" ] || fail 'no free port'

containers+=("$name-daemon")
# Without systemd, podman logs that it cannot schedule the periodic healthcheck timer; that
# noise goes to a file. `podman healthcheck run` below runs the check itself.
pod run -d --name "$name-daemon" --network host "${env_args[@]}" -e "LEADS_PORT=$port" "$image" \
  >"$work/daemon-run.log" 2>&1 || { cat "$work/daemon-run.log" >&2; fail 'daemon container did not start'; }
log "daemon container on port $port"

base_url="http://127.0.0.1:$port"
t=$(date +%s)
until curl -fsS -o /dev/null "$base_url/healthz" 2>/dev/null; do
  [ "$(pod inspect --format '{{.State.Running}}' "$name-daemon")" = true ] || fail 'daemon container exited'
  [ $(( $(date +%s) - t )) -lt 60 ] || fail 'no /healthz answer within 60 s'
  sleep 0.5
done
log "/healthz ok ($(elapsed "$t"))"

code=$(curl -sS -o "$work/ready.json" -w '%{http_code}' "$base_url/readyz")
[ "$code" = 200 ] && grep -q '"redis":true' "$work/ready.json" \
  || fail "/readyz: HTTP $code $(cat "$work/ready.json")"
log '/readyz: database and Redis ready'

code=$(curl -sS -o "$work/leads.json" -w '%{http_code}' \
  -H "Authorization: Bearer $token" -H "x-customer-id: $customer" "$base_url/api/agents/crm/leads")
[ "$code" = 200 ] || fail "GET /api/agents/crm/leads: HTTP $code $(cat "$work/leads.json")"
grep -q '"total":0' "$work/leads.json" || fail "unexpected list body: $(cat "$work/leads.json")"
log 'GET /api/agents/crm/leads with the key: 200, total 0'

if pod healthcheck run "$name-daemon" >"$work/health.log" 2>&1; then
  log "HEALTHCHECK: healthy"
else
  cat "$work/health.log" >&2
  fail 'the image HEALTHCHECK reported unhealthy'
fi

# The daemon is PID 1: it must stop on SIGTERM within the grace period, not be killed.
t=$(date +%s)
# (podman also complains there that it has no systemd timer to remove: that goes to a file.)
pod stop -t 20 "$name-daemon" >"$work/stop.log" 2>&1 || { cat "$work/stop.log" >&2; fail 'podman stop failed'; }
exit_code=$(pod inspect --format '{{.State.ExitCode}}' "$name-daemon")
[ "$exit_code" != 137 ] || fail 'daemon ignored SIGTERM and was killed'
log "daemon stopped on SIGTERM in $(elapsed "$t") (exit code $exit_code)"

log "done in $(elapsed)"
echo 'container smoke: ok'
