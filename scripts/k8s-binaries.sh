#!/usr/bin/env bash
# The binaries of the local control plane (make cluster), built or fetched once per version into
# a cache outside the clone, so that a second run starts in seconds:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl: built from k8s.io/kubernetes
#     at the release that tests/cluster/k8s/go.mod requires (the one place it is named), through
#     that wrapper module, whose replaces point every staging module at its published v0.X.Y
#     (a dependency's own replaces are ignored, so `go install k8s.io/kubernetes/cmd/...@vX`
#     cannot work);
#   etcd: Debian 13's etcd-server package, downloaded and unpacked, never installed (its postinst
#     would start a system etcd on the default ports); when it cannot be fetched, the same
#     release built from go.etcd.io/etcd/server/v3 through the wrapper module tests/cluster/etcd
#     (GPUADMIT_ETCD=build builds it without trying Debian, when no etcd is cached yet).
# A missing binary is made alone: the others are taken over from the cache as they are.
# Prints the directory holding all five on stdout; says nothing else when they are already there.
#
#   scripts/k8s-binaries.sh               build or fetch what is missing, print the directory
#   scripts/k8s-binaries.sh --regen vX.Y.Z rewrite tests/cluster/k8s/go.mod and go.sum for another
#                                         release (then commit both)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mod_dir=$root/tests/cluster/k8s
cache=${GPUADMIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuadmit}
# Debian 13 (trixie) ships etcd 3.5.16; a newer point release of trixie may replace it, and then
# this is the line to change.
etcd_deb_version=3.5.16-4
# its upstream release, which tests/cluster/etcd/go.mod requires for the fallback build
etcd_version=${etcd_deb_version%-*}
cmds=(kube-apiserver kube-controller-manager kube-scheduler kubectl)

