#!/usr/bin/env bash
# What `npm test` needs before the tests run, installed when missing, so that the README's test line passes by
# itself on a fresh Debian or Ubuntu machine that has Node.js and npm (and does nothing but check when all is there):
# - Debian packages: Chromium for the browser tests (test/browser/, driven by playwright-core at /usr/bin/chromium;
#   no browser is ever downloaded); ffmpeg and python3 for the media tests (never skipped) and the build's yt-dlp
#   zipapp; systemd for systemd-analyze, which checks the installed unit (no systemd runs, only its analyser);
#   postgresql for the PostgreSQL tests (test/support/postgres.ts starts its own servers in temporary directories,
#   as the postgres user when run as root; the package's own cluster is not used);
# - a yt-dlp of 2024.07.01 or later from the distribution (scripts/apt-ytdlp.sh: Debian 12 takes it from its
#   backports, as its own is too old to be run);
# - the npm packages of package-lock.json (npm ci), again whenever the lockfile changes.
# apt-get runs through sudo when not root.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(chromium ffmpeg python3 systemd postgresql)
missing=()
for p in "${APT_PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  sudo=()
  [[ $(id -u) == 0 ]] || sudo=(sudo)
  echo "test-setup: installing ${missing[*]} with apt-get"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

bash scripts/apt-ytdlp.sh >/dev/null

# npm ci again only when package-lock.json is not the one node_modules was installed from.
stamp=node_modules/.linkbox-lock-sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  echo "test-setup: npm ci"
  npm ci --no-audit --no-fund
  echo "$want" >"$stamp"
fi
