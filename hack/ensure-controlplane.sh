#!/usr/bin/env bash
# Builds the real Kubernetes control plane from Go modules (hack/controlplane/*/go.mod), once:
# kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and etcd at the Kubernetes
# version pinned in hack/controlplane/kubernetes/go.mod, plus kwok and helm.
#
# Binaries go to a cache directory outside the checkout, keyed by the pinned versions:
#   ${LLMSCALER_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/llmscaler}/controlplane/k8s-vX_etcd-vY_kwok-vZ_helm-vW/
# A binary already there is not rebuilt. A binary the user already has is used instead and not
# built, by controller-runtime envtest's conventions: TEST_ASSET_KUBE_APISERVER, TEST_ASSET_ETCD,
# TEST_ASSET_KUBECTL (and, for the workload tier, TEST_ASSET_KUBE_CONTROLLER_MANAGER,
# TEST_ASSET_KUBE_SCHEDULER, TEST_ASSET_KWOK, TEST_ASSET_HELM), or a file of that name in
# $KUBEBUILDER_ASSETS (what setup-envtest prints).
#
#   hack/ensure-controlplane.sh              build what is missing, say where everything is
#   hack/ensure-controlplane.sh --print-dir  only print the cache directory (builds nothing)
#   hack/ensure-controlplane.sh --have-go    exit 0 when a Go toolchain new enough is here
#   hack/ensure-controlplane.sh --optional   never fail: without Go, or when the module proxy
#                                            refuses a module, say so in one line and exit 0
#                                            (the real-control-plane tests then skip, saying why)
#
# The first build downloads ~1.2 GB of modules and compiles several thousand packages (4 GB of
# Go build cache): measured 381 s on a 2-core machine with empty Go caches. Later runs find the
# binaries (0.05 s); with the Go build cache warm but the binaries gone, 14 s.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
modules="$here/controlplane"
optional=0
print_dir=0
have_go=0
for arg in "$@"; do
  case "$arg" in
    --optional) optional=1 ;;
    --print-dir) print_dir=1 ;;
    --have-go) have_go=1 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "ensure-controlplane: unknown argument $arg (see --help)" >&2; exit 2 ;;
  esac
done

# Pinned versions, read from the go.mod files: the one place they are written.
pinned() { # module-dir module-path
  sed -n "s#^[[:space:]]*\(require[[:space:]]\+\)\?$2 \(v[^[:space:]]*\).*#\2#p" "$modules/$1/go.mod" | head -n1
}
k8s_version="$(pinned kubernetes k8s.io/kubernetes)"
etcd_version="$(pinned kubernetes go.etcd.io/etcd/server/v3)"
kwok_version="$(pinned kwok sigs.k8s.io/kwok)"
helm_version="$(pinned helm helm.sh/helm/v3)"
cache_root="${LLMSCALER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/llmscaler}/controlplane"
dest="$cache_root/k8s-${k8s_version}_etcd-${etcd_version}_kwok-${kwok_version}_helm-${helm_version}"

if [ "$print_dir" = 1 ]; then
  echo "$dest"
  exit 0
fi

fail() {
  echo "ensure-controlplane: $*" >&2
  if [ "$optional" = 1 ]; then
    echo "ensure-controlplane: the real-control-plane tests will skip; the embedded tier still runs." >&2
    exit 0
  fi
  exit 1
}

# The user's own binary, if any, by envtest's conventions.
user_binary() { # name
  local var="TEST_ASSET_$(echo "$1" | tr 'a-z-' 'A-Z_')"
  if [ -n "${!var:-}" ]; then
    [ -x "${!var}" ] || fail "$var=${!var} is not an executable file"
    echo "${!var}"
  elif [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/$1" ]; then
    echo "$KUBEBUILDER_ASSETS/$1"
  fi
}

# A Go toolchain new enough for the go directive of hack/controlplane/*/go.mod. $GO wins; else
# the first of `go` on PATH and /usr/local/go/bin/go that is new enough (Debian's golang-go,
# which the PATH may list first, is too old for Kubernetes).
go_needed="$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$modules/kubernetes/go.mod")"
go_ok() { # go-binary
  local v
  v="$("$1" env GOVERSION 2>/dev/null)" || return 1
  v="${v#go}"
  [ "$(printf '%s\n%s\n' "$go_needed" "$v" | sort -V | head -n1)" = "$go_needed" ]
}
GO_FOUND=""
for candidate in ${GO:-} "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go; do
  if [ -n "$candidate" ] && [ -x "$candidate" ] && go_ok "$candidate"; then
    GO_FOUND="$candidate"
    break
  fi
