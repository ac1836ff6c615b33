#!/usr/bin/env python3
"""Checks the container image that make image wrote, from its archive alone:

    VERSION=V image/check-image.py build/image/gpuadmit-V.oci.tar

* the OCI layout: one manifest named docker.io/library/gpuadmit:V, every blob's digest and
  size, the config (user 65532:65532, entrypoint /usr/bin/gpuadmit, port 8443, version label),
  and that skopeo reads it the same way and converts it to a docker-archive;
* the layer: owned by root, nothing writable by group or others, no shell, passwd/group with
  65532, the CA bundle, nsswitch;
* the root filesystem unpacked from the layer, run in a chroot, so that a library the image
  lacks shows up: gpuadmit --version and serve --help; nothing in it is writable by uid 65532;
  and gpuadmit serve, as uid 65532 on a read-only bind mount of that root filesystem, with the
  Deployment's arguments, in-cluster credentials and a simulated API server (tests/e2e): /healthz
  answers 200 over TLS, /readyz once the cluster view synced, /mutate patches a GPU pod; a
  kubeconfig naming kubernetes.default.svc resolves it through the image's /etc/hosts; the
  system CA bundle is what libcurl reads without a CA of its own.

Needs root (chroot, mount namespaces, switching to uid 65532): as another user it fails.
Prints "ok - NAME" or "not ok - NAME: REASON" per check, and ends with
"image: N passed, M failed".
"""
import glob
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "tests", "e2e"))
from common import Fail, check, eq  # noqa: E402
from fake_apiserver import FakeAPIServer  # noqa: E402

UID = 65532
SHELLS = {"sh", "bash", "dash", "ash", "busybox", "zsh", "ksh"}
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
CHROOT = shutil.which("chroot", path="/usr/sbin:/usr/bin:/sbin:/bin") or "chroot"


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=60, **kw)


class Image:
    """The archive unpacked: layout in work/layout, the layer's files in work/rootfs."""

    def __init__(self, archive, version, work):
        self.archive, self.version, self.work = archive, version, work
        self.layout = os.path.join(work, "layout")
        self.rootfs = os.path.join(work, "rootfs")
        self.index = self.manifest = self.config = self.layer = None

    def blob(self, digest):
        algo, hexd = digest.split(":", 1)
        return os.path.join(self.layout, "blobs", algo, hexd)

    def load_json(self, desc):
        with open(self.blob(desc["digest"]), "rb") as f:
            return json.loads(f.read())


I = None  # the Image under test


# ------------------------------------------------------------------------------ the archive

def test_layout():
    with open(os.path.join(I.layout, "oci-layout")) as f:
        eq(json.load(f), {"imageLayoutVersion": "1.0.0"}, "oci-layout")
    with open(os.path.join(I.layout, "index.json")) as f:
        I.index = json.load(f)
    eq(len(I.index["manifests"]), 1, "manifests in index.json")
    desc = I.index["manifests"][0]
    eq(desc["annotations"].get("org.opencontainers.image.ref.name"),
       "docker.io/library/gpuadmit:" + I.version, "the image's name")
    eq(desc["mediaType"], "application/vnd.oci.image.manifest.v1+json", "manifest media type")
    I.manifest = I.load_json(desc)
    eq(len(I.manifest["layers"]), 1, "layers")
    I.layer = I.manifest["layers"][0]
    eq(I.layer["mediaType"], "application/vnd.oci.image.layer.v1.tar+gzip", "layer media type")
    blobs = sorted(glob.glob(os.path.join(I.layout, "blobs", "sha256", "*")))
    eq(len(blobs), 3, "blobs (manifest, config, layer)")
    for d in (desc, I.manifest["config"], I.layer):
        path = I.blob(d["digest"])
        eq("sha256:" + sha256_file(path), d["digest"], "digest of " + path)
        eq(os.path.getsize(path), d["size"], "size of " + d["digest"])


