# Image of the lead service: `leads daemon` by default, any other `leads` command as arguments:
#   docker build -t leads .
#   docker run --rm -p 8080:8080 -v leads-data:/var/lib/leads leads
#   docker run --rm -e LEADS_DATABASE_URL=... -e LEADS_MASTER_KEY=... leads migrate
# See docs/container.md.

# Both stages start from the same Node 22 image, so the better-sqlite3 addon compiled in the
# build stage matches the runtime's Node ABI and glibc. Override it to use a mirror or a local base.
ARG BASE_IMAGE=node:22-bookworm-slim

# ---- build: dev dependencies, TypeScript compile, then production-only node_modules ----------
FROM ${BASE_IMAGE} AS build

# better-sqlite3 is a native addon; with no prebuilt binary to fetch, node-gyp compiles it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# node-gyp builds against the headers that come with this Node (/usr/local/include/node)
# instead of downloading them from the Node.js project; npm's update check is only noise in a build.
ENV npm_config_nodedir=/usr/local \
    npm_config_update_notifier=false

# The dependency layer is reused until package.json, package-lock.json or the patches change
# (npm ci's postinstall applies patches/ to the installed packages with patch-package, and runs
# scripts/install-tools.js, which finds no tools/ here: the image needs none).
COPY package.json package-lock.json ./
COPY patches ./patches
COPY scripts/install-tools.js ./scripts/
RUN npm ci --no-audit --no-fund

# Sources (.dockerignore keeps test/, bench/, docs and local artefacts out, so dist/ gets neither
# dist/test nor dist/bench).
COPY . .
# Compile, drop dev dependencies, and keep only what better-sqlite3 loads at run time
# (build/Release/better_sqlite3.node): its SQLite sources and compiler intermediates are ~25 MB.
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && cd node_modules/better-sqlite3 \
 && rm -rf deps src build/deps build/Release/obj build/Release/obj.target build/Release/.deps \
           build/Release/sqlite3.a build/Release/test_extension.node

# ---- runtime ----------------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS runtime

# MALLOC_ARENA_MAX=2: glibc gives each of Node's threads (libuv pool, V8's GC helpers) a malloc
# arena of its own, and memory freed in them stays resident; with two arenas the daemon's RSS
# under the soak swung 170-245 MB instead of 170-280 MB and returned to its floor more often.
ENV NODE_ENV=production \
    LEADS_HOST=0.0.0.0 \
    MALLOC_ARENA_MAX=2

# An unprivileged user whose home is the data directory: the default
# LEADS_DATABASE_URL (sqlite://./.leads/leads.db) and the generated embedded-mode master key land
# in /var/lib/leads/.leads. Mount a volume there to keep them (no VOLUME line, so one-off
# commands against MySQL don't each leave an anonymous volume behind).
RUN groupadd --gid 10001 leads \
 && useradd --no-log-init --uid 10001 --gid leads --home-dir /var/lib/leads --shell /usr/sbin/nologin leads \
 && install -d -o leads -g leads -m 0750 /var/lib/leads

# Application files stay root-owned: the service user can run them but not change them.
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/bin ./bin
COPY --from=build /app/dist ./dist

WORKDIR /var/lib/leads
USER leads
EXPOSE 8080

# Slim images have no curl; Node 22's fetch does the probe.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.LEADS_PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

# `leads` is the entry point: `docker run IMAGE keys issue --customer ...` runs an operator command.
ENTRYPOINT ["node", "/app/bin/run.js"]
CMD ["daemon"]
