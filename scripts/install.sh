#!/usr/bin/env bash
# Installs linkbox as a systemd service on Debian/Ubuntu in one command (SPEC §10): the binary, a system
# user, /etc/linkbox/linkbox.toml, the data directory, python3 and ffmpeg for media download, the unit, and
# a first admin account. A re-run upgrades the binary and keeps config and data; --uninstall removes it.
# It exists so that a home-server install is one reviewed script instead of a page of commands to copy.
#
#   sudo bash scripts/install.sh                   from a checkout (builds dist/linkbox when it is missing)
#   sudo bash install.sh                           from a folder holding linkbox, install.sh, linkbox.service
#                                                  and linkbox.example.toml
#   sudo bash scripts/install.sh --binary PATH     a linkbox binary from elsewhere
#   bash scripts/install.sh --root DIR --no-systemctl   into DIR instead of / (tests, packagers)
set -euo pipefail

usage() {
  cat <<'EOF'
usage: install.sh [--binary PATH] [--root DIR] [--no-systemctl]
       install.sh --uninstall [--purge] [--root DIR] [--no-systemctl]

Installs linkbox as a systemd service: /usr/local/bin/linkbox, the system user linkbox,
/etc/linkbox/linkbox.toml (never overwritten), /var/lib/linkbox, python3 and ffmpeg (apt-get),
/etc/systemd/system/linkbox.service; then enables and starts it, waits for /healthz and creates
the first admin account "admin" when there is none, printing its password and API key.
A re-run upgrades the binary (stop, replace, start) and keeps config and data.

  --binary PATH    the linkbox binary to install (default: ./linkbox beside this script, else
                   the checkout's dist/linkbox, built with npm ci && npm run build when missing)
  --root DIR       install under DIR instead of / (for tests and packagers). Without root
                   privileges the user and file ownership are skipped; apt-get and systemctl
                   are always skipped there
  --no-systemctl   skip only systemctl (daemon-reload, enable, start), the /healthz wait and
                   the first account
  --uninstall      stop and disable the service, remove the binary and the unit; keeps the
                   config and the data
  --purge          with --uninstall: remove the config and the data too (the user stays)
  --help           this text
EOF
}

say() { printf 'install.sh: %s\n' "$*"; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

ROOT=""
BINARY=""
USE_SYSTEMCTL=1
UNINSTALL=0
PURGE=0
while (($#)); do
  case $1 in
    --root) (($# >= 2)) || die "--root needs a directory"; ROOT=$2; shift 2 ;;
    --root=*) ROOT=${1#*=}; shift ;;
    --binary) (($# >= 2)) || die "--binary needs a path"; BINARY=$2; shift 2 ;;
    --binary=*) BINARY=${1#*=}; shift ;;
    --no-systemctl) USE_SYSTEMCTL=0; shift ;;
    --uninstall) UNINSTALL=1; shift ;;
    --purge) PURGE=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
((PURGE == 0 || UNINSTALL == 1)) || die "--purge goes with --uninstall"
[[ -z $BINARY || $UNINSTALL == 0 ]] || die "--binary does not go with --uninstall"

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
IS_ROOT=0
[[ $(id -u) == 0 ]] && IS_ROOT=1

# --root: a folder standing for /. Everything written goes under it, and nothing touches this machine's
# services, packages or users (except useradd --root into DIR's own /etc/passwd, when there is one).
if [[ -n $ROOT ]]; then
  mkdir -p -- "$ROOT" || die "--root $ROOT: cannot create it"
  ROOT=$(cd -- "$ROOT" && pwd)
  [[ $ROOT == / ]] && ROOT=""
fi
if [[ -n $ROOT ]]; then
  if ((USE_SYSTEMCTL)); then
    say "--root: skipping systemctl, the /healthz wait and the first account (as with --no-systemctl)"
    USE_SYSTEMCTL=0
  fi
else
  ((IS_ROOT)) || die "must run as root (sudo bash $0 …), or with --root DIR to install into a folder"
fi

BIN_PATH=/usr/local/bin/linkbox
CONF_PATH=/etc/linkbox/linkbox.toml
UNIT_PATH=/etc/systemd/system/linkbox.service
DEFAULT_DATA=/var/lib/linkbox

# Temporary files beside their targets (then renamed into place), removed if the script stops half-way.
TMPFILES=()
cleanup() { ((${#TMPFILES[@]} == 0)) || rm -f -- "${TMPFILES[@]}"; }
trap cleanup EXIT
tmp_beside() { # prints a new temporary file in the folder of $1
  local t
  t=$(mktemp -- "$(dirname -- "$1")/.$(basename -- "$1").XXXXXX") || die "$(dirname -- "$1"): cannot write there"
  TMPFILES+=("$t")
  printf '%s\n' "$t"
}

# toml_get SECTION KEY FILE: the value of KEY in [SECTION] ("" = the top level), quotes and comment removed.
# Enough for linkbox.toml as the example lays it out (one key a line; no dotted keys, no escapes).
toml_get() {
  awk -v sec="$1" -v key="$2" '
    /^[[:space:]]*\[/ { s = $0; sub(/#.*/, "", s); gsub(/[][[:space:]]/, "", s); cur = s; next }
    cur == sec {
      line = $0; sub(/^[[:space:]]+/, "", line)
      if (index(line, key) != 1) next
      rest = substr(line, length(key) + 1)
      if (rest !~ /^[[:space:]]*=/) next
      sub(/^[[:space:]]*=[[:space:]]*/, "", rest)
      if (rest ~ /^"/) { rest = substr(rest, 2); rest = substr(rest, 1, index(rest, "\"") - 1) }
      else { sub(/[[:space:]]*#.*$/, "", rest); sub(/[[:space:]]+$/, "", rest) }
      print rest; exit
    }' "$3"
}

# The data directory the config names (absolute, as linkbox resolves it: relative to the config's folder).
data_dir_of() {
  local d
  d=$(toml_get "" data_dir "$1")
  [[ -n $d ]] || d=./data
  [[ $d == /* ]] || d="$(dirname -- "$CONF_PATH")/${d#./}"
  printf '%s\n' "$d"
}

# ----- the linkbox user: on this machine, or in --root's own /etc/passwd when root; else skipped ---------
HAVE_USER=0
LB_UID=""
LB_GID=""
lookup_user() {
  if [[ -n $ROOT ]]; then
    [[ -f $ROOT/etc/passwd ]] || return 1
    LB_UID=$(awk -F: '$1 == "linkbox" { print $3 }' "$ROOT/etc/passwd")
    LB_GID=$(awk -F: '$1 == "linkbox" { print $4 }' "$ROOT/etc/passwd")
  else
    LB_UID=$(id -u linkbox 2>/dev/null) || LB_UID=""
    LB_GID=$(id -g linkbox 2>/dev/null) || LB_GID=""
  fi
  [[ -n $LB_UID && -n $LB_GID ]]
}
ensure_user() {
  if lookup_user; then
    HAVE_USER=1
    return
  fi
  if [[ -n $ROOT ]] && ! ((IS_ROOT)); then
    say "not root: skipping the user linkbox and file ownership under --root (files stay yours)"
    return
  fi
  if [[ -n $ROOT && ! -f $ROOT/etc/passwd ]]; then
    say "$ROOT/etc/passwd does not exist: skipping the user linkbox and file ownership under --root"
    return
  fi
  local args=(--system --user-group --home-dir "$DEFAULT_DATA" --no-create-home --shell /usr/sbin/nologin
    --comment "linkbox service")
  [[ -z $ROOT ]] || args+=(--root "$ROOT")
  useradd "${args[@]}" linkbox || die "useradd linkbox failed"
  say "created the system user linkbox"
  lookup_user || die "useradd linkbox succeeded but the user cannot be found"
  HAVE_USER=1
}
# own OWNER PATH: OWNER is "user" (linkbox:linkbox) or "group" (root:linkbox); numeric ids, so that a
# --root install uses the ids from DIR's /etc/passwd.
own() {
  ((HAVE_USER)) || return 0
  case $1 in
    user) chown -- "$LB_UID:$LB_GID" "$2" ;;
    group) chown -- "0:$LB_GID" "$2" ;;
  esac
}

systemctl_available() {
  command -v systemctl >/dev/null || die "systemctl not found: is this a systemd machine? (--no-systemctl skips it)"
}

# ----- uninstall ----------------------------------------------------------------------------------------
if ((UNINSTALL)); then
  if ((USE_SYSTEMCTL)); then
    systemctl_available
    if [[ -e $UNIT_PATH ]]; then
      systemctl disable --now linkbox || die "systemctl disable --now linkbox failed"
      say "stopped and disabled linkbox"
    fi
  else
    say "skipping systemctl: stop and disable the service yourself (systemctl disable --now linkbox)"
  fi
  rm -f -- "$ROOT$BIN_PATH" "$ROOT$UNIT_PATH"
  say "removed $ROOT$BIN_PATH and $ROOT$UNIT_PATH"
  if ((USE_SYSTEMCTL)); then systemctl daemon-reload; fi
  data=$DEFAULT_DATA
  [[ ! -f $ROOT$CONF_PATH ]] || data=$(data_dir_of "$ROOT$CONF_PATH")
  if ((PURGE)); then
    # Only a folder that is linkbox's: the default one, or one holding a linkbox database.
    if [[ $data != / && ($data == "$DEFAULT_DATA" || -e $ROOT$data/linkbox.db) ]]; then
      rm -rf -- "$ROOT$data"
      say "removed the data in $ROOT$data"
    elif [[ -e $ROOT$data ]]; then
      say "kept $ROOT$data: it holds no linkbox.db, so it may not be linkbox's; remove it yourself"
    fi
    rm -rf -- "$ROOT$(dirname -- "$CONF_PATH")"
    say "removed $ROOT$(dirname -- "$CONF_PATH")"
    say "the user linkbox stays (userdel linkbox removes it)"
  else
    say "kept the config $ROOT$CONF_PATH and the data in $ROOT$data (--purge removes them)"
  fi
  exit 0
fi

# ----- what to install ----------------------------------------------------------------------------------
find_beside() { # find_beside NAME: NAME next to this script, else in the folder above (a checkout)
  local f
  for f in "$SCRIPT_DIR/$1" "$SCRIPT_DIR/../$1"; do
    if [[ -f $f ]]; then
      printf '%s\n' "$f"
      return
    fi
  done
  die "$1 not found beside $SCRIPT_DIR (it comes with the checkout or the release folder)"
}
EXAMPLE=$(find_beside linkbox.example.toml)
UNIT_SRC=$(find_beside linkbox.service)

if [[ -n $BINARY ]]; then
  [[ -f $BINARY && -x $BINARY ]] || die "--binary $BINARY: not an executable file"
elif [[ -f $SCRIPT_DIR/linkbox && -x $SCRIPT_DIR/linkbox ]]; then
  BINARY=$SCRIPT_DIR/linkbox
elif [[ -f $SCRIPT_DIR/../package.json && -f $SCRIPT_DIR/build.ts ]]; then
  CHECKOUT=$(cd -- "$SCRIPT_DIR/.." && pwd)
  BINARY=$CHECKOUT/dist/linkbox
  if [[ ! -x $BINARY ]]; then
    command -v npm >/dev/null || die "$BINARY is missing and npm is not installed to build it (apt-get install npm, or give --binary PATH)"
    say "building $BINARY (npm ci && npm run build in $CHECKOUT)"
    (cd -- "$CHECKOUT" && npm ci && npm run build) || die "the build failed (see above)"
    [[ -x $BINARY ]] || die "the build did not produce $BINARY"
  fi
else
  die "no linkbox binary: put it beside install.sh, or give --binary PATH"
fi
if version=$("$BINARY" version 2>/dev/null); then
  say "installing linkbox $version from $BINARY"
elif [[ -n $ROOT ]]; then
  say "installing $BINARY (it does not run here: another architecture?)"
else
  die "$BINARY version failed: not a linkbox binary for this machine"
fi

ensure_user

# ----- binary: stop, replace, (started again below) -----------------------------------------------------
install -d -m 0755 -- "$ROOT/usr/local/bin"
if ((USE_SYSTEMCTL)) && [[ -e $BIN_PATH ]]; then
  systemctl_available
  if systemctl is-active --quiet linkbox; then
    say "stopping linkbox to upgrade it"
    systemctl stop linkbox || die "systemctl stop linkbox failed"
  fi
fi
tmp=$(tmp_beside "$ROOT$BIN_PATH")
cp -- "$BINARY" "$tmp"
chmod 0755 -- "$tmp"
mv -f -- "$tmp" "$ROOT$BIN_PATH"
say "installed $ROOT$BIN_PATH"

# ----- config: written once, never overwritten -----------------------------------------------------------
install -d -m 0755 -- "$ROOT$(dirname -- "$CONF_PATH")"
if [[ -e $ROOT$CONF_PATH ]]; then
  say "kept the existing $ROOT$CONF_PATH"
else
  tmp=$(tmp_beside "$ROOT$CONF_PATH")
  sed "s|^data_dir = .*|data_dir = \"$DEFAULT_DATA\"|" -- "$EXAMPLE" >"$tmp"
  grep -qx "data_dir = \"$DEFAULT_DATA\"" -- "$tmp" || die "$EXAMPLE: no data_dir line to set"
  chmod 0640 -- "$tmp"
  own group "$tmp"
  mv -- "$tmp" "$ROOT$CONF_PATH"
  say "wrote $ROOT$CONF_PATH (data_dir = \"$DEFAULT_DATA\"); set server.base_url there to this server's address"
fi
CONF=$ROOT$CONF_PATH

# ----- data directory -----------------------------------------------------------------------------------
DATA=$(data_dir_of "$CONF")
install -d -m 0755 -- "$(dirname -- "$ROOT$DATA")"
install -d -m 0700 -- "$ROOT$DATA"
chmod 0700 -- "$ROOT$DATA"
own user "$ROOT$DATA"
[[ $DATA == "$DEFAULT_DATA" ]] ||
  say "data_dir is $DATA: the unit only lets linkbox write in $DEFAULT_DATA; add ReadWritePaths=$DATA (systemctl edit linkbox)"

# ----- python3 and ffmpeg (yt-dlp needs python3; merging formats needs ffmpeg) ---------------------------
on_service_path() { # the PATH a systemd service gets
  local d
  for d in /usr/local/bin /usr/bin /bin; do [[ -x $d/$1 ]] && return 0; done
  return 1
}
if [[ -n $ROOT ]]; then
  say "--root: not installing packages; linkbox needs python3 and ffmpeg on the target"
else
  missing=()
  on_service_path python3 || missing+=(python3)
  on_service_path ffmpeg || missing+=(ffmpeg)
  if ((${#missing[@]})); then
    command -v apt-get >/dev/null || die "apt-get not found: install ${missing[*]} yourself, then run this again"
    say "installing ${missing[*]} with apt-get"
    apt-get update -q || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" || die "apt-get install ${missing[*]} failed"
  fi
fi

# ----- the unit; CAP_NET_BIND_SERVICE only for a port below 1024 ----------------------------------------
port=$(toml_get server port "$CONF")
port=${port:-8080}
smtp_port=$(toml_get mail smtp_port "$CONF")
smtp_port=${smtp_port:-2525}
[[ $port =~ ^[0-9]+$ ]] || die "$CONF: server.port is not a number: $port"
[[ $smtp_port =~ ^[0-9]+$ ]] || die "$CONF: mail.smtp_port is not a number: $smtp_port"
install -d -m 0755 -- "$ROOT$(dirname -- "$UNIT_PATH")"
grep -qx 'CapabilityBoundingSet=' -- "$UNIT_SRC" || die "$UNIT_SRC: no empty CapabilityBoundingSet= line"
tmp=$(tmp_beside "$ROOT$UNIT_PATH")
if ((port < 1024 || smtp_port < 1024)); then
  awk -v why="# Added by install.sh: server.port = $port, mail.smtp_port = $smtp_port (one is below 1024)" '
    $0 == "CapabilityBoundingSet=" {
      print why; print "CapabilityBoundingSet=CAP_NET_BIND_SERVICE"; print "AmbientCapabilities=CAP_NET_BIND_SERVICE"; next
    }
    { print }' "$UNIT_SRC" >"$tmp"
  say "a port is below 1024: the unit grants CAP_NET_BIND_SERVICE"
else
  cp -- "$UNIT_SRC" "$tmp"
fi
chmod 0644 -- "$tmp"
mv -f -- "$tmp" "$ROOT$UNIT_PATH"
say "installed $ROOT$UNIT_PATH"

if ! ((USE_SYSTEMCTL)); then
  say "--no-systemctl: skipped systemctl daemon-reload/enable/start, the /healthz wait and the first account"
  say "to start it: systemctl daemon-reload && systemctl enable --now linkbox"
  exit 0
fi

# ----- start, wait for /healthz, first account ----------------------------------------------------------
systemctl_available
systemctl daemon-reload
systemctl enable linkbox
systemctl restart linkbox || die "systemctl restart linkbox failed: journalctl -u linkbox -n 50"

host=$(toml_get server host "$CONF")
case $host in "" | 0.0.0.0) host=127.0.0.1 ;; "::") host=::1 ;; esac
# GET /healthz with bash alone (no curl or wget needed): true on a 200.
healthz_ok() {
  local line=""
  { exec 3<>"/dev/tcp/$host/$port"; } 2>/dev/null || return 1
  printf 'GET /healthz HTTP/1.0\r\nHost: %s\r\n\r\n' "$host" >&3
  IFS= read -r -t 5 line <&3 || true
  exec 3<&- 3>&-
  [[ $line =~ ^HTTP/1\.[01]\ 200 ]]
}
up=0
for _ in $(seq 1 30); do
  if healthz_ok; then
    up=1
    break
  fi
  # Failed for good (a config error, or 5 failures in a minute): say why now, not after 30 s.
  systemctl is-failed --quiet linkbox && break
  sleep 1
done
if ! ((up)); then
  journalctl -u linkbox -n 8 --no-pager -o cat >&2 || true
  die "linkbox did not answer http://$host:$port/healthz ($(systemctl is-active linkbox || true)): its last lines are above; journalctl -u linkbox -n 50 shows more"
fi
say "linkbox answers on http://$host:$port/healthz"

as_linkbox() { runuser -u linkbox -- "$BIN_PATH" "$@" --config "$CONF_PATH"; }
base_url=$(toml_get server base_url "$CONF")
# An account is created with an API key and keeps at least its newest one (revoked keys are listed too), so
# a key list with only its header line means there is no account yet.
keys=$(as_linkbox key list) || die "linkbox key list failed"
if (($(printf '%s\n' "$keys" | wc -l) <= 1)); then
  password=$(head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')
  password=${password:0:24}
  out=$(printf '%s' "$password" | as_linkbox account create admin --admin --password -) ||
    die "linkbox account create admin failed"
  key=$(printf '%s\n' "$out" | tail -n 1)
  printf '\nlinkbox is running.\n  URL:      %s\n  account:  admin (admin)\n  password: %s\n  API key:  %s\n' \
    "${base_url:-http://$host:$port}" "$password" "$key"
  printf 'The password and the key are shown this once: keep them.\n'
else
  printf '\nlinkbox is running: %s (accounts exist already; none created)\n' "${base_url:-http://$host:$port}"
fi
