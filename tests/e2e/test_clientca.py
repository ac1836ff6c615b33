#!/usr/bin/env python3
"""End-to-end tests of client-certificate verification (`gpuadmit serve --client-ca`): the real
binary over real TLS, with client certificates made for the run (python3-cryptography).

    GPUADMIT_BIN=build/release/gpuadmit python3 tests/e2e/test_clientca.py

Only a client presenting a certificate from the --client-ca bundle, for client authentication,
valid now (and named by --client-name when given) may call /mutate, /validate and /debug/*;
everyone else gets a 403 metav1.Status saying why, on a connection that stays usable. /healthz,
/readyz and /metrics stay open for probes and scrapers.
"""
import datetime
import os
import socket
import time
import ssl
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CertPair, SLOW, Fail, check, eq, run_suite, t  # noqa: E402
from test_server import (BIN, JSON_CT, Conn, Reply, Server, call,  # noqa: E402
                         check_review_reply, check_status_reply, fast_body, metrics_value)

from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID  # noqa: E402

SUITE_LIMIT_S = 150 if SLOW else 90
SNAPSHOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "snapshots",
                        "shared.json")


class E:
    work = None
    srv = None     # the serving pair (gpuadmit certs)
    ca = None      # the client CA
    other = None   # a CA the server does not trust


# ---------------------------------------------------------------------------------------------
# client PKI

def _name(cn):
    cns = (cn,) if isinstance(cn, str) else cn
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, c) for c in cns])


