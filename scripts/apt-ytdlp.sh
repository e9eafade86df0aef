#!/usr/bin/env bash
# Installs a yt-dlp that is recent enough to run (SPEC §6: 2024.07.01 or later — older releases let a page tell
# yt-dlp to bypass the guard proxy, CVE-2023-46121) from the distribution's own packages. Where the release's main
# suite carries an older one (Debian 12 has 2023.03.04), the release's backports suite is added, from the same
# mirror that this machine's apt configuration already uses for the release (asked of apt itself, so no host name
# is written anywhere), and yt-dlp is taken from there.
#
#   bash scripts/apt-ytdlp.sh          (root, or a user with sudo)
#
# Exits 0 with a yt-dlp ≥ 2024.07.01 on PATH, non-zero with a sentence saying why not.
set -euo pipefail

MIN=2024.07.01
sudo=()
[[ $(id -u) == 0 ]] || sudo=(sudo)
apt_get() { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -y -qq "$@"; }

# yt-dlp versions are dates (YYYY.MM.DD[.N]); sort -V orders them correctly.
recent() { [[ -n "$1" && $(printf '%s\n%s\n' "$MIN" "$1" | sort -V | head -1) == "$MIN" ]]; }
installed() { dpkg-query -W -f '${Status} ${Version}\n' yt-dlp 2>/dev/null | sed -n 's/^install ok installed \([0-9.]*\).*/\1/p'; }
candidate() { apt-cache policy "$@" yt-dlp 2>/dev/null | sed -n 's/^ *Candidate: *\([0-9.]*\).*/\1/p'; }

if recent "$(installed)"; then
  echo "yt-dlp $(installed) is installed (≥ $MIN)"
  exit 0
fi

. /etc/os-release
codename=${VERSION_CODENAME:-}
[[ -n $codename ]] || { echo "apt-ytdlp: /etc/os-release names no release codename; install a yt-dlp ≥ $MIN by hand" >&2; exit 1; }

[[ -n $(apt-cache policy 2>/dev/null | grep -m1 "n=$codename,") ]] || apt_get update

if ! recent "$(candidate)"; then
  # The mirror this machine already uses for the release's main suite, as apt reports it.
  site=$(apt-get indextargets --format '$(SITE) $(RELEASE)' 2>/dev/null | awk -v r="$codename" '$2 == r { print $1; exit }')
  [[ -n $site ]] || { echo "apt-ytdlp: no apt source serves $codename; cannot add $codename-backports" >&2; exit 1; }
  components=main
  [[ ${ID:-} == ubuntu ]] && components='main universe'
  list=/etc/apt/sources.list.d/linkbox-backports.list
  echo "apt-ytdlp: yt-dlp $(candidate) in $codename is older than $MIN; adding $codename-backports from $site"
  echo "deb $site $codename-backports $components" | "${sudo[@]}" tee "$list" >/dev/null
  apt_get update
fi

backports=()
recent "$(candidate)" || backports=(-t "$codename-backports")
apt_get install "${backports[@]}" yt-dlp
have=$(installed)
recent "$have" || { echo "apt-ytdlp: the distribution offers yt-dlp ${have:-none}, older than $MIN; install a newer one by hand (linkbox refuses older ones)" >&2; exit 1; }
echo "yt-dlp $have is installed (≥ $MIN)"