def test_config():
    I.config = I.load_json(I.manifest["config"])
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    eq((I.config["os"], I.config["architecture"]), ("linux", arch), "platform")
    c = I.config["config"]
    eq(c.get("User"), "%d:%d" % (UID, UID), "User")
    eq(c.get("Entrypoint"), ["/usr/bin/gpuadmit"], "Entrypoint")
    eq(c.get("Cmd"), None, "Cmd")
    eq(c.get("WorkingDir"), "/", "WorkingDir")
    eq(c.get("ExposedPorts"), {"8443/tcp": {}}, "ExposedPorts")
    eq(c.get("Labels", {}).get("org.opencontainers.image.version"), I.version, "version label")
    # docker build and buildah give a scratch image the default PATH; make image gives none
    eq([e for e in c.get("Env") or [] if not e.startswith("PATH=")], [], "Env besides PATH")
    unpacked = run(["sh", "-c", 'gzip -dc "$0" | sha256sum', I.blob(I.layer["digest"])])
    eq(I.config["rootfs"]["diff_ids"], ["sha256:" + unpacked.stdout.split()[0]], "diff_ids")


def test_skopeo_reads_it():
    ref = "oci-archive:" + I.archive
    r = run(["skopeo", "inspect", "--config", ref])
    eq(r.returncode, 0, "skopeo inspect --config exit code (%s)" % r.stderr.strip())
    eq(json.loads(r.stdout), I.config, "the config skopeo reads")
    dst = os.path.join(I.work, "docker-archive.tar")
    r = run(["skopeo", "copy", "--quiet", ref, "docker-archive:%s:gpuadmit:%s" % (dst, I.version)])
    eq(r.returncode, 0, "skopeo copy to a docker-archive exit code (%s)" % r.stderr.strip())
    with tarfile.open(dst) as t:
        m = json.load(t.extractfile("manifest.json"))
    eq([x["RepoTags"] for x in m], [["docker.io/library/gpuadmit:" + I.version]],
       "docker-archive RepoTags")


# ------------------------------------------------------------------------------ the layer

def test_layer_files():
    names = {}
    with tarfile.open(I.blob(I.layer["digest"]), "r:gz") as t:
        for m in t.getmembers():
            name = m.name[2:] if m.name.startswith("./") else m.name
            names[name] = m
            check((m.uid, m.gid) == (0, 0), "%s is owned by %d:%d, not root" % (name, m.uid, m.gid))
            check(m.isdir() or m.isfile() or m.issym(), "%s: not a file, folder or link" % name)
            if not m.issym():
                check(m.mode & 0o022 == 0, "%s: writable by group or others (%o)" % (name, m.mode))
                check(m.mode & 0o7000 == 0, "%s: setuid, setgid or sticky (%o)" % (name, m.mode))
            check(os.path.basename(name) not in SHELLS, "%s: the image has a shell" % name)
    for must in ("usr/bin/gpuadmit", "etc/passwd", "etc/group", "etc/nsswitch.conf",
                 "etc/ssl/certs/ca-certificates.crt", "etc/os-release"):
        check(must in names, "%s is missing" % must)
    check("bin/sh" not in names and "bin" not in names, "the image has /bin")
    # the JSON library is yyjson (Debian's libyyjson0), and nothing of jansson is left
    check("var/lib/dpkg/status.d/libyyjson0" in names, "libyyjson0 is not among the packages")
    check(any(re.search(r"/libyyjson\.so\.0", n) for n in names),
          "no libyyjson.so.0 in the image")
    jansson = [n for n in names if "jansson" in n]
    check(not jansson, "the image still holds jansson: %s" % ", ".join(sorted(jansson)[:5]))
    eq(names["usr/bin/gpuadmit"].mode & 0o7777, 0o755, "mode of /usr/bin/gpuadmit")
    files = [n for n, m in names.items() if m.isfile()]
    libs = [n for n in files if re.search(r"\.so(\.|$)", n)]
    sys.stdout.write("# layer: %d entries, %d files, %d shared libraries (with the loader), "
                     "%d links, %d Debian packages\n"
                     % (len(names), len(files), len(libs),
                        sum(1 for m in names.values() if m.issym()),
                        sum(1 for n in files if n.startswith("var/lib/dpkg/status.d/"))))


