#!/usr/bin/env bash
# A real Kubernetes control plane on loopback, for trying gpuadmit and for make cluster-test:
# etcd, kube-apiserver, kube-controller-manager and kube-scheduler (scripts/k8s-binaries.sh),
# TLS everywhere, fake GPU Nodes (no kubelet: pods are bound by the scheduler and stay Pending),
# and gpuadmit installed from manifests/ as users install it, serving as a local process.
# Everything lives under build/cluster/; every process is stopped by the PID recorded there.
#
#   scripts/cluster.sh up                 control plane + node pool seed-000 + gpuadmit (enforce)
#   scripts/cluster.sh down               stop everything started here, keep nothing running
#   scripts/cluster.sh control-plane      etcd, apiserver, controller-manager, scheduler only
#   scripts/cluster.sh restart-apiserver [ARG...]  stop kube-apiserver and start it again, with
#                                         ARGs added to its flags (e.g. --watch-cache=false)
#   scripts/cluster.sh stop-apiserver     stop kube-apiserver only (start it with control-plane)
#   scripts/cluster.sh nodes POOL         replace the fake Nodes with tests/cluster/nodes/POOL.yaml
#   scripts/cluster.sh install OVERLAY    kubectl apply -k manifests/overlays/OVERLAY, pointed
#                                         at the local gpuadmit (tests/cluster/loopback)
#   scripts/cluster.sh uninstall          delete the webhook configurations and the exempt policy
#   scripts/cluster.sh gpuadmit-start [ARG...]   gpuadmit serve with the manifests' ServiceAccount
#   scripts/cluster.sh gpuadmit-stop
# Ports: CLUSTER_PORT_BASE (default 26000) + 379/380 etcd, 443 apiserver, 257 controller-manager,
# 259 scheduler, 944 gpuadmit. Quiet when there is nothing to do; `up` prints the KUBECONFIG.
# CLUSTER_COMPACTION_INTERVAL: kube-apiserver's --etcd-compaction-interval (its default, 5m);
# make cluster-test shortens it, so that etcd compacts what the watches have seen.
set -euo pipefail
# Go (cert-manager's CRDs come from its module): from PATH, or where Go's installer puts it
command -v go >/dev/null || [[ ! -x /usr/local/go/bin/go ]] || PATH=/usr/local/go/bin:$PATH

root=$(cd "$(dirname "$0")/.." && pwd)
D=$root/build/cluster
P=$D/pki
base=${CLUSTER_PORT_BASE:-26000}
etcd_port=$((base + 379)) peer_port=$((base + 380)) api_port=$((base + 443))
kcm_port=$((base + 257)) sched_port=$((base + 259)) gpuadmit_port=$((base + 944))
api=https://127.0.0.1:$api_port
gpuadmit_bin=${GPUADMIT_BIN:-$root/build/release/gpuadmit}
apiserver_args=()
# the CRDs the cert-manager overlays need (Issuer, Certificate)
cert_manager=v1.21.2
export KUBECONFIG=$D/admin.kubeconfig
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost

log() { echo "cluster: $*" >&2; }
die() { log "$*"; exit 1; }

bins() {
    bin=$("$root/scripts/k8s-binaries.sh")
    kubectl=$bin/kubectl
}

# wait_for SECONDS WHAT COMMAND...: retry COMMAND every half second; bounded
wait_for() {
    local limit=$1 what=$2 i
    shift 2
    for ((i = 0; i < limit * 2; i++)); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    die "$what not there after ${limit}s (logs in $D/logs/)"
}

alive() { # NAME: its recorded process runs, and it is the binary we started
    local f=$D/pid/$1.pid pid exe
    [[ -f $f ]] || return 1
    pid=$(<"$f")
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
    # a binary rebuilt since it started reads "PATH (deleted)"
    [[ ${exe% (deleted)} == "$(<"$D/pid/$1.exe")" ]]
}

# port_free NAME PORT...: refuse to start NAME when another process listens on one of its ports
# (a cluster of another clone, another engineer's): its own error would be buried in its log
port_free() {
    local name=$1 port
    shift
    for port in "$@"; do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            die "port $port ($name) is in use by another process; pick other ports with" \
                "CLUSTER_PORT_BASE (now $base; $name listens on $base + $((port - base)))"
        fi
    done
}

