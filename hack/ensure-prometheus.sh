#!/usr/bin/env bash
# Makes sure a Prometheus server binary exists for the integration tests and the demo.
#   (no args)     find it on PATH or in /usr/bin; else apt-get install it when root; else explain and fail.
#   --print-dir   print the directory that holds the binary (empty when none).
#   --optional    like no args, but never fail (the demo falls back to its built-in query endpoint).
set -euo pipefail
mode="${1:-}"

find_prom() {
  if command -v prometheus >/dev/null 2>&1; then command -v prometheus; return 0; fi
  for p in /usr/bin/prometheus /usr/local/bin/prometheus; do
    [ -x "$p" ] && { echo "$p"; return 0; }
  done
  return 1
}

if [ "$mode" = "--print-dir" ]; then
  if p=$(find_prom); then dirname "$p"; fi
  exit 0
fi

if p=$(find_prom); then
  echo "prometheus: using $p ($("$p" --version 2>&1 | head -n1))"
  exit 0
fi

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "prometheus: not found, installing Debian's package (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  # The package's postinst may try to start a service; there is no init system here, which is fine.
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null || true
  if p=$(find_prom); then
    echo "prometheus: installed $p"
    exit 0
  fi
fi

msg="prometheus: no binary found. Install it (Debian/Ubuntu: 'sudo apt-get install -y --no-install-recommends prometheus', or put a release binary on PATH)."
if [ "$mode" = "--optional" ]; then
  echo "$msg Continuing without it." >&2
  exit 0
fi
echo "$msg" >&2
exit 1