def unpack_rootfs():
    os.makedirs(I.rootfs)
    r = run(["tar", "-xpzf", I.blob(I.layer["digest"]), "--numeric-owner", "-C", I.rootfs])
    eq(r.returncode, 0, "unpacking the layer (%s)" % r.stderr.strip())


def rootfs_file(path):
    with open(os.path.join(I.rootfs, path.lstrip("/"))) as f:
        return f.read()


def test_etc_files():
    check("nonroot:x:%d:%d:" % (UID, UID) in rootfs_file("/etc/passwd"), "no uid 65532 in passwd")
    check("nonroot:x:%d:" % UID in rootfs_file("/etc/group"), "no gid 65532 in /etc/group")
    check(re.search(r"^hosts:\s+files dns$", rootfs_file("/etc/nsswitch.conf"), re.M),
          "nsswitch.conf does not say hosts: files dns")
    n = rootfs_file("/etc/ssl/certs/ca-certificates.crt").count("-----BEGIN CERTIFICATE-----")
    check(n >= 100, "the CA bundle holds %d certificates" % n)
    sys.stdout.write("# CA bundle: %d certificates\n" % n)


# ------------------------------------------------------------------------------ in a chroot

def chroot_run(args, user=True, env=None):
    spec = ["--userspec=%d:%d" % (UID, UID), "--groups=%d" % UID] if user else []
    return subprocess.run([CHROOT] + spec + [I.rootfs] + args, capture_output=True, text=True,
                          timeout=30, env=env or {})


def test_version_in_chroot():
    for user in (False, True):
        r = chroot_run(["/usr/bin/gpuadmit", "--version"], user=user)
        eq((r.returncode, r.stdout, r.stderr), (0, "gpuadmit %s\n" % I.version, ""),
           "gpuadmit --version in the image's root filesystem, as %s" % (UID if user else "root"))


def test_serve_help_in_chroot():
    r = chroot_run(["/usr/bin/gpuadmit", "serve", "--help"])
    eq(r.returncode, 0, "serve --help exit code (%s)" % r.stderr.strip())
    check(r.stdout.startswith("usage: gpuadmit serve --tls-cert FILE --tls-key FILE"),
          "serve --help printed %r" % r.stdout[:80])


def test_missing_library_is_caught():
    """The chroot runs are worth something only if a missing library fails them."""
    lib = glob.glob(os.path.join(I.rootfs, "usr/lib/*/libyyjson.so.0*"))
    check(lib, "no libyyjson in the image")
    moved = [(p, p + ".away") for p in lib]
    for a, b in moved:
        os.rename(a, b)
    try:
        r = chroot_run(["/usr/bin/gpuadmit", "--version"])
    finally:
        for a, b in moved:
            os.rename(b, a)
    eq(r.returncode, 127, "exit code without libyyjson")
    check("libyyjson.so.0: cannot open shared object file" in r.stderr,
          "stderr without libyyjson: %r" % r.stderr)


def test_nothing_writable_by_65532():
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: become 65532 inside the root filesystem and try
        os.close(rfd)
        out = {"checked": 0, "writable": [], "created": []}
        try:
            os.chroot(I.rootfs)
            os.chdir("/")
            os.setgroups([UID])
            os.setgid(UID)
            os.setuid(UID)
            for d, dirs, files in os.walk("/"):
                for n in [d] + [os.path.join(d, f) for f in files]:
                    if os.path.islink(n):
                        continue
                    out["checked"] += 1
                    if os.access(n, os.W_OK):
                        out["writable"].append(n)
            for d in ("/", "/etc", "/usr/bin", "/tmp"):
                try:
                    with open(os.path.join(d, "probe"), "x"):
                        out["created"].append(d)
                except OSError:
                    pass
        except BaseException as e:
            out["error"] = repr(e)
        os.write(wfd, json.dumps(out).encode())
        os._exit(0)
    os.close(wfd)
    with os.fdopen(rfd) as f:
        out = json.loads(f.read())
    os.waitpid(pid, 0)
    check("error" not in out, "as uid 65532: %s" % out.get("error"))
    check(out["checked"] > 100, "only %d paths checked" % out["checked"])
    eq(out["writable"], [], "paths writable by uid 65532")
    eq(out["created"], [], "folders where uid 65532 created a file")
    sys.stdout.write("# uid 65532 can write none of %d files and folders\n" % out["checked"])


