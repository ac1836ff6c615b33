#!/usr/bin/env bash
# Assembles the container image's root filesystem from a built gpuadmit binary and the Debian
# system it was built on:
#   image/rootfs.sh BINARY DEST
# DEST (made anew; must not exist yet) then holds only
#   /usr/bin/gpuadmit                      the binary
#   its shared libraries and the dynamic loader, at the paths ldd names (with the system's
#     /lib -> usr/lib style links), plus libgcc_s, which glibc loads by itself (see below)
#   /etc/ssl/certs/ca-certificates.crt     the CA bundle of Debian's ca-certificates
#   /etc/passwd, /etc/group                root and nonroot (65532)
#   /etc/nsswitch.conf                     "hosts: files dns", so /etc/hosts entries win
#   /etc/os-release, /var/lib/dpkg/status.d/PKG, /usr/share/doc/PKG/copyright
#                                          which Debian packages the files come from (scanners
#                                          such as Trivy and Grype read these) and their licences
# Every file is owned by the caller (root: use it as root, or map it to 0 when packing), nothing
# is writable by group or others, and every mtime is SOURCE_DATE_EPOCH (default 0).
# There is no shell, no package manager and no /tmp: the server writes nothing to disk.
# Used by image/build-oci.sh and by the Dockerfile's build stage, so both images hold the same.
set -euo pipefail

bin=${1:?usage: rootfs.sh BINARY DEST}
root=${2:?usage: rootfs.sh BINARY DEST}
epoch=${SOURCE_DATE_EPOCH:-0}

die() { echo "rootfs.sh: $*" >&2; exit 1; }
[[ -x $bin ]] || die "$bin is not an executable"
[[ ! -e $root ]] || die "$root exists; it must be new"
umask 022
mkdir -p "$root"
root=$(realpath "$root")

packages=()   # Debian packages the copied files belong to (libc6:amd64), one entry per file

# The package that installed PATH (as ldd names it, or its canonical form: on a merged-/usr
# system dpkg knows some libraries under /lib and others under /usr/lib).
owner() {
  local p
  for p in "$1" "$(realpath -e "$1")"; do
    dpkg-query -S "$p" 2>/dev/null | head -n 1 | sed 's/: .*//' && return 0
  done
  return 1
}

# Makes each ancestor of PATH that is a symbolic link on this system (/lib -> usr/lib) the same
# link in the root filesystem, so that the path the binary and the loader use resolves there.
mirror_parent_links() {
  local sofar="" comp
  local -a parts
  IFS=/ read -ra parts <<< "${1#/}"
  for comp in "${parts[@]:0:${#parts[@]}-1}"; do
    sofar="$sofar/$comp"
    if [[ -L $sofar && ! -L $root$sofar ]]; then
      mkdir -p "$root$(dirname "$sofar")"
      cp -P "$sofar" "$root$sofar"
      mkdir -p "$root$(realpath -e "$sofar")"
    fi
  done
}

# Copies PATH into the root filesystem at the same place, following symbolic links one hop at a
# time (libz.so.1 -> libz.so.1.2.13) and copying each link and the file it ends at.
copy_path() {
  local p=$1 dir name t
  while :; do
    mirror_parent_links "$p"
    dir=$(realpath -e "$(dirname "$p")")
    name=$(basename "$p")
    mkdir -p "$root$dir"
    if [[ -L $dir/$name ]]; then
      [[ -L $root$dir/$name ]] || cp -P "$dir/$name" "$root$dir/$name"
      t=$(readlink "$dir/$name")
      [[ $t == /* ]] && p=$t || p=$dir/$t
    else
      [[ -f $dir/$name ]] || die "$dir/$name is not a regular file"
      [[ -e $root$dir/$name ]] || cp --preserve=mode "$dir/$name" "$root$dir/$name"
      return 0
    fi
  done
}

# Copies a shared object and records its package.
copy_lib() {
  local pkg
  pkg=$(owner "$1") || die "$1 belongs to no Debian package: the image takes Debian's files only"
  packages+=("$pkg")
  copy_path "$1"
}

ldd_out=$(ldd "$bin") || die "ldd $bin failed (a static binary needs no image recipe like this)"
if grep -q 'not found' <<< "$ldd_out"; then
  die "missing libraries: $(grep 'not found' <<< "$ldd_out" | tr -s ' \t\n' ' ')"
fi
# "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)";
# linux-vdso has no file.
mapfile -t libs < <(sed -n -e 's/.*=> \(\/[^ ]*\) (0x.*/\1/p' \
  -e 's/^[[:space:]]*\(\/[^ ]*\) (0x.*/\1/p' <<< "$ldd_out")
[[ ${#libs[@]} -gt 0 ]] || die "ldd $bin named no libraries"
for lib in "${libs[@]}"; do
  copy_lib "$lib"
done

# glibc dlopens libgcc_s for thread cancellation and unwinding (pthread_cancel, pthread_exit),
# which ldd cannot see; without it such a call aborts the process. Nothing calls those today;
# the 125 KB keep a future one from crashing only inside the image.
gcc_s=$(dirname "${libs[0]}")/libgcc_s.so.1
[[ -e $gcc_s ]] || gcc_s=$(gcc -print-file-name=libgcc_s.so.1)
[[ -e $gcc_s ]] || die "libgcc_s.so.1 not found"
copy_lib "$gcc_s"

install -D -m 0755 "$bin" "$root/usr/bin/gpuadmit"

ca=/etc/ssl/certs/ca-certificates.crt
[[ -s $ca ]] || die "$ca is missing: install Debian's ca-certificates"
install -D -m 0644 "$ca" "$root$ca"
packages+=(ca-certificates)

install -D -m 0644 /dev/stdin "$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/usr/sbin/nologin
nonroot:x:65532:65532:nonroot:/nonexistent:/usr/sbin/nologin
EOF
install -D -m 0644 /dev/stdin "$root/etc/group" <<'EOF'
root:x:0:
nonroot:x:65532:
EOF
# glibc's built-in default is "dns [!UNAVAIL=return] files": without this file a name in
# /etc/hosts (a pod's hostAliases) would be looked up in DNS first. files and dns are built into
# glibc 2.34 and later, so no libnss_*.so is needed.
install -D -m 0644 /dev/stdin "$root/etc/nsswitch.conf" <<'EOF'
passwd: files
group: files
hosts: files dns
EOF
install -D -m 0644 "$(realpath -e /etc/os-release)" "$root/etc/os-release"
packages+=(base-files)

# Which Debian packages (and versions) the image holds, in the form distroless images use, and
# each package's copyright file (the libraries are LGPL, GPL, MIT, ...: they travel with it).
mapfile -t uniq < <(printf '%s\n' "${packages[@]}" | sort -u)
for pkg in "${uniq[@]}"; do
  install -D -m 0644 /dev/stdin "$root/var/lib/dpkg/status.d/${pkg%%:*}" < <(dpkg-query -s "$pkg")
  src=/usr/share/doc/${pkg%%:*}/copyright
  [[ -e $src ]] || die "$src is missing"
  install -D -m 0644 "$src" "$root$src"
done

chmod -R go-w "$root"
find "$root" -exec touch -h -d "@$epoch" {} +
echo "rootfs: $(find "$root" ! -type d | wc -l) files ($(find "$root" -name '*.so*' ! -type d \
  | wc -l) of them shared libraries and links, from ${#uniq[@]} Debian packages), \
$(du -sh --apparent-size "$root" | cut -f1) in all"