regen() {
    local k8s=$1 stg=v0.${1#v1.} gomod m c
    cd "$mod_dir"
    gomod=$(go mod download -json "k8s.io/kubernetes@$k8s" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    # the release's own go and godebug lines, so that its code runs with the defaults it expects
    {
        echo '// The control plane of make cluster: kube-apiserver, kube-controller-manager,'
        echo '// kube-scheduler and kubectl at the k8s.io/kubernetes release required below, the'
        echo '// one place it is named. Written by scripts/k8s-binaries.sh --regen; do not edit.'
        echo 'module gpuadmit.test/cluster/k8s'
        echo
        grep -E '^(go|godebug) ' "$gomod"
    } >go.mod
    rm -f go.sum
    for m in $(sed -n 's|^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/.*|\1|p' "$gomod"); do
        go mod edit -replace="$m=$m@$stg"
    done
    go mod edit -require="k8s.io/kubernetes@$k8s"
    for c in "${cmds[@]}"; do go mod edit -tool="k8s.io/kubernetes/cmd/$c"; done
    go mod tidy
}

if [[ ${1:-} == --regen ]]; then
    [[ $# -eq 2 && $2 =~ ^v1\.[0-9]+\.[0-9]+$ ]] || { echo "usage: $0 --regen v1.Y.Z" >&2; exit 2; }
    regen "$2"
    exit 0
fi

k8s=$(sed -n 's|^[[:space:]]*k8s\.io/kubernetes \(v[^ ]*\).*|\1|p' "$mod_dir/go.mod" | head -n1)
[[ $k8s =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || { echo "no k8s.io/kubernetes release in $mod_dir/go.mod" >&2; exit 1; }
minor=${BASH_REMATCH[1]}
bin=$cache/k8s-$k8s-etcd-$etcd_deb_version
mkdir -p "$cache"

have_all() {
    local c
    for c in "${cmds[@]}" etcd; do [[ -x $bin/$c ]] || return 1; done
}
if have_all; then
    echo "$bin"
    exit 0
fi

# Go from PATH, or where Go's own installer puts it (a non-login shell may not have it on PATH)
command -v go >/dev/null || [[ ! -x /usr/local/go/bin/go ]] || PATH=/usr/local/go/bin:$PATH
tools=(go flock setsid)
[[ ${GPUADMIT_ETCD:-} == build ]] || tools+=(apt-get dpkg-deb) # Debian's etcd is fetched
for tool in "${tools[@]}"; do
    command -v "$tool" >/dev/null ||
        { echo "k8s-binaries: $tool is needed to build or fetch the control plane" >&2; exit 1; }
done

# One builder at a time per cache: a second make cluster waits rather than building again.
exec 9>"$cache/.lock"
flock 9
if have_all; then
    echo "$bin"
    exit 0
fi

# Under the lock nobody else builds: what an interrupted build left behind can go.
rm -rf "$cache"/.stage.*
stage=$(mktemp -d "$cache/.stage.XXXXXX")
builder=
# An interrupted build stops its go build too, compilers and all (the builder leads a process
# group of its own), so that no orphan keeps the cores and writes into a stage that is gone.
cleanup() {
    [[ -z $builder ]] || { kill -TERM -- "-$builder" 2>/dev/null; wait "$builder" 2>/dev/null; }
    rm -rf "$stage"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# what the cache holds already goes into the stage as it is (hard links where they can be)
for c in "${cmds[@]}" etcd; do
    [[ ! -x $bin/$c ]] || cp -l "$bin/$c" "$stage/" 2>/dev/null || cp -p "$bin/$c" "$stage/"
done

build_k8s() {
    local ldf="-s -w" p start
    # the keys of kube::version::ldflags (hack/lib/version.sh); unstamped, kubectl warns of skew
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldf+=" -X $p.gitVersion=$k8s -X $p.gitMajor=1 -X $p.gitMinor=$minor"
        ldf+=" -X $p.gitTreeState=clean -X $p.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    done
    echo "building Kubernetes $k8s (kube-apiserver, kube-controller-manager, kube-scheduler," \
        "kubectl); a cold build takes a while" >&2
    start=$(date +%s)
    # the lock's descriptor is not passed on: a builder that outlived us must not hold it
    (cd "$mod_dir" && exec setsid nice -n 19 env CGO_ENABLED=0 go build -mod=readonly -buildvcs=false \
        -trimpath -ldflags "$ldf" -o "$stage/" "${cmds[@]/#/k8s.io/kubernetes/cmd/}") 9>&- &
    builder=$!
    wait "$builder"
    builder=
    echo "built Kubernetes $k8s in $(($(date +%s) - start)) s" >&2
}

fetch_etcd() {
    # scripts/debian-fetch.sh: apt's own sources and lists stay as they are
    "$root/scripts/debian-fetch.sh" trixie "$stage/apt" "etcd-server=$etcd_deb_version" &&
        dpkg-deb -x "$stage/apt"/etcd-server_*.deb "$stage/apt/root" &&
        mv "$stage/apt/root/usr/bin/etcd" "$stage/etcd"
}

build_etcd() {
    local dir=$root/tests/cluster/etcd start
    grep -q "^require go.etcd.io/etcd/server/v3 v$etcd_version\$" "$dir/go.mod" || {
        echo "k8s-binaries: tests/cluster/etcd/go.mod does not require etcd v$etcd_version" >&2
        return 1
    }
    echo "building etcd v$etcd_version from go.etcd.io/etcd/server/v3" >&2
    start=$(date +%s)
    (cd "$dir" && exec setsid nice -n 19 env CGO_ENABLED=0 go build -mod=readonly -buildvcs=false \
        -trimpath -ldflags "-s -w" -o "$stage/etcd" .) 9>&- &
    builder=$!
    wait "$builder"
    builder=
    echo "built etcd v$etcd_version in $(($(date +%s) - start)) s" >&2
}

have_k8s() {
    local c
    for c in "${cmds[@]}"; do [[ -x $stage/$c ]] || return 1; done
}
have_k8s || build_k8s
if [[ ! -x $stage/etcd ]]; then
    if [[ ${GPUADMIT_ETCD:-} == build ]]; then
        build_etcd
    elif ! fetch_etcd; then
        echo "k8s-binaries: Debian's etcd-server $etcd_deb_version could not be fetched;" \
            "building the same release instead" >&2
        build_etcd
    fi
fi
rm -rf "$stage/apt"
chmod 755 "$stage"
# The directory appears whole or not at all.
rm -rf "$bin"
mv "$stage" "$bin"
trap - EXIT
echo "$bin"
