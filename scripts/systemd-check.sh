#!/usr/bin/env bash
# The half of install.sh that the tests cannot run: the real systemd. It boots Debian 12 with systemd as
# PID 1 in a container (debootstrap + systemd-nspawn; no systemd is needed on this machine) and runs, in
# there, what a home-server owner runs: install.sh, then the service's life — answers, mail, media, reload,
# a crash, backup/restore, an upgrade re-run, uninstall and purge. One line per check; exit 1 on a failure.
#
#   sudo bash scripts/systemd-check.sh        (root; needs the network for debootstrap and apt-get)
#
# It is not part of `npm test`: it downloads Debian (about 230 MB with python3 and ffmpeg) and needs root
# and namespaces. The container shares this machine's network, so ports 8080, 2525, 80 and 18097 must be free here.
# The bare root file system is kept in $LINKBOX_CHECK_ROOTFS (default /var/tmp/linkbox-check-rootfs) for
# the next run; each run works on a fresh copy, removed at the end.
# ok() never fails, so "test && ok … || bad …" below is an if-else.
# shellcheck disable=SC2015
set -euo pipefail
cd "$(dirname "$0")/.."
CHECKOUT=$PWD

say() { printf 'systemd-check: %s\n' "$*"; }
die() { printf 'systemd-check: %s\n' "$*" >&2; exit 1; }
FAILED=0
ok() { printf 'ok    %s\n' "$*"; }
bad() { printf 'FAIL  %s\n' "$*"; FAILED=1; }
check() { # check "what" command...: ok when the command succeeds
  local what=$1
  shift
  if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what"; fi
}

