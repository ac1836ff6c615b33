#!/usr/bin/env bash
# helm, for make chart-check and make cluster-test (charts/gpuadmit), built once per version
# into the cache that scripts/k8s-binaries.sh fills, outside the clone:
#   helm.sh/helm/v3/cmd/helm at the release that tests/chart/helm/go.mod requires (the one place
#   it is named), through that wrapper module, whose go.sum pins every dependency; the Go module
#   proxy is all it needs.
# The version is stamped as helm's own Makefile stamps it, and so is the Kubernetes version that
# `helm template` and `helm lint` assume without a cluster (the client-go minor + 1.0, not 1.20,
# which the chart's kubeVersion would refuse).
# Prints the binary's path on stdout; says nothing else when it is already there.
#
#   scripts/helm-binary.sh                 build it when missing, print its path
#   scripts/helm-binary.sh --regen vX.Y.Z  rewrite tests/chart/helm/go.mod and go.sum for another
#                                          release (then commit both)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mod_dir=$root/tests/chart/helm
cache=${GPUADMIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuadmit}
pkg=helm.sh/helm/v3

# Go from PATH, or where Go's own installer puts it (a non-login shell may not have it on PATH)
go_on_path() {
    command -v go >/dev/null || [[ ! -x /usr/local/go/bin/go ]] || PATH=/usr/local/go/bin:$PATH
    command -v go >/dev/null || { echo "helm-binary: go is needed to build helm" >&2; exit 1; }
}

regen() {
    local helm=$1 gomod
    go_on_path
    cd "$mod_dir"
    gomod=$(go mod download -json "$pkg@$helm" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    # the release's own go and godebug lines, so that its code runs with the defaults it expects
    {
        echo '// helm for the chart checks (charts/gpuadmit) at the helm.sh/helm/v3 release'
        echo '// required below, the one place it is named. Written by scripts/helm-binary.sh'
        echo '// --regen; do not edit.'
        echo 'module gpuadmit.test/chart/helm'
        echo
        grep -E '^(go|godebug) ' "$gomod"
    } >go.mod
    rm -f go.sum
    go mod edit -require="$pkg@$helm" -tool="$pkg/cmd/helm"
    go mod tidy
}

if [[ ${1:-} == --regen ]]; then
    [[ $# -eq 2 && $2 =~ ^v3\.[0-9]+\.[0-9]+$ ]] || { echo "usage: $0 --regen v3.Y.Z" >&2; exit 2; }
    regen "$2"
    exit 0
fi

helm=$(sed -n 's|^[[:space:]]*helm\.sh/helm/v3 \(v[^ ]*\).*|\1|p' "$mod_dir/go.mod" | head -n1)
[[ $helm =~ ^v3\.[0-9]+\.[0-9]+$ ]] || { echo "no $pkg release in $mod_dir/go.mod" >&2; exit 1; }
bin=$cache/helm-$helm
if [[ -x $bin/helm ]]; then
    echo "$bin/helm"
    exit 0
fi

go_on_path
for tool in flock setsid; do
    command -v "$tool" >/dev/null || { echo "helm-binary: $tool is needed to build helm" >&2; exit 1; }
done
mkdir -p "$cache"

# The lock and the stages of scripts/k8s-binaries.sh: one builder at a time per cache (two Go
# builds on the same cores only slow each other), and a stage left by an interrupted build of
# either script is removed under the lock by either.
exec 9>"$cache/.lock"
flock 9
if [[ -x $bin/helm ]]; then
    echo "$bin/helm"
    exit 0
fi
rm -rf "$cache"/.stage.*
stage=$(mktemp -d "$cache/.stage.XXXXXX")
builder=
# An interrupted build stops its go build too (the builder leads a process group of its own).
cleanup() {
    [[ -z $builder ]] || { kill -TERM -- "-$builder" 2>/dev/null; wait "$builder" 2>/dev/null; }
    rm -rf "$stage"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# client-go v0.X.Y is Kubernetes 1.X (helm's Makefile: K8S_MODULES_MAJOR_VER and _MINOR_VER)
client_go=$(cd "$mod_dir" && go list -mod=readonly -m -f '{{.Version}}' k8s.io/client-go)
[[ $client_go =~ ^v0\.([0-9]+)\. ]] || { echo "helm-binary: client-go $client_go?" >&2; exit 1; }
k8s_minor=${BASH_REMATCH[1]}
ldf="-s -w -X $pkg/internal/version.version=$helm -X $pkg/internal/version.metadata="
ldf+=" -X $pkg/internal/version.gitTreeState=clean"
for p in $pkg/pkg/lint/rules $pkg/pkg/chartutil; do
    ldf+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$k8s_minor"
done
echo "building helm $helm from $pkg" >&2
start=$(date +%s)
# the lock's descriptor is not passed on: a builder that outlived us must not hold it
(cd "$mod_dir" && exec setsid nice -n 19 env CGO_ENABLED=0 go build -mod=readonly -buildvcs=false \
    -trimpath -ldflags "$ldf" -o "$stage/helm" "$pkg/cmd/helm") 9>&- &
builder=$!
wait "$builder"
builder=
echo "built helm $helm in $(($(date +%s) - start)) s" >&2
chmod 755 "$stage"
# The directory appears whole or not at all.
rm -rf "$bin"
mv "$stage" "$bin"
trap - EXIT
echo "$bin/helm"