start() { # NAME BINARY ARG...: in the background, logs and PID under build/cluster
    local name=$1 exe=$2
    shift 2
    alive "$name" && return 0
    mkdir -p "$D/pid" "$D/logs"
    setsid "$exe" "$@" >"$D/logs/$name.log" 2>&1 </dev/null &
    echo $! >"$D/pid/$name.pid"
    readlink -f "$exe" >"$D/pid/$name.exe"
}

stop() { # NAME: SIGTERM by recorded PID, SIGKILL after 10 s
    local name=$1 pid i
    if alive "$name"; then
        pid=$(<"$D/pid/$name.pid")
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do
            alive "$name" || break
            sleep 0.1
        done
        alive "$name" && kill -KILL "$pid" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do
            alive "$name" || break
            sleep 0.1
        done
    fi
    rm -f "$D/pid/$name.pid" "$D/pid/$name.exe"
}

issue() { # NAME SUBJECT EXTENSIONS: a key and a certificate signed by the cluster CA
    [[ -f $P/$1.crt ]] && return 0
    openssl req -new -newkey rsa:2048 -nodes -subj "$2" -keyout "$P/$1.key" -out "$P/$1.csr" \
        2>/dev/null
    openssl x509 -req -in "$P/$1.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial \
        -days 30 -extfile <(printf '%b' "$3") -out "$P/$1.crt" 2>/dev/null
    rm -f "$P/$1.csr"
}

pki() {
    mkdir -p "$P"
    chmod 700 "$P"
    if [[ ! -f $P/ca.crt ]]; then
        openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=gpuadmit-cluster-ca" \
            -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
            -keyout "$P/ca.key" -out "$P/ca.crt" 2>/dev/null
    fi
    local san="IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default"
    san+=",DNS:kubernetes.default.svc"
    issue apiserver "/CN=kube-apiserver" "extendedKeyUsage=serverAuth\nsubjectAltName=$san"
    issue admin "/CN=admin/O=system:masters" "extendedKeyUsage=clientAuth"
    issue kcm "/CN=system:kube-controller-manager" "extendedKeyUsage=clientAuth"
    issue scheduler "/CN=system:kube-scheduler" "extendedKeyUsage=clientAuth"
    if [[ ! -f $P/sa.key ]]; then
        openssl genrsa -out "$P/sa.key" 2048 2>/dev/null
        openssl rsa -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null
    fi
    # gpuadmit's own CA and serving certificate, as users make them; the IP SAN for loopback
    if [[ ! -f $D/webhook/tls.crt ]]; then
        local out
        out=$("$gpuadmit_bin" certs --out "$D/webhook" --ip 127.0.0.1 --dns localhost 2>&1) ||
            die "gpuadmit certs: $out"
    fi
}

kubeconfig() { # USER CERT: a kubeconfig with the client certificate embedded
    local f=$D/$1.kubeconfig
    [[ -f $f ]] && return 0
    "$kubectl" config set-cluster local --server="$api" --certificate-authority="$P/ca.crt" \
        --embed-certs --kubeconfig="$f" >/dev/null
    "$kubectl" config set-credentials "$1" --client-certificate="$P/$2.crt" \
        --client-key="$P/$2.key" --embed-certs --kubeconfig="$f" >/dev/null
    "$kubectl" config set-context local --cluster=local --user="$1" --kubeconfig="$f" >/dev/null
    "$kubectl" config use-context local --kubeconfig="$f" >/dev/null
}

readyz() { curl -fsS --cacert "$P/ca.crt" --cert "$P/admin.crt" --key "$P/admin.key" "$api/readyz"; }