[[ $(id -u) == 0 ]] || die "must run as root (sudo bash $0)"
for port in 8080 2525 80 18097; do # 18097: the media fixture page, served here
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then die "port $port is in use here; the container shares this machine's network"; fi
done
need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v systemd-nspawn >/dev/null || need+=(systemd-container)
command -v ffmpeg >/dev/null || need+=(ffmpeg)
command -v curl >/dev/null || need+=(curl)
if ((${#need[@]})); then
  say "installing ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The binary of this checkout as it is (a second or two when the bundled yt-dlp is cached).
BINARY=$CHECKOUT/dist/linkbox
[[ -x node_modules/.bin/bun ]] || die "node_modules/.bin/bun is missing: npm ci first"
./node_modules/.bin/bun scripts/build.ts >/dev/null || die "the build failed: npm run build says why"

ROOTFS=${LINKBOX_CHECK_ROOTFS:-/var/tmp/linkbox-check-rootfs}
if [[ ! -x $ROOTFS/lib/systemd/systemd ]]; then
  say "debootstrap of Debian 12 into $ROOTFS (once)"
  rm -rf -- "$ROOTFS"
  # The mirror this machine's apt already uses for bookworm, as apt reports it (no host name is written here).
  MIRROR=$(apt-get indextargets --format '$(SITE) $(RELEASE)' 2>/dev/null | awk '$2 == "bookworm" { print $1; exit }')
  [[ -n $MIRROR ]] || die "no apt source of this machine serves bookworm: debootstrap needs its mirror"
  debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus bookworm "$ROOTFS" "$MIRROR" >/dev/null
fi

WORK=$(mktemp -d /var/tmp/linkbox-check.XXXXXX)
R=$WORK/root
NSPAWN_PID=""
FIXTURE_PID=""
cleanup() {
  [[ -z $FIXTURE_PID ]] || kill "$FIXTURE_PID" 2>/dev/null || true
  if [[ -n $NSPAWN_PID ]]; then
    kill "$NSPAWN_PID" 2>/dev/null || true # SIGTERM: systemd in there shuts down
    for _ in $(seq 1 30); do kill -0 "$NSPAWN_PID" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$NSPAWN_PID" 2>/dev/null || true
  fi
  rm -rf -- "$WORK"
}
trap cleanup EXIT
say "copying the root file system to $R"
cp -a --reflink=auto -- "$ROOTFS" "$R"
echo linkbox-check >"$R/etc/hostname"
mkdir -p "$R/root/release"
cp -- "$BINARY" scripts/install.sh scripts/linkbox.service linkbox.example.toml "$R/root/release/"

say "booting it with systemd-nspawn"
systemd-nspawn -D "$R" -b --register=no --keep-unit -M linkbox-check --console=pipe >"$WORK/console.log" 2>&1 &
NSPAWN_PID=$!
INIT=""
for _ in $(seq 1 100); do
  INIT=$(pgrep -P "$NSPAWN_PID" -x systemd || true)
  [[ -n $INIT ]] && break
  sleep 0.2
done
[[ -n $INIT ]] || die "the container's systemd did not start: $(cat "$WORK/console.log")"
in_box() { nsenter -t "$INIT" -a -- "$@"; }
state=""
for _ in $(seq 1 100); do
  state=$(in_box systemctl is-system-running 2>/dev/null || true)
  [[ $state == running || $state == degraded ]] && break
  sleep 0.3
done
[[ $state == running || $state == degraded ]] || die "the container did not finish booting (state: $state)"
ok "systemd $(in_box systemctl --version | head -1 | cut -d' ' -f2) is PID 1 in the container ($state)"

# ----- install ----------------------------------------------------------------------------------------------
if in_box bash /root/release/install.sh >"$WORK/install.log" 2>&1; then ok "install.sh exits 0"; else bad "install.sh exits 0: $(tail -5 "$WORK/install.log")"; fi
KEY=$(awk '/API key:/ { print $3 }' "$WORK/install.log")
[[ $KEY == lbk_* ]] && ok "it printed the first admin's API key" || bad "it printed the first admin's API key"
grep -q 'URL: *http://localhost:8080' "$WORK/install.log" && ok "it printed the URL" || bad "it printed the URL"
check "python3 and ffmpeg installed with apt-get" in_box sh -c 'command -v python3 && command -v ffmpeg'
check "the unit is enabled" in_box systemctl is-enabled linkbox
check "the unit is active" in_box systemctl is-active linkbox
[[ $(in_box stat -c %U "$(in_box systemctl show -p MainPID --value linkbox | sed 's|^|/proc/|')") == linkbox ]] &&
  ok "the service runs as the user linkbox" || bad "the service runs as the user linkbox"
modes=$(in_box stat -c '%a %U:%G %n' /usr/local/bin/linkbox /etc/linkbox/linkbox.toml /var/lib/linkbox /var/lib/linkbox/linkbox.db /var/lib/linkbox/secrets/signing.key | tr '\n' ';')
[[ $modes == "755 root:root /usr/local/bin/linkbox;640 root:linkbox /etc/linkbox/linkbox.toml;700 linkbox:linkbox /var/lib/linkbox;600 linkbox:linkbox /var/lib/linkbox/linkbox.db;600 linkbox:linkbox /var/lib/linkbox/secrets/signing.key;" ]] &&
  ok "files, modes and owners" || bad "files, modes and owners: $modes"
rating=$(in_box systemd-analyze security linkbox --no-pager 2>&1 | grep -o 'Overall exposure level for linkbox.service: .*' || true)
[[ $rating =~ :\ [0-9.]+\ (OK|SAFE) ]] && ok "systemd-analyze security linkbox: ${rating#*: }" || bad "systemd-analyze security linkbox: $rating"

# ----- what it serves -------------------------------------------------------------------------------------
B=http://127.0.0.1:8080
check "GET /healthz answers 200" curl -fsS "$B/healthz"
CODE=$(curl -fsS -X POST "$B/api/getLink.json" -H "X-Api-Key: $KEY" -d url=https://example.com/systemd-check | sed -n 's/.*"hex":"\([^"]*\)".*/\1/p')
[[ -n $CODE ]] && ok "getLink.json makes a link ($CODE)" || bad "getLink.json makes a link"
[[ $(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' -A 'Mozilla/5.0 (X11; Linux x86_64) Chrome/124.0' "$B/$CODE") == '302 https://example.com/systemd-check' ]] &&
  ok "/$CODE redirects (302)" || bad "/$CODE redirects (302)"
curl -fsS "$B/api/mailbox.json?address=check" -H "X-Api-Key: $KEY" >/dev/null
python3 - <<'EOF' && ok "SMTP on 2525 takes a message for check@localhost" || bad "SMTP on 2525 takes a message for check@localhost"
import smtplib
with smtplib.SMTP('127.0.0.1', 2525, timeout=10) as s:
    s.sendmail('a@example.org', ['check@localhost'], 'Subject: systemd-check\r\n\r\nhello\r\n')
EOF
sleep 0.3
curl -fsS "$B/api/mailbox.json?address=check" -H "X-Api-Key: $KEY" | grep -q '"messages":1' && ok "the mailbox holds it" || bad "the mailbox holds it"

# Media: yt-dlp (bundled, on python3) inside the sandbox, against a page served here.
mkdir -p "$WORK/fixture"
ffmpeg -loglevel error -f lavfi -i testsrc=duration=1:size=64x64:rate=10 -pix_fmt yuv420p "$WORK/fixture/clip.mp4"
FPORT=18097
printf '<html><head><title>Fixture clip</title></head><body><video src="clip.mp4"></video></body></html>' >"$WORK/fixture/index.html"
(cd "$WORK/fixture" && exec python3 -m http.server "$FPORT" --bind 127.0.0.1 >/dev/null 2>&1) &
FIXTURE_PID=$!
in_box sed -i 's/^allow_private_networks = false/allow_private_networks = true/' /etc/linkbox/linkbox.toml
in_box systemctl restart linkbox
for _ in $(seq 1 50); do curl -fsS "$B/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
DL=$(curl -fsS "$B/api/download.json?url=http%3A%2F%2F127.0.0.1%3A$FPORT%2F" -H "X-Api-Key: $KEY" | grep -o 'http://localhost:8080/dl/[^"]*' | tail -1 || true)
[[ -n $DL ]] && ok "download.json runs yt-dlp under the unit's sandbox" || bad "download.json runs yt-dlp under the unit's sandbox"
curl -fsS -o "$WORK/got.mp4" "${DL/localhost/127.0.0.1}" && cmp -s "$WORK/got.mp4" "$WORK/fixture/clip.mp4" &&
  ok "its signed /dl link gives the file's bytes" || bad "its signed /dl link gives the file's bytes"

# ----- reload, a crash, a bad config ------------------------------------------------------------------------
in_box sed -i 's/^anon_per_minute = .*/anon_per_minute = 45/' /etc/linkbox/linkbox.toml
check "systemctl reload linkbox exits 0" in_box systemctl reload linkbox
sleep 0.3
in_box journalctl -u linkbox --no-pager -o cat | grep -q 'SIGHUP: config .* applied rate.anon_per_minute' &&
  ok "the reload applied rate.anon_per_minute (journal)" || bad "the reload applied rate.anon_per_minute (journal)"
in_box journalctl -u linkbox --no-pager -o cat | grep -q '"msg":"request".*"path":"/healthz"' &&
  ok "request lines reach the journal as JSON" || bad "request lines reach the journal as JSON"
pid1=$(in_box systemctl show -p MainPID --value linkbox)
in_box sh -c "kill -9 $pid1"
sleep 3.5
pid2=$(in_box systemctl show -p MainPID --value linkbox)
[[ $pid2 != "$pid1" && $pid2 != 0 ]] && curl -fsS "$B/healthz" >/dev/null && ok "after kill -9 it is restarted ($pid1 → $pid2)" || bad "after kill -9 it is restarted"
in_box cp /etc/linkbox/linkbox.toml /root/linkbox.toml.good
printf '\n[nonsense]\nx = 1\n' | in_box sh -c 'cat >> /etc/linkbox/linkbox.toml'
in_box systemctl restart linkbox || true
sleep 2.5
[[ $(in_box systemctl is-failed linkbox || true) == failed && $(in_box systemctl show -p NRestarts --value linkbox) == 0 ]] &&
  ok "a config error (exit 2) fails the unit without restarting it" || bad "a config error (exit 2) fails the unit without restarting it"
in_box cp /root/linkbox.toml.good /etc/linkbox/linkbox.toml
in_box systemctl reset-failed linkbox
in_box systemctl start linkbox
for _ in $(seq 1 50); do curl -fsS "$B/healthz" >/dev/null 2>&1 && break; sleep 0.2; done

# ----- backup and restore ------------------------------------------------------------------------------------
as_linkbox() { in_box runuser -u linkbox -- linkbox "$@" --config /etc/linkbox/linkbox.toml; }
check "linkbox backup while the service runs" as_linkbox backup /var/lib/linkbox/check.tar
if as_linkbox restore /var/lib/linkbox/check.tar --force >/dev/null 2>&1; then bad "restore refuses while the service runs"; else ok "restore refuses while the service runs"; fi
curl -fsS -X POST "$B/api/getLink.json" -H "X-Api-Key: $KEY" -d url=https://example.com/after-backup >/dev/null
in_box systemctl stop linkbox
[[ $(in_box systemctl show -p ExecMainStatus --value linkbox) == 0 ]] && ok "systemctl stop: linkbox exits 0 (SIGTERM)" || bad "systemctl stop: linkbox exits 0 (SIGTERM)"
check "restore --force with the service stopped" as_linkbox restore /var/lib/linkbox/check.tar --force
in_box systemctl start linkbox
for _ in $(seq 1 50); do curl -fsS "$B/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
links=$(curl -fsS -X POST "$B/api/links.json" -H "X-Api-Key: $KEY")
[[ $links == *systemd-check* && $links != *after-backup* ]] && ok "after the restore: the backup's links, not the later one" || bad "after the restore: the backup's links, not the later one"

# ----- re-run (upgrade), uninstall, purge --------------------------------------------------------------------
if in_box bash /root/release/install.sh >"$WORK/rerun.log" 2>&1; then ok "a re-run of install.sh exits 0"; else bad "a re-run of install.sh exits 0: $(tail -5 "$WORK/rerun.log")"; fi
grep -q 'stopping linkbox to upgrade it' "$WORK/rerun.log" && grep -q 'accounts exist already' "$WORK/rerun.log" &&
  ok "it stopped, replaced and started it, and made no second account" || bad "it stopped, replaced and started it, and made no second account"
in_box grep -q '^allow_private_networks = true' /etc/linkbox/linkbox.toml && ok "it kept the edited config" || bad "it kept the edited config"
[[ $(curl -s -o /dev/null -w '%{http_code}' -A 'Mozilla/5.0 (X11; Linux x86_64) Chrome/124.0' "$B/$CODE") == 302 ]] && ok "the link still redirects" || bad "the link still redirects"
# A port below 1024: a re-run grants CAP_NET_BIND_SERVICE, and the unprivileged service binds port 80.
in_box sed -i 's/^port = 8080/port = 80/' /etc/linkbox/linkbox.toml
in_box bash /root/release/install.sh >"$WORK/port80.log" 2>&1 || true
in_box grep -qx 'AmbientCapabilities=CAP_NET_BIND_SERVICE' /etc/systemd/system/linkbox.service && curl -fsS http://127.0.0.1:80/healthz >/dev/null &&
  ok "port 80: the unit gains CAP_NET_BIND_SERVICE and the service answers there" || bad "port 80: the unit gains CAP_NET_BIND_SERVICE and the service answers there: $(tail -3 "$WORK/port80.log")"
rating=$(in_box systemd-analyze security linkbox --no-pager 2>&1 | grep -o 'Overall exposure level for linkbox.service: .*' || true)
[[ $rating =~ :\ [0-9.]+\ (OK|SAFE) ]] && ok "port 80: systemd-analyze security linkbox: ${rating#*: }" || bad "port 80: systemd-analyze security linkbox: $rating"
in_box sed -i 's/^port = 80$/port = 8080/' /etc/linkbox/linkbox.toml
in_box bash /root/release/install.sh >"$WORK/port8080.log" 2>&1 || true
! in_box grep -q '^AmbientCapabilities=' /etc/systemd/system/linkbox.service && in_box grep -qx 'CapabilityBoundingSet=' /etc/systemd/system/linkbox.service && curl -fsS "$B/healthz" >/dev/null &&
  ok "back on 8080: the capability is gone again" || bad "back on 8080: the capability is gone again"
check "install.sh --uninstall" in_box bash /root/release/install.sh --uninstall
[[ $(in_box systemctl is-active linkbox || true) != active ]] && ! in_box test -e /usr/local/bin/linkbox && in_box test -e /var/lib/linkbox/linkbox.db && in_box test -e /etc/linkbox/linkbox.toml &&
  ok "stopped, binary and unit gone, config and data kept" || bad "stopped, binary and unit gone, config and data kept"
check "install.sh --uninstall --purge" in_box bash /root/release/install.sh --uninstall --purge
! in_box test -e /var/lib/linkbox && ! in_box test -e /etc/linkbox && ok "config and data gone" || bad "config and data gone"

if ((FAILED)); then
  say "some checks failed; the service's last journal lines in the container:"
  in_box journalctl -u linkbox -n 20 --no-pager -o cat || true
  exit 1
fi
say "all checks passed"