# ------------------------------------------------------------------------------ serving

class Server:
    """gpuadmit serve as uid 65532, chrooted into a read-only bind mount of the root filesystem,
    in a mount namespace of its own (unshare), with an environment of exactly env."""

    def __init__(self, args, env):
        self.log_path = os.path.join(I.work, "serve-%d.log" % time.monotonic_ns())
        self.log = open(self.log_path, "w+")
        inner = ("mount --bind \"$0\" \"$0\" && mount -o remount,bind,ro \"$0\" \"$0\" && "
                 "exec chroot --userspec=%d:%d --groups=%d \"$0\" /usr/bin/gpuadmit \"$@\""
                 % (UID, UID, UID))
        self.proc = subprocess.Popen(["unshare", "--mount", "sh", "-c", inner, I.rootfs] + args,
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     env=dict(env, PATH="/usr/sbin:/usr/bin:/sbin:/bin"))
        self.port = None

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def events(self):
        out = []
        for line in self.text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def wait_for(self, what, pred, timeout=15):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for e in self.events():
                if pred(e):
                    return e
            check(self.proc.poll() is None, "the server exited (%s) before %s:\n%s"
                  % (self.proc.returncode, what, self.text()[-2000:]))
            time.sleep(0.05)
        raise Fail("no %s in %d s; log:\n%s" % (what, timeout, self.text()[-2000:]))

    def start(self):
        e = self.wait_for("serving line", lambda e: e.get("msg") == "serving")
        self.port = e["port"]
        return self

    def status(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            return dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)

    def curl(self, path, ca, data=None):
        args = ["curl", "-sS", "--max-time", "5", "--cacert", ca, "-o", "-", "-w",
                "\n%{http_code}", "https://127.0.0.1:%d%s" % (self.port, path)]
        if data:
            args += ["-H", "Content-Type: application/json", "--data-binary", "@" + data]
        r = run(args)
        eq(r.returncode, 0, "curl %s exit code (%s)" % (path, r.stderr.strip()))
        body, _, code = r.stdout.rpartition("\n")
        return int(code), body

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def install(src, dst, mode, gid=0):
    dst = os.path.join(I.rootfs, dst.lstrip("/"))
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copyfile(src, dst)
    os.chown(dst, 0, gid)
    os.chmod(dst, mode)


def write(dst, text):
    with tempfile.NamedTemporaryFile("w", dir=I.work) as f:
        f.write(text)
        f.flush()
        install(f.name, dst, 0o644)


