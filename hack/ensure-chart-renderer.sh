#!/usr/bin/env bash
# Installs what the chart-rendering tests need to render dist/chart and test/charts/vllm-mock
# without a helm binary: the Go toolchain plus the sprig and yaml libraries from Debian's
# packages (test/unit/ship/helmrender/main.go is compiled against them).
# Never fails: without root or apt-get it explains, and those tests skip saying why.
set -euo pipefail
pkgs=(golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v3-dev)

have_all() {
  command -v go >/dev/null 2>&1 || return 1
  [ -d /usr/share/gocode/src/github.com/Masterminds/sprig ] || return 1
  [ -d /usr/share/gocode/src/gopkg.in/yaml.v3 ] || return 1
}

if have_all; then
  echo "chart renderer: Go toolchain and libraries present"
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "chart renderer: installing ${pkgs[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null || true
  apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null || true
fi
if have_all; then
  echo "chart renderer: installed"
else
  echo "chart renderer: not available; the chart rendering tests will skip." \
       "Install with: sudo apt-get install -y --no-install-recommends ${pkgs[*]}" >&2
fi
exit 0
