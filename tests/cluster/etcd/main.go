// etcd built from its Go module, for make cluster when Debian's etcd-server package cannot be
// fetched (scripts/k8s-binaries.sh): `go install go.etcd.io/etcd/server/v3@vX` is refused, the
// server's go.mod having replace directives, so this wrapper calls what etcd's own main.go
// (go.etcd.io/etcd/server/v3/main.go) calls.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