class Cluster:
    """A simulated API server on 127.0.0.1 whose certificate names kubernetes.default.svc,
    and the files a pod gets: the Deployment's certificate and rules under /etc/gpuadmit, the
    service account's token and CA, an /etc/hosts as the kubelet writes it."""

    def __init__(self):
        self.certs = os.path.join(I.work, "certs")
        self.kube = os.path.join(I.work, "kube-certs")
        for d, svc in ((self.certs, []),
                       (self.kube, ["--service", "kubernetes", "--namespace", "default"])):
            r = run([os.path.join(TOP, "build", "release", "gpuadmit"), "certs", "--out", d,
                     "--dns", "localhost", "--ip", "127.0.0.1"] + svc)
            eq(r.returncode, 0, "gpuadmit certs --out %s (%s)" % (d, r.stderr.strip()))
        self.fake = FakeAPIServer(os.path.join(self.kube, "tls.crt"),
                                  os.path.join(self.kube, "tls.key"), token="image-check-token")
        self.fake.start()
        self.fake.add("nodes", {
            "metadata": {"name": "gpu-0", "labels": {"nvidia.com/gpu.present": "true"}},
            "spec": {}, "status": {"capacity": {"nvidia.com/gpu": "8"},
                                   "allocatable": {"nvidia.com/gpu": "8"},
                                   "conditions": [{"type": "Ready", "status": "True"}]}})
        self.fake.add("priorityclasses", {"metadata": {"name": "gpu-standard"}, "value": 100000,
                                          "preemptionPolicy": "PreemptLowerPriority"})
        # a Secret volume with fsGroup 65532: the key readable by the group, not by others
        install(os.path.join(self.certs, "tls.crt"), "/etc/gpuadmit/tls/tls.crt", 0o644)
        install(os.path.join(self.certs, "tls.key"), "/etc/gpuadmit/tls/tls.key", 0o640, UID)
        install(os.path.join(TOP, "rules", "default.yaml"), "/etc/gpuadmit/rules/default.yaml",
                0o644)
        write(SA_DIR + "/token", "image-check-token")
        write(SA_DIR + "/namespace", "gpuadmit-system")
        install(os.path.join(self.kube, "ca.crt"), SA_DIR + "/ca.crt", 0o644)
        write("/etc/hosts", "127.0.0.1\tlocalhost\n127.0.0.1\tkubernetes.default.svc\n")

    def kubeconfig(self, dst, with_ca):
        ca = '    certificate-authority: "%s/ca.crt"\n' % SA_DIR if with_ca else ""
        write(dst, "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n"
                   "  cluster:\n    server: \"https://kubernetes.default.svc:%d\"\n%s"
                   "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                   "users:\n- name: u\n  user: {token: image-check-token}\n"
                   % (self.fake.port, ca))

    def ca(self):
        return os.path.join(self.certs, "ca.crt")

    def stop(self):
        self.fake.stop()


CLUSTER = None


def deployment_args(extra=()):
    """The Deployment's arguments, on a free loopback port instead of 0.0.0.0:8443."""
    return ["serve", "--listen", "127.0.0.1:0", "--tls-cert", "/etc/gpuadmit/tls/tls.crt",
            "--tls-key", "/etc/gpuadmit/tls/tls.key", "--rules", "/etc/gpuadmit/rules",
            *extra]


def test_serve_in_cluster_as_65532():
    s = Server(deployment_args(), {"KUBERNETES_SERVICE_HOST": "127.0.0.1",
                                   "KUBERNETES_SERVICE_PORT": str(CLUSTER.fake.port)})
    try:
        s.start()
        st = s.status()
        eq(st["Uid"].split(), [str(UID)] * 4, "the server's uids")
        eq(st["Gid"].split(), [str(UID)] * 4, "the server's gids")
        eq(st["Groups"].split(), [str(UID)], "the server's groups")
        eq(int(st["CapEff"], 16), 0, "the server's effective capabilities")
        eq(s.curl("/healthz", CLUSTER.ca()), (200, "ok\n"), "GET /healthz")
        s.wait_for("list of nodes", lambda e: e.get("msg") == "list" and e.get("kind") == "nodes")
        end = time.monotonic() + 15
        while s.curl("/readyz", CLUSTER.ca())[0] != 200 and time.monotonic() < end:
            time.sleep(0.1)
        eq(s.curl("/readyz", CLUSTER.ca()), (200, "ok\n"), "GET /readyz after the sync")
        code, body = s.curl("/mutate", CLUSTER.ca(),
                            data=os.path.join(TOP, "tests", "data", "review-pod.json"))
        eq(code, 200, "POST /mutate status")
        resp = json.loads(body)["response"]
        eq((resp["allowed"], resp.get("patchType")), (True, "JSONPatch"), "the mutation %s" % resp)
        start = s.wait_for("kube client line", lambda e: e.get("msg") == "kube client starting")
        eq(start.get("server"), "https://127.0.0.1:%d" % CLUSTER.fake.port, "in-cluster server")
    finally:
        rc = s.stop()
    eq(rc, 0, "exit code after SIGTERM")
    check(any(e.get("msg") == "stopped" for e in s.events()), "no 'stopped' line")
    levels = {e.get("level") for e in s.events()}
    check(levels <= {"info"}, "log levels %s:\n%s" % (levels, s.text()[-2000:]))