control_plane() {
    bins
    pki
    mkdir -p "$D/etcd" "$D/logs"
    chmod 700 "$D/etcd"
    if ! alive etcd; then
        port_free etcd "$etcd_port" "$peer_port"
        start etcd "$bin/etcd" --name=default --data-dir="$D/etcd" --log-level=warn \
            --listen-client-urls="http://127.0.0.1:$etcd_port" \
            --advertise-client-urls="http://127.0.0.1:$etcd_port" \
            --listen-peer-urls="http://127.0.0.1:$peer_port" \
            --initial-advertise-peer-urls="http://127.0.0.1:$peer_port" \
            --initial-cluster="default=http://127.0.0.1:$peer_port" \
            --listen-metrics-urls="" --auto-compaction-retention="${ETCD_COMPACTION:-1h}"
    fi
    wait_for 30 etcd curl -fsS "http://127.0.0.1:$etcd_port/health"

    cat >"$D/audit-policy.yaml" <<'EOF'
# Metadata for every request that changes something, so that the admission webhooks' audit
# annotations are recorded; reads are left out (the controllers' watches would drown them).
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    verbs: [get, list, watch]
  - level: Metadata
EOF
    if ! alive apiserver; then
        port_free kube-apiserver "$api_port"
        start apiserver "$bin/kube-apiserver" --etcd-servers="http://127.0.0.1:$etcd_port" \
            --bind-address=127.0.0.1 --secure-port="$api_port" --advertise-address=127.0.0.1 \
            --endpoint-reconciler-type=none --cert-dir="$D/apiserver" \
            --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
            --client-ca-file="$P/ca.crt" --authorization-mode=Node,RBAC --allow-privileged=true \
            --service-account-issuer=https://kubernetes.default.svc \
            --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
            --service-cluster-ip-range=10.0.0.0/24 \
            --audit-policy-file="$D/audit-policy.yaml" --audit-log-path="$D/audit.log" \
            --audit-log-maxbackup=1 --audit-log-maxsize=100 \
            --etcd-compaction-interval="${CLUSTER_COMPACTION_INTERVAL:-5m}" \
            ${apiserver_args[@]+"${apiserver_args[@]}"}
    fi
    wait_for 60 kube-apiserver readyz
    kubeconfig admin admin
    kubeconfig kcm kcm
    kubeconfig scheduler scheduler

    if ! alive controller-manager; then
        port_free kube-controller-manager "$kcm_port"
        start controller-manager "$bin/kube-controller-manager" --kubeconfig="$D/kcm.kubeconfig" \
            --authentication-kubeconfig="$D/kcm.kubeconfig" \
            --authorization-kubeconfig="$D/kcm.kubeconfig" --bind-address=127.0.0.1 \
            --secure-port="$kcm_port" --cert-dir="$D/kcm" --controllers='*' \
            --use-service-account-credentials --leader-elect=false \
            --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
            --service-cluster-ip-range=10.0.0.0/24 --node-monitor-grace-period=24h
    fi
    cat >"$D/scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $D/scheduler.kubeconfig
leaderElection:
  leaderElect: false
EOF
    if ! alive scheduler; then
        port_free kube-scheduler "$sched_port"
        start scheduler "$bin/kube-scheduler" --config="$D/scheduler.yaml" \
            --authentication-kubeconfig="$D/scheduler.kubeconfig" \
            --authorization-kubeconfig="$D/scheduler.kubeconfig" --bind-address=127.0.0.1 \
            --secure-port="$sched_port" --cert-dir="$D/scheduler"
    fi
    # Pods need their namespace's ServiceAccount "default", which the controller-manager makes.
    wait_for 60 "the ServiceAccount default/default" "$kubectl" get serviceaccount default
}

nodes() { # POOL
    local pool=$root/tests/cluster/nodes/$1.yaml n
    [[ -f $pool ]] || die "no node pool $pool"
    bins
    "$kubectl" delete nodes --all --wait=true >/dev/null
    # Created, not applied: a Node's status is kept on create and dropped on update.
    "$kubectl" create -f "$pool" >/dev/null
    # The node-lifecycle controller lifts the not-ready taint that every new Node gets.
    for n in $("$kubectl" get nodes -o name); do
        wait_for 60 "$n without the not-ready taint" not_tainted "$n"
    done
}

not_tainted() {
    [[ $("$kubectl" get "$1" -o jsonpath='{.spec.taints[*].key}') != *node.kubernetes.io/not-ready* ]]
}

install() { # OVERLAY: the overlay as is, plus tests/cluster/loopback (clientConfig only)
    local overlay=$1 k=$D/kustomize
    [[ -d $root/manifests/overlays/$overlay ]] || die "no overlay manifests/overlays/$overlay"
    bins
    pki
    mkdir -p "$k/loopback" "$k/$overlay"
    sed -e "s|https://127.0.0.1:PORT/|https://127.0.0.1:$gpuadmit_port/|" \
        -e "s|CA_BUNDLE|$(base64 -w0 "$D/webhook/ca.crt")|" \
        "$root/tests/cluster/loopback/kustomization.yaml" >"$k/loopback/kustomization.yaml"
    cat >"$k/$overlay/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../../../manifests/overlays/$overlay
components:
  - ../loopback
EOF
    [[ $overlay != cert-manager* ]] || cert_manager_crds
    "$kubectl" apply -k "$k/$overlay" >"$D/logs/apply-$overlay.log"
}