done
GO="${GO_FOUND:-go}"
if [ "$have_go" = 1 ]; then
  [ -n "$GO_FOUND" ]
  exit
fi

# One `go build` per binary, in the module that pins it. -trimpath, the upstream tags and
# CGO_ENABLED=0 as Kubernetes' own release build; -pgo=off so that every binary shares one
# compile cache (kube-apiserver's default.pgo would otherwise recompile everything it imports).
build() { # name module-dir package ldflags
  local name="$1" module="$2" package="$3" ldflags="$4"
  local started=$SECONDS
  echo "ensure-controlplane: building $name ($package) into $dest"
  (cd "$modules/$module" && CGO_ENABLED=0 "$GO" build -trimpath -pgo=off \
    -tags=selinux,notest,grpcnotrace -ldflags="-s -w $ldflags" -o "$dest/$name.tmp" "$package") \
    || fail "building $name failed (see the go output above)"
  mv -f "$dest/$name.tmp" "$dest/$name"
  echo "ensure-controlplane: built $name in $((SECONDS - started)) s"
}

k8s_minor="${k8s_version#v1.}"; k8s_minor="${k8s_minor%%.*}"
build_date="$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' \
  "$("$GO" env GOMODCACHE 2>/dev/null)/cache/download/k8s.io/kubernetes/@v/${k8s_version}.info" 2>/dev/null || true)"
k8s_ldflags=""
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  k8s_ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$k8s_minor"
  k8s_ldflags+=" -X $pkg.gitCommit= -X $pkg.gitTreeState=clean -X $pkg.buildDate=${build_date:-1970-01-01T00:00:00Z}"
done

declare -a wanted=(
  "kube-apiserver|kubernetes|k8s.io/kubernetes/cmd/kube-apiserver|$k8s_ldflags"
  "etcd|kubernetes|go.etcd.io/etcd/server/v3|"
  "kubectl|kubernetes|k8s.io/kubernetes/cmd/kubectl|$k8s_ldflags"
  "kube-controller-manager|kubernetes|k8s.io/kubernetes/cmd/kube-controller-manager|$k8s_ldflags"
  "kube-scheduler|kubernetes|k8s.io/kubernetes/cmd/kube-scheduler|$k8s_ldflags"
  "kwok|kwok|sigs.k8s.io/kwok/cmd/kwok|-X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_version#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${k8s_version#v}"
  "helm|helm|helm.sh/helm/v3/cmd/helm|-X helm.sh/helm/v3/internal/version.version=$helm_version -X helm.sh/helm/v3/internal/version.gitTreeState=clean -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$k8s_minor"
)

declare -a missing=()
for entry in "${wanted[@]}"; do
  name="${entry%%|*}"
  if [ -z "$(user_binary "$name")" ] && [ ! -x "$dest/$name" ]; then
    missing+=("$entry")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  [ -n "$GO_FOUND" ] || fail "no Go toolchain >= $go_needed (looked at \$GO, go on PATH, /usr/local/go/bin/go); it is needed to build the control plane from Go modules"
  mkdir -p "$dest"
  echo "ensure-controlplane: ${#missing[@]} binaries to build (Kubernetes $k8s_version, etcd $etcd_version, kwok $kwok_version, helm $helm_version)."
  echo "ensure-controlplane: the first build downloads ~1.2 GB of Go modules and compiles thousands of packages: about 6-7 minutes on 2 cores. Later runs reuse the binaries."
  started_all=$SECONDS
  for module in kubernetes kwok helm; do
    (cd "$modules/$module" && "$GO" mod download) \
      || fail "the Go module proxy did not serve what hack/controlplane/$module/go.mod needs (GOPROXY=$("$GO" env GOPROXY))"
  done
  for entry in "${missing[@]}"; do
    IFS='|' read -r name module package ldflags <<<"$entry"
    build "$name" "$module" "$package" "$ldflags"
  done
  echo "ensure-controlplane: built ${#missing[@]} binaries in $((SECONDS - started_all)) s"
fi

for entry in "${wanted[@]}"; do
  name="${entry%%|*}"
  found="$(user_binary "$name")"
  echo "ensure-controlplane: $name: ${found:-$dest/$name}${found:+ (yours)}"
done