class Issuer:
    """A CA (or an intermediate, when parent is given) that signs client certificates."""

    def __init__(self, cn, parent=None, seconds=30 * 86400):
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        b = (x509.CertificateBuilder().subject_name(_name(cn))
             .issuer_name(parent.cert.subject if parent else _name(cn))
             .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(hours=1))
             .not_valid_after(now + datetime.timedelta(seconds=seconds))
             .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
             .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False,
                                          False), critical=True))
        self.cert = b.sign(parent.key if parent else self.key, hashes.SHA256())
        self.parent = parent

    def pem(self):
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, directory, name, cn="kube-apiserver", dns=(), usage="client",
              days=(-1, 30)):
        """A leaf certificate and key in directory/NAME.crt and .key; the .crt holds the chain
        up to (not including) the root."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        b = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(self.cert.subject)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now + datetime.timedelta(days=days[0]))
             .not_valid_after(now + datetime.timedelta(days=days[1]))
             .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True))
        if usage is not None:
            oid = {"client": ExtendedKeyUsageOID.CLIENT_AUTH,
                   "server": ExtendedKeyUsageOID.SERVER_AUTH}[usage]
            b = b.add_extension(x509.ExtendedKeyUsage([oid]), critical=False)
        if dns:
            b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(d) for d in dns]),
                                critical=False)
        cert = b.sign(self.key, hashes.SHA256())
        crt, keyp = os.path.join(directory, name + ".crt"), os.path.join(directory, name + ".key")
        with open(crt, "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
            if self.parent is not None:
                f.write(self.pem())
        with open(keyp, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        return crt, keyp


def write(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, path)


def ctx_with(cert=None, tls=None):
    """A client context trusting the serving CA, presenting cert (a (crt, key) pair) if given,
    pinned to TLS 1.2 or 1.3 when tls says so."""
    ctx = E.srv.context()
    if cert is not None:
        ctx.load_cert_chain(*cert)
    if tls == "1.2":
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    elif tls == "1.3":
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    return ctx


def served(srv, ctx, uid, path="/validate"):
    c = Conn(srv.port, ctx)
    try:
        rep = call(c, "POST", path, fast_body(uid), JSON_CT)
        check_review_reply(rep, uid, path == "/mutate")
    finally:
        c.close()


def refused(srv, ctx, part, path="/validate"):
    """A 403 whose message contains part; the same connection then serves /healthz."""
    c = Conn(srv.port, ctx)
    try:
        if path.startswith("/debug/"):
            rep = call(c, "GET", path)
        else:
            rep = call(c, "POST", path, fast_body("refused"), JSON_CT)
        check_status_reply(rep, 403, "Forbidden", part)
        check(b"refused" not in rep.body, "a refusal echoes the review: %r" % rep.body[:200])
        rep = call(c, "GET", "/healthz")
        eq((rep.status, rep.body), (200, b"ok\n"), "/healthz on the refused connection")
        eq(c.connects, 1, "connections used (the 403 must not close it)")
    finally:
        c.close()


def serve(*extra, ca_file=None, name="cca"):
    ca_file = ca_file or os.path.join(E.work, "client-ca.crt")
    return Server(E.work, E.srv.crt, E.srv.key, "--client-ca", ca_file, *extra, name=name)


def metric(srv, name, absent=None):
    return metrics_value(srv, ctx_with(), name, absent)


# ---------------------------------------------------------------------------------------------
# tests

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


@test
def unauthenticated_refused_probes_open():
    with serve("--debug-endpoints", "--cluster-snapshot", SNAPSHOT) as srv:
        for tls in ("1.2", "1.3"):
            ctx = ctx_with(tls=tls)
            for path in ("/validate", "/mutate", "/debug/view", "/debug/explain"):
                refused(srv, ctx, path + " requires a client certificate from --client-ca: "
                        "no client certificate was presented", path)
            c = Conn(srv.port, ctx)
            try:
                for path in ("/healthz", "/readyz"):
                    rep = call(c, "GET", path)
                    eq((rep.status, rep.body), (200, b"ok\n"), "%s over TLS %s" % (path, tls))
                rep = call(c, "GET", "/metrics")
                eq(rep.status, 200, "/metrics without a client certificate")
                # nothing else either: not which paths exist, not the body limit
                rep = call(c, "GET", "/nope")
                check_status_reply(rep, 403, "Forbidden", "this path requires a client certificate")
            finally:
                c.close()
            c = Conn(srv.port, ctx)
            try:
                c.putrequest("POST", "/validate")
                c.putheader("Content-Type", "application/json")
                c.putheader("Content-Length", "1000000000")
                c.endheaders()
                resp = c.getresponse()
                check_status_reply(Reply(resp, resp.read()), 403, "Forbidden",
                                   "no client certificate was presented")
            finally:
                c.close()
        # per TLS version: 4 paths, /nope and the oversized POST
        eq(metric(srv, 'gpuadmit_http_errors_total{code="403"}'), 12.0, "403s counted")
        eq(metric(srv, 'gpuadmit_http_errors_total{code="413"}', absent=0.0), 0.0, "413s")
        eq(metric(srv, 'gpuadmit_http_errors_total{code="404"}', absent=0.0), 0.0, "404s")
        # not reviews: a caller without a certificate must not move the review error ratio
        # (the GpuadmitWebhookErrors alert), nor write a log line per request
        eq(metric(srv, 'gpuadmit_admission_requests_total{endpoint="validate",kind="other",'
                  'operation="other",outcome="error"}', absent=0.0), 0.0,
           "refused requests counted as review errors")
        time.sleep(1.2)  # the summary line comes once a second
        evs = srv.events()
        eq([e for e in evs if e.get("msg") == "request refused"], [], "per-request log lines")
        summed = sum(e.get("requests", 0) for e in evs
                     if e.get("msg") == "requests refused: no valid client certificate")
        eq(summed, 12, "requests in the summary lines")
        # refusals in the last moments before a stop are summed up too
        since = srv.log_size()
        refused(srv, ctx_with(), "no client certificate was presented")
        srv.stop(t(12))
        evs = srv.events(since)
        check(any(e.get("msg") == "requests refused: no valid client certificate" and
                  e.get("requests") == 1 for e in evs),
              "the last refusal was not summed up at stop: %r" % evs)


@test
def authenticated_client_served():
    with serve("--debug-endpoints", "--cluster-snapshot", SNAPSHOT) as srv:
        for tls in ("1.2", "1.3"):
            ctx = ctx_with(E.good, tls)
            c = Conn(srv.port, ctx)
            try:
                for i in range(20):
                    uid = "auth-%s-%d" % (tls, i)
                    path = "/mutate" if i % 2 else "/validate"
                    check_review_reply(call(c, "POST", path, fast_body(uid), JSON_CT), uid,
                                       path == "/mutate")
                rep = call(c, "GET", "/debug/view")
                eq(rep.status, 200, "/debug/view with a client certificate")
                check(b'"nodes"' in rep.body, "/debug/view body: %r" % rep.body[:200])
                eq(c.connects, 1, "connections for 21 requests")
                eq(c.tls_version, "TLSv1.2" if tls == "1.2" else "TLSv1.3", "TLS version")
            finally:
                c.close()
        # a chain through an intermediate, the bundle holding the root only
        served(srv, ctx_with(E.chained), "via-intermediate")
        eq(metric(srv, 'gpuadmit_http_errors_total{code="403"}', absent=0.0), 0.0, "403s")


@test
def wrong_certificates_refused():
    cases = [
        ("another CA", E.stranger, "The certificate issuer is unknown"),
        ("server-only usage", E.server_only, "does not match the intended purpose"),
        ("expired", E.expired, "The certificate chain uses expired certificate"),
        ("not yet valid", E.future, "uses not yet valid certificate"),
        # the serving certificate is from another CA and has no clientAuth usage
        ("the serving certificate", (E.srv.crt, E.srv.key), "issuer is unknown"),
    ]
    with serve("--no-cluster") as srv:
        for what, cert, part in cases:
            try:
                refused(srv, ctx_with(cert), part)
            except Fail as e:
                raise Fail("%s: %s" % (what, e))
        # the good one still passes on the same server
        served(srv, ctx_with(E.good), "after-wrong")


@test
def client_names():
    with serve("--no-cluster", "--client-name", "kube-apiserver",
               "--client-name", "apiserver.example.internal") as srv:
        served(srv, ctx_with(E.good), "cn-matches")                 # CN=kube-apiserver
        served(srv, ctx_with(E.by_dns), "dns-matches")              # CN=other, DNS matches
        served(srv, ctx_with(E.dns_case), "dns-case")               # DNS names ignore case
        refused(srv, ctx_with(E.other_name), "name is not one of --client-name")
        # two CNs, the second one allowed: readers disagree on which is the name
        refused(srv, ctx_with(E.two_cns), "name is not one of --client-name")


@test
def resumed_sessions_keep_their_verdict():
    with serve("--no-cluster") as srv:
        for tls in ("1.2", "1.3"):
            for cert, ok in ((E.good, True), (None, False)):
                ctx = ctx_with(cert, tls)
                c = Conn(srv.port, ctx)
                try:
                    rep = call(c, "GET", "/healthz")  # TLS 1.3 tickets arrive after this
                    eq(rep.status, 200, "/healthz")
                    session = c.sock.session
                finally:
                    c.close()
                check(session is not None, "no TLS %s session to resume" % tls)
                c = Conn(srv.port, ctx)
                raw = socket.create_connection(("127.0.0.1", srv.port), timeout=t(10))
                c.sock = ctx.wrap_socket(raw, server_hostname=c.tls_name, session=session)
                try:
                    check(c.sock.session_reused, "TLS %s session was not resumed" % tls)
                    rep = call(c, "POST", "/validate", fast_body("resumed"), JSON_CT)
                    if ok:
                        check_review_reply(rep, "resumed", False)
                    else:
                        check_status_reply(rep, 403, "Forbidden",
                                           "no client certificate was presented")
                finally:
                    c.close()


@test
def bundle_reloaded_and_broken_bundle_refused():
    ca_file = os.path.join(E.work, "rotating-ca.crt")
    write(ca_file, E.ca.pem())
    with serve("--no-cluster", ca_file=ca_file, name="rot") as srv:
        served(srv, ctx_with(E.good), "before")
        keep = Conn(srv.port, ctx_with(E.good))
        try:
            check_review_reply(call(keep, "POST", "/validate", fast_body("keep-1"), JSON_CT),
                               "keep-1", False)
            # a leaf where a CA belongs: refused, the old bundle stays
            since = srv.log_size()
            with open(E.good[0], "rb") as f:
                write(ca_file, f.read())
            ev = srv.wait_log("new client CA refused", since, timeout=t(5))
            check(ev is not None, "no refusal logged; log:\n%s" % srv.log_tail())
            check("not a CA certificate" in ev.get("error", ""), "refusal: %r" % ev)
            served(srv, ctx_with(E.good), "after-broken")
            # a new CA: its clients pass, the old CA's new connections do not
            since = srv.log_size()
            write(ca_file, E.other.pem())
            check(srv.wait_log("client CA reloaded", since, timeout=t(5)) is not None,
                  "no reload logged; log:\n%s" % srv.log_tail())
            served(srv, ctx_with(E.stranger), "new-ca")
            refused(srv, ctx_with(E.good), "issuer is unknown")
            # a connection verified before the change is checked again: dropping a CA from
            # the bundle shuts its clients out at their next request
            rep = call(keep, "POST", "/validate", fast_body("keep-2"), JSON_CT)
            check_status_reply(rep, 403, "Forbidden", "issuer is unknown")
            # both CAs in one bundle: both pass
            since = srv.log_size()
            write(ca_file, E.ca.pem() + E.other.pem())
            check(srv.wait_log("client CA reloaded", since, timeout=t(5)) is not None,
                  "no reload of the two-CA bundle")
            served(srv, ctx_with(E.good), "both-old")
            served(srv, ctx_with(E.stranger), "both-new")
        finally:
            keep.close()


def served_until(srv, cert, expires, tag):
    """One connection presenting cert: served now, refused with "expired" on the same
    connection once `expires` (time.time()) has passed."""
    c = Conn(srv.port, ctx_with(cert))
    try:
        check_review_reply(call(c, "POST", "/validate", fast_body(tag + "-before"), JSON_CT),
                           tag + "-before", False)
        time.sleep(max(0.0, expires - time.time()) + 1.5)
        rep = call(c, "POST", "/validate", fast_body(tag + "-after"), JSON_CT)
        check_status_reply(rep, 403, "Forbidden", "expired")
        eq(c.connects, 1, "connections")
    finally:
        c.close()


@test
def certificate_expiring_on_an_open_connection():
    clients = os.path.join(E.work, "clients")
    with serve("--no-cluster", name="short") as srv:
        # made once the server is up, valid for 3 to 4 more seconds (whole seconds in X.509)
        expires = time.time() + 4
        served_until(srv, E.ca.issue(clients, "short", days=(-1, 4 / 86400.0)), expires, "leaf")
        # the leaf valid for 30 days, the intermediate it came with for 3 to 4 seconds: the
        # verdict ends with the first of the chain to expire
        inter = Issuer("short intermediate", parent=E.ca, seconds=4)
        expires = time.time() + 4
        served_until(srv, inter.issue(clients, "long-leaf"), expires, "intermediate")


@test
def bad_options_and_bundles_at_start():
    leaf_as_ca = E.good[0]
    empty = os.path.join(E.work, "empty.crt")
    write(empty, b"not a certificate\n")
    base = [BIN, "serve", "--listen", "127.0.0.1:0", "--tls-cert", E.srv.crt, "--tls-key",
            E.srv.key, "--no-cluster", "--rules", os.path.join(E.work, "rules")]
    cases = [
        (["--client-ca", os.path.join(E.work, "missing.crt")], 2, "cannot load the client CA",
         "missing.crt"),
        (["--client-ca", leaf_as_ca], 2, "cannot load the client CA",
         "certificate 1 of 1 is not a CA certificate"),
        (["--client-ca", empty], 2, "cannot load the client CA", "no PEM certificate"),
        (["--client-name", "kube-apiserver"], 2, "--client-name needs --client-ca", None),
        (["--client-ca", os.path.join(E.work, "client-ca.crt"), "--client-name", ""], 2,
         "--client-name: empty name", None),
    ]
    for args, rc, part, detail in cases:
        p = subprocess.run(base + args, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=t(10))
        err = p.stderr.decode("utf-8", "replace")
        eq(p.returncode, rc, "exit code of %r (stderr %r)" % (args, err[-400:]))
        check(part in err, "stderr of %r lacks %r: %r" % (args, part, err[-400:]))
        if detail is not None:
            check(detail in err, "stderr of %r lacks %r: %r" % (args, detail, err[-400:]))


def setup(work):
    E.work = work
    E.srv = CertPair(os.path.join(work, "pki"))
    os.makedirs(os.path.join(work, "rules"), exist_ok=True)
    d = os.path.join(work, "clients")
    os.makedirs(d)
    E.ca = Issuer("apiserver client CA")
    E.other = Issuer("another client CA")
    inter = Issuer("apiserver client intermediate", parent=E.ca)
    write(os.path.join(work, "client-ca.crt"), E.ca.pem())
    E.good = E.ca.issue(d, "good")
    E.chained = inter.issue(d, "chained")
    E.stranger = E.other.issue(d, "stranger")
    E.server_only = E.ca.issue(d, "server-only", usage="server")
    E.expired = E.ca.issue(d, "expired", days=(-30, -1))
    E.future = E.ca.issue(d, "future", days=(2, 30))
    E.by_dns = E.ca.issue(d, "by-dns", cn="someone", dns=("apiserver.example.internal",))
    E.other_name = E.ca.issue(d, "other-name", cn="kubelet")
    E.dns_case = E.ca.issue(d, "dns-case", cn="someone", dns=("APIServer.Example.Internal",))
    E.two_cns = E.ca.issue(d, "two-cns", cn=("evil", "kube-apiserver"))
    with open(os.path.join(work, "rules", "empty.yaml"), "w") as f:
        f.write("apiVersion: gpuadmit.io/v1alpha1\nkind: GPUPolicy\n"
                "metadata:\n  name: empty\nspec:\n  rules: []\n")


def main():
    return run_suite("e2e-clientca", TESTS, SUITE_LIMIT_S, setup)


if __name__ == "__main__":
    sys.exit(main())
