#!/usr/bin/env bash
# Makes a development CA and serving certificate (ECDSA P-256) with the openssl CLI:
#   certs/dev-certs.sh DIR [SERVICE [NAMESPACE]]
# writes DIR/ca.crt, DIR/ca.key, DIR/tls.crt, DIR/tls.key (keys 0600). The serving certificate
# is valid for SERVICE.NAMESPACE.svc (default gpuadmit.gpuadmit-system.svc), its .cluster.local
# form, localhost and 127.0.0.1. Existing files are reused while they are valid for another day,
# chain to the CA and cover those names; otherwise everything is made anew.
set -euo pipefail

dir=${1:?usage: dev-certs.sh DIR [SERVICE [NAMESPACE]]}
svc=${2:-gpuadmit}
ns=${3:-gpuadmit-system}
days=${GPUADMIT_CERT_DAYS:-365}
dns="$svc.$ns.svc"

mkdir -p "$dir"
cd "$dir"

valid() {
  [[ -s ca.crt && -s tls.crt && -s tls.key ]] || return 1
  openssl verify -CAfile ca.crt tls.crt >/dev/null 2>&1 || return 1
  openssl x509 -in tls.crt -noout -checkend 86400 >/dev/null 2>&1 || return 1
  openssl x509 -in tls.crt -noout -checkhost "$dns" 2>/dev/null | grep -q 'does match' || return 1
  openssl x509 -in tls.crt -noout -checkhost localhost 2>/dev/null | grep -q 'does match' || return 1
  openssl x509 -in tls.crt -noout -checkip 127.0.0.1 2>/dev/null | grep -q 'does match' || return 1
  [[ "$(openssl x509 -in tls.crt -noout -pubkey)" == "$(openssl pkey -in tls.key -pubout 2>/dev/null)" ]]
}

if valid; then
  echo "certs: reusing the valid certificates in $dir" >&2
  exit 0
fi

umask 077
tmp=$(mktemp -d .new.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

openssl ecparam -name prime256v1 -genkey -noout -out "$tmp/ca.key" 2>/dev/null
openssl req -x509 -new -key "$tmp/ca.key" -sha256 -days "$days" -subj "/CN=gpuadmit development CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -out "$tmp/ca.crt" 2>/dev/null

openssl ecparam -name prime256v1 -genkey -noout -out "$tmp/tls.key" 2>/dev/null
openssl req -new -key "$tmp/tls.key" -subj "/CN=$dns" -out "$tmp/tls.csr" 2>/dev/null
cat > "$tmp/ext.cnf" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:$dns,DNS:$dns.cluster.local,DNS:localhost,IP:127.0.0.1,IP:::1
EXT
openssl x509 -req -in "$tmp/tls.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" -CAcreateserial \
  -days "$days" -sha256 -extfile "$tmp/ext.cnf" -out "$tmp/tls.crt" 2>/dev/null

chmod 0600 "$tmp/ca.key" "$tmp/tls.key"
chmod 0644 "$tmp/ca.crt" "$tmp/tls.crt"
for f in ca.key ca.crt tls.key tls.crt; do mv -f "$tmp/$f" "$f"; done
echo "certs: made a new CA and serving certificate for $dns in $dir" >&2