def test_kubeconfig_name_resolves_in_image():
    """getaddrinfo inside the image: kubernetes.default.svc is only in the image's /etc/hosts."""
    CLUSTER.kubeconfig("/etc/gpuadmit/kubeconfig", with_ca=True)
    s = Server(deployment_args(["--kubeconfig", "/etc/gpuadmit/kubeconfig"]), {})
    try:
        s.start()
        e = s.wait_for("list of nodes",
                       lambda e: e.get("msg") == "list" and e.get("kind") == "nodes")
        eq(e.get("items"), 1, "nodes listed through kubernetes.default.svc")
    finally:
        s.stop()


def test_system_ca_bundle_is_used():
    """Without a CA in the kubeconfig libcurl reads /etc/ssl/certs/ca-certificates.crt: the
    handshake then fails on the (unknown) issuer, not on a missing CA file."""
    CLUSTER.kubeconfig("/etc/gpuadmit/kubeconfig-system-ca", with_ca=False)
    s = Server(deployment_args(["--kubeconfig", "/etc/gpuadmit/kubeconfig-system-ca"]), {})
    try:
        s.start()
        e = s.wait_for("failed list", lambda e: e.get("msg") == "list failed; retrying")
    finally:
        s.stop()
    err = e.get("error", "")
    check("unable to get local issuer certificate" in err,
          "the list failed for another reason than the unknown issuer: %r" % err)


TESTS = [test_layout, test_config, test_skopeo_reads_it, test_layer_files, test_etc_files,
         test_version_in_chroot, test_serve_help_in_chroot, test_missing_library_is_caught,
         test_nothing_writable_by_65532, test_serve_in_cluster_as_65532,
         test_kubeconfig_name_resolves_in_image, test_system_ca_bundle_is_used]


def main():
    global I, CLUSTER
    if len(sys.argv) != 2 or not os.environ.get("VERSION"):
        sys.stderr.write("usage: VERSION=V check-image.py ARCHIVE\n")
        return 2
    passed = failed = 0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gpuadmit-image-") as work:
        os.chmod(work, 0o755)  # uid 65532 walks through it into the root filesystem
        step = "setup"
        try:
            check(os.geteuid() == 0, "needs root: chroot, mount namespaces and uid 65532 "
                                     "(run make image-check as root)")
            I = Image(os.path.abspath(sys.argv[1]), os.environ["VERSION"], work)
            check(os.path.isfile(I.archive), "%s does not exist" % I.archive)
            os.makedirs(I.layout)
            with tarfile.open(I.archive) as t:
                t.extractall(I.layout)
            step = "test_layout"  # the other checks need the manifest it reads
            test_layout()
            passed += 1
            sys.stdout.write("ok - test_layout\n")
            step = "setup"
            unpack_rootfs()
            CLUSTER = Cluster()
        except Exception as e:
            sys.stdout.write("not ok - %s: %s\nimage: %d passed, 1 failed\n" % (step, e, passed))
            return 1
        try:
            for fn in TESTS[1:]:
                try:
                    fn()
                    passed += 1
                    sys.stdout.write("ok - %s\n" % fn.__name__)
                except Fail as e:
                    failed += 1
                    sys.stdout.write("not ok - %s: %s\n" % (fn.__name__, e))
                except Exception as e:
                    failed += 1
                    sys.stdout.write("not ok - %s: %s: %s\n# %s\n" % (
                        fn.__name__, type(e).__name__, e,
                        traceback.format_exc().replace("\n", "\n# ")))
                sys.stdout.flush()
        finally:
            CLUSTER.stop()
    sys.stdout.write("# total %.1f s\nimage: %d passed, %d failed\n"
                     % (time.monotonic() - t0, passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
