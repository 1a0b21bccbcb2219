#!/usr/bin/env bash
# Install the Debian peers the integration tests drive (tests/integration):
# gophernicus (a real Gopher server), fingerd and finger (BSD in.fingerd, a
# real Finger server, and the finger program it runs), socat (runs those two
# per connection on loopback, and relays to molly-brown's private network
# namespace), molly-brown (a real Gemini server), and npm (which .ci/node.sh
# uses to fetch Node 22 and the MCP conformance tools).  Does nothing when all are already
# there, so it is safe to run on every CI job.  Works as root (containers, no
# sudo needed) or as a user with sudo (hosted runners).
set -euo pipefail

GOPHERNICUS=/usr/sbin/gophernicus
MOLLY_BROWN=/usr/bin/molly-brown
IN_FINGERD=/usr/sbin/in.fingerd
FINGER=/usr/bin/finger

have_postgres() {
    compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}

have_peers() {
    [ -x "$GOPHERNICUS" ] && [ -x "$MOLLY_BROWN" ] && command -v socat >/dev/null 2>&1 \
        && [ -x "$IN_FINGERD" ] && [ -x "$FINGER" ] \
        && command -v npm >/dev/null 2>&1 && have_postgres && [ -x /usr/bin/redis-server ]
}

if have_peers; then
    echo "peers.sh: gophernicus, molly-brown, in.fingerd, finger, socat, npm, postgresql and redis-server already installed"
    exit 0
fi

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        echo "peers.sh: need root (or sudo) to run: $*" >&2
        return 1
    fi
}

export DEBIAN_FRONTEND=noninteractive

# On a host running systemd the package enables gophernicus.socket (port 70,
# all interfaces).  The tests run their own instance on 127.0.0.1, so keep the
# packaged one from starting during the install with a temporary policy-rc.d
# (honoured by invoke-rc.d and deb-systemd-invoke), unless one exists already.
policy=/usr/sbin/policy-rc.d
created_policy=false
cleanup() {
    if [ "$created_policy" = true ]; then
        as_root rm -f "$policy" || true
    fi
}
trap cleanup EXIT
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null
    created_policy=true
    as_root chmod 0755 "$policy"
fi

# npm only when there is none: where Node came from elsewhere (NodeSource
# ships npm inside its nodejs package) Debian's npm would fight it.
# PostgreSQL and Redis are the team server's shared state (tests/state): the
# tests start throwaway servers of their own on loopback; the packaged
# services are kept from starting by the policy above.
packages=(gophernicus molly-brown fingerd finger socat postgresql redis-server)
command -v npm >/dev/null 2>&1 || packages+=(npm)
as_root apt-get update
as_root apt-get install -y "${packages[@]}"

if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    as_root systemctl disable --now gophernicus.socket >/dev/null 2>&1 || true
    as_root systemctl disable --now redis-server.service postgresql.service >/dev/null 2>&1 || true
fi
# Where an inetd runs, fingerd's package adds a finger line (port 79, all
# interfaces) to its configuration; the tests run their own on 127.0.0.1.
if [ -e /etc/inetd.conf ] && command -v update-inetd >/dev/null 2>&1; then
    as_root update-inetd --disable finger || true
fi

if ! have_peers; then
    echo "peers.sh: gophernicus, molly-brown, in.fingerd, finger, socat, npm, postgresql or redis-server still missing after apt-get install" >&2
    exit 1
fi
echo "peers.sh: installed gophernicus, molly-brown, in.fingerd, finger, socat, npm, postgresql and redis-server"