# The cert-manager overlays hold Issuers and Certificates: their CRDs, as cert-manager publishes
# them in its Go module (no cert-manager runs here, so nothing injects a caBundle).
cert_manager_crds() {
    local dir
    dir=$(go mod download -json "github.com/cert-manager/cert-manager@$cert_manager" |
        sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    [[ -d $dir/deploy/crds ]] || die "no CRDs in github.com/cert-manager/cert-manager@$cert_manager"
    "$kubectl" apply -f "$dir/deploy/crds/cert-manager.io_issuers.yaml" \
        -f "$dir/deploy/crds/cert-manager.io_certificates.yaml" >/dev/null
    # (kubectl wait fails outright on a CRD whose status has no conditions yet)
    wait_for 60 "cert-manager's CRDs" established issuers.cert-manager.io certificates.cert-manager.io
}

established() {
    local c
    for c in "$@"; do
        [[ $("$kubectl" get crd "$c" \
            -o jsonpath='{.status.conditions[?(@.type=="Established")].status}') == True ]] ||
            return 1
    done
}

uninstall() {
    bins
    "$kubectl" delete mutatingwebhookconfiguration,validatingwebhookconfiguration gpuadmit \
        --ignore-not-found >/dev/null
    "$kubectl" delete validatingadmissionpolicybinding,validatingadmissionpolicy \
        gpuadmit-exempt-label --ignore-not-found >/dev/null
}

gpuadmit_start() {
    bins
    pki
    local kc=$D/gpuadmit.kubeconfig tf=$D/gpuadmit.token
    # A token of the manifests' ServiceAccount: the view runs with the RBAC they grant. It goes
    # to a file of mode 0600 that the kubeconfig names (tokenFile), never into a command line,
    # where any user of the machine could read it (ps, /proc/PID/cmdline).
    (umask 077 && "$kubectl" -n gpuadmit-system create token gpuadmit --duration=24h >"$tf.new")
    mv -f "$tf.new" "$tf"
    rm -f "$kc"
    "$kubectl" config set-cluster local --server="$api" --certificate-authority="$P/ca.crt" \
        --embed-certs --kubeconfig="$kc" >/dev/null
    "$kubectl" config set "users.gpuadmit.tokenFile" "$tf" --kubeconfig="$kc" >/dev/null
    "$kubectl" config set-context local --cluster=local --user=gpuadmit --kubeconfig="$kc" \
        >/dev/null
    "$kubectl" config use-context local --kubeconfig="$kc" >/dev/null
    stop gpuadmit
    port_free gpuadmit "$gpuadmit_port"
    start gpuadmit "$gpuadmit_bin" serve --listen "127.0.0.1:$gpuadmit_port" \
        --tls-cert "$D/webhook/tls.crt" --tls-key "$D/webhook/tls.key" --kubeconfig "$kc" \
        --debug-endpoints --shutdown-grace 1 "$@"
    wait_for 30 "gpuadmit /readyz" curl -fsS --cacert "$D/webhook/ca.crt" \
        "https://127.0.0.1:$gpuadmit_port/readyz"
}

down() {
    local n
    for n in gpuadmit scheduler controller-manager apiserver etcd; do stop "$n"; done
}

cmd=${1:-}
[[ $# -gt 0 ]] && shift
case $cmd in
    up)
        control_plane
        [[ -n $("$kubectl" get nodes -o name) ]] || nodes seed-000
        "$kubectl" get namespace gpuadmit-system >/dev/null 2>&1 || install enforce
        alive gpuadmit || gpuadmit_start
        echo "export KUBECONFIG=$KUBECONFIG"
        ;;
    down) down ;;
    control-plane) control_plane ;;
    restart-apiserver) apiserver_args=("$@") && stop apiserver && control_plane ;;
    stop-apiserver) stop apiserver ;;
    nodes) nodes "$@" ;;
    install) install "$@" ;;
    uninstall) uninstall ;;
    gpuadmit-start) gpuadmit_start "$@" ;;
    gpuadmit-stop) stop gpuadmit ;;
    *) sed -n '2,21s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
