#!/usr/bin/env bash
# Builds the container image offline, without a container engine:
#   VERSION=V image/build-oci.sh BINARY OUTDIR
# assembles the root filesystem (image/rootfs.sh), packs it as a one-layer OCI image with umoci,
# and writes OUTDIR/gpuadmit-V.oci.tar: an OCI image layout in a tar (an "oci-archive", what
# skopeo, podman load, ctr images import and kind load image-archive read), named
# docker.io/library/gpuadmit:V, or IMAGE_NAME:V (IMAGE_NAME=registry.example.com/team/gpuadmit).
#
# Reproducible: file mtimes, the config's and history's dates and the archive's entries all use
# SOURCE_DATE_EPOCH (default: the time of the last commit), owners are 0, and entries are sorted,
# so the same binary and the same Debian packages give the same image digest and archive bytes.
# The binary itself is as reproducible as the compiler makes it, and the Debian packages are
# whatever versions this system has installed.
set -euo pipefail

bin=${1:?usage: VERSION=V build-oci.sh BINARY OUTDIR}
out=${2:?usage: VERSION=V build-oci.sh BINARY OUTDIR}
version=${VERSION:?set VERSION (the Makefile passes its own)}
name=${IMAGE_NAME:-gpuadmit}
here=$(dirname "$(realpath "$0")")

die() { echo "build-oci.sh: $*" >&2; exit 1; }
command -v umoci >/dev/null || die "umoci is missing (Debian package umoci; make image installs it)"
[[ $version =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "VERSION \"$version\" is no tag"

# A full reference, as container runtimes store it: gpuadmit -> docker.io/library/gpuadmit.
case $name in
  */*) first=${name%%/*}
       [[ $first == *.* || $first == *:* || $first == localhost ]] || name=docker.io/$name ;;
  *) name=docker.io/library/$name ;;
esac
ref=$name:$version

# The image is labelled with VERSION: it must be what the binary says it is.
said=$("$bin" --version) || die "$bin --version failed"
[[ $said == "gpuadmit $version" ]] || die "$bin says \"$said\", not \"gpuadmit $version\":" \
  "it was built at another version (make clean, then make image)"

if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
  SOURCE_DATE_EPOCH=$(git -C "$here" log -1 --format=%ct 2>/dev/null || echo 0)
fi
export SOURCE_DATE_EPOCH
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
revision=$(git -C "$here" rev-parse HEAD 2>/dev/null || echo unknown)

mkdir -p "$out"
archive=$out/gpuadmit-$version.oci.tar
work=$(mktemp -d "$out/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$here/rootfs.sh" "$bin" "$work/rootfs"

# Not root: unpack and repack in rootless mode, which records the caller's files as owned by 0.
rootless=()
[[ $(id -u) -eq 0 ]] || rootless=(--rootless)
layout=$work/oci
umoci init --layout "$layout"
umoci new --image "$layout:$ref"
umoci unpack "${rootless[@]}" --image "$layout:$ref" "$work/bundle"
cp -a "$work/rootfs/." "$work/bundle/rootfs/"
touch -d "@$SOURCE_DATE_EPOCH" "$work/bundle/rootfs"
umoci repack --image "$layout:$ref" --history.created "$created" \
  --history.created_by "image/rootfs.sh: gpuadmit, its shared libraries and CA certificates" \
  "$work/bundle"
umoci config --image "$layout:$ref" --no-history --created "$created" \
  --config.entrypoint /usr/bin/gpuadmit --config.user 65532:65532 --config.workingdir / \
  --config.exposedports 8443/tcp \
  --config.label "org.opencontainers.image.title=gpuadmit" \
  --config.label "org.opencontainers.image.description=Admission webhook for GPU workloads" \
  --config.label "org.opencontainers.image.version=$version" \
  --config.label "org.opencontainers.image.revision=$revision" \
  --config.label "org.opencontainers.image.created=$created"
umoci gc --layout "$layout"

# An oci-archive is the layout in a tar; written here rather than by skopeo so that its bytes are
# reproducible too.
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
  --mode=u=rwX,go=rX --format=ustar -C "$layout" -cf "$archive.tmp" oci-layout index.json blobs
mv -f "$archive.tmp" "$archive"

manifest=$(sed -n 's/.*"digest":"\(sha256:[0-9a-f]*\)".*/\1/p' "$layout/index.json")
# shellcheck disable=SC2012 # blob names are hex digests; the layer is the largest
layer=$(ls -S "$layout"/blobs/sha256/* | head -n 1)
echo "image: $ref, manifest $manifest"
echo "image: $archive: $(du -h --apparent-size "$archive" | cut -f1); one layer of" \
  "$(du -h --apparent-size "$layer" | cut -f1) compressed, $(gzip -dc "$layer" | wc -c |
  numfmt --to=iec) unpacked"
