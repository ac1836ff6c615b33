#!/usr/bin/env python3
"""End-to-end tests of `gpuadmit certs`: what it writes verifies with the openssl CLI, the server
started with it is called by a client that trusts only the printed caBundle and uses the
Service DNS name, --check finds a mismatched key, a wrong SAN and an expired certificate by its
exit code, and a three-step CA rotation under a running server never fails a client that
trusts the caBundle published before or after the current step.

Run: GPUADMIT_BIN=build/release/gpuadmit python3 tests/e2e/test_certs.py
"""
import base64
import datetime
import http.client
import json
import os
import shutil
import ssl
import stat
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
from common import (run_suite, SLOW, SERVICE_DNS, Fail, ServerProcess, check, eq,  # noqa: E402
                    t, tls_connect)

BIN = os.path.abspath(os.environ.get("GPUADMIT_BIN", os.path.join(ROOT, "build/release/gpuadmit")))
REVIEW = os.path.join(ROOT, "tests/data/review-pod.json")
SUITE_LIMIT_S = 150 if SLOW else 90


class E:
    work = None


def certs(*args, ok=True):
    r = subprocess.run([BIN, "certs"] + list(args), capture_output=True, timeout=t(60))
    if ok:
        check(r.returncode == 0, "gpuadmit certs %s: exit %d: %s"
              % (" ".join(args), r.returncode, r.stderr.decode()))
    return r


def openssl(*args):
    r = subprocess.run(["openssl"] + list(args), capture_output=True, timeout=30)
    return r.returncode, r.stdout.decode() + r.stderr.decode()


def bundle_pem(printed):
    """The PEM the printed caBundle line encodes: exactly one line of base64."""
    lines = printed.decode().splitlines()
    eq(len(lines), 1, "lines printed on stdout")
    return base64.b64decode(lines[0], validate=True).decode()


class Server(ServerProcess):
    def __init__(self, d, name):
        self.log_path = os.path.join(E.work, "%s.log" % name)
        self.args = [BIN, "serve", "--listen", "127.0.0.1:0", "--tls-cert",
                     os.path.join(d, "tls.crt"), "--tls-key", os.path.join(d, "tls.key"),
                     "--rules", os.path.join(ROOT, "rules"), "--shutdown-grace", "5"]

    def __enter__(self):
        return self.launch()

    def __exit__(self, exc_type, exc, tb):
        rc = self.stop(t(10))
        if exc_type is None:
            self.check_clean_exit(rc)
        return False


def client_ctx(ca_pem):
    """A client that trusts only ca_pem: not the system store."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cadata=ca_pem)
    return ctx


class Conn(http.client.HTTPSConnection):
    def __init__(self, port, ctx, hostname=SERVICE_DNS):
        super().__init__(hostname, port, context=ctx, timeout=t(10))
        self.hostname = hostname

    def connect(self):
        self.sock = tls_connect(self.port, self._context, self.timeout, hostname=self.hostname)


def validate(port, ctx, hostname=SERVICE_DNS):
    with open(REVIEW, "rb") as f:
        body = f.read()
    c = Conn(port, ctx, hostname)
    try:
        c.request("POST", "/validate", body, {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        eq(r.status, 200, "HTTP status")
        out = json.loads(data)
        eq(out["response"]["uid"], json.loads(body)["request"]["uid"], "uid")
        return out["response"]
    finally:
        c.close()


def test_openssl_verifies_what_certs_writes():
    d = os.path.join(E.work, "plain")
    r = certs("--service", "gpuadmit", "--namespace", "gpuadmit-system", "--out", d,
              "--dns", "webhook.example.com", "--ip", "10.0.0.7")
    pem = bundle_pem(r.stdout)
    with open(os.path.join(d, "ca.crt")) as f:
        eq(pem, f.read(), "the printed caBundle decoded")
    rc, out = openssl("verify", "-CAfile", os.path.join(d, "ca.crt"), os.path.join(d, "tls.crt"))
    eq((rc, out.strip()), (0, os.path.join(d, "tls.crt") + ": OK"), "openssl verify")
    rc, text = openssl("x509", "-in", os.path.join(d, "tls.crt"), "-noout", "-text")
    eq(rc, 0, "openssl x509 exit")
    for want in ("DNS:gpuadmit.gpuadmit-system.svc,", "DNS:gpuadmit.gpuadmit-system.svc.cluster.local",
                 "DNS:webhook.example.com", "IP Address:10.0.0.7", "ASN1 OID: prime256v1",
                 "TLS Web Server Authentication", "CA:FALSE"):
        check(want in text, "openssl x509 -text lacks %r:\n%s" % (want, text))
    for name, mode in (("ca.key", 0o600), ("tls.key", 0o600), ("ca.crt", 0o644),
                       ("tls.crt", 0o644)):
        eq(stat.S_IMODE(os.stat(os.path.join(d, name)).st_mode), mode, name + " mode")
    # refuses to overwrite, and names the way to do it on purpose
    r = certs("--out", d, ok=False)
    eq(r.returncode, 1, "exit code of a second run")
    check(b"--force" in r.stderr, "refusal does not say how: %r" % r.stderr)
    r = certs("--out", d, "--key-type", "rsa-3072", "--force")
    rc, text = openssl("x509", "-in", os.path.join(d, "tls.crt"), "-noout", "-text")
    check("Public-Key: (3072 bit)" in text and "rsaEncryption" in text, "not RSA-3072:\n" + text)
    rc, _ = openssl("verify", "-CAfile", os.path.join(d, "ca.crt"), os.path.join(d, "tls.crt"))
    eq(rc, 0, "openssl verify of the RSA set")
    # usage errors are exit 2 and name the value
    for args, want in ((["--out", d, "--dns", "a,DNS:evil"], b"not a DNS name"),
                       (["--out", d, "--ip", "1.2.3"], b"not an IPv4 or IPv6"),
                       (["--out", d, "--key-type", "dsa"], b"--key-type"),
                       (["--dns", "x"], b"--out DIR is required"),
                       (["--out", d, "--days", "0"], b"--days")):
        r = certs(*args, ok=False)
        eq(r.returncode, 2, "exit code of %s" % args)
        check(want in r.stderr, "%s: stderr %r lacks %r" % (args, r.stderr, want))


def test_server_trusted_through_printed_bundle():
    d = os.path.join(E.work, "served")
    pem = bundle_pem(certs("--out", d).stdout)
    with Server(d, "served") as srv:
        resp = validate(srv.port, client_ctx(pem))
        check("allowed" in resp, "no allowed in %r" % resp)
        # the same client refuses another name, and a client without the bundle refuses all
        try:
            validate(srv.port, client_ctx(pem), hostname="gpuadmit.other.svc")
            raise Fail("a certificate for %s was taken for gpuadmit.other.svc" % SERVICE_DNS)
        except ssl.SSLCertVerificationError as e:
            check("Hostname mismatch" in str(e) or "match" in str(e), "unexpected error %s" % e)
        other = os.path.join(E.work, "other")
        other_pem = bundle_pem(certs("--out", other).stdout)
        try:
            validate(srv.port, client_ctx(other_pem))
            raise Fail("a client trusting another CA was served")
        except ssl.SSLCertVerificationError as e:
            check("unable to get local issuer" in str(e), "unexpected error %s" % e)


def expired_leaf(d):
    """A serving certificate for the Service, signed by d's CA, that expired a day ago (made
    with python3-cryptography, which can set any validity)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    with open(os.path.join(d, "ca.key"), "rb") as f:
        ca_key = serialization.load_pem_private_key(f.read(), None)
    with open(os.path.join(d, "ca.crt"), "rb") as f:
        ca = x509.load_pem_x509_certificate(f.read())
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SERVICE_DNS)]))
            .issuer_name(ca.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=30))
            .not_valid_after(now - datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(SERVICE_DNS)]), False)
            .sign(ca_key, hashes.SHA256()))
    with open(os.path.join(d, "tls.crt"), "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(os.path.join(d, "tls.key"), "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))


def test_check_exit_codes():
    d = os.path.join(E.work, "check")
    certs("--out", d)
    r = certs("--check", "--out", d, ok=False)
    eq(r.returncode, 0, "exit code on a good set:\n" + r.stdout.decode())
    check(b"FAIL" not in r.stdout and r.stdout.count(b"ok ") >= 5, r.stdout.decode())

    work = os.path.join(E.work, "check-key")
    shutil.copytree(d, work)
    shutil.copy(os.path.join(d, "ca.key"), os.path.join(work, "tls.key"))
    r = certs("--check", "--out", work, ok=False)
    eq(r.returncode, 4, "exit code with a mismatched key:\n" + r.stdout.decode())
    check(b"FAIL  tls.key does not belong to tls.crt" in r.stdout, r.stdout.decode())

    r = certs("--check", "--out", d, "--service", "webhook", ok=False)
    eq(r.returncode, 16, "exit code with a wrong SAN:\n" + r.stdout.decode())
    check(b"does not cover webhook.gpuadmit-system.svc" in r.stdout, r.stdout.decode())

    work = os.path.join(E.work, "check-expired")
    shutil.copytree(d, work)
    expired_leaf(work)
    r = certs("--check", "--out", work, ok=False)
    eq(r.returncode, 32, "exit code with an expired certificate:\n" + r.stdout.decode())
    check(b"expired on" in r.stdout, r.stdout.decode())
    rc, _ = openssl("verify", "-CAfile", os.path.join(work, "ca.crt"), os.path.join(work, "tls.crt"))
    check(rc != 0, "openssl verify took the expired certificate: the test made a wrong one")

    work = os.path.join(E.work, "check-chain")
    shutil.copytree(d, work)
    certs("--out", os.path.join(E.work, "check-foreign"))
    shutil.copy(os.path.join(E.work, "check-foreign", "ca.crt"), os.path.join(work, "ca.crt"))
    r = certs("--check", "--out", work, ok=False)
    eq(r.returncode, 8, "exit code with a foreign CA:\n" + r.stdout.decode())

    r = certs("--check", "--out", d, "--min-days", "400", ok=False)
    eq(r.returncode, 64, "exit code within --min-days:\n" + r.stdout.decode())
    r = certs("--check", "--out", os.path.join(E.work, "missing"), ok=False)
    eq(r.returncode, 3, "exit code without files")


def test_rotation_without_an_error_window():
    d = os.path.join(E.work, "rotate")
    published = [bundle_pem(certs("--out", d).stdout)]  # what the webhook configurations hold
    lock = threading.Lock()
    stop = threading.Event()
    results = {"ok": 0, "errors": []}

    with Server(d, "rotate") as srv:
        def hammer():
            # an API server that has the newest caBundle, and one still on the one before
            while not stop.is_set():
                with lock:
                    bundles = published[-2:]
                for pem in bundles:
                    try:
                        validate(srv.port, client_ctx(pem))
                        results["ok"] += 1
                    except Exception as e:  # noqa: BLE001 - every failure is the finding
                        results["errors"].append("%s: %s" % (type(e).__name__, e))

        th = threading.Thread(target=hammer, daemon=True)
        th.start()
        time.sleep(0.3)
        first = open(os.path.join(d, "ca.crt")).read()
        for step in (1, 2, 3):
            if step > 1:
                # the operator waits until every API server has the newest caBundle before the
                # next step: from here on, none is on the one before
                with lock:
                    published.append(published[-1])
            since = srv.log_size()
            r = certs("--rotate" if step == 1 else "--rotate=%d" % step, "--out", d)
            check(("step %d of 3 done" % step).encode() in r.stderr, r.stderr.decode())
            with lock:
                published.append(bundle_pem(r.stdout))
            again = certs("--rotate=%d" % step, "--out", d)  # a script run twice
            check(b"done already; nothing changed" in again.stderr, again.stderr.decode())
            eq(bundle_pem(again.stdout), published[-1], "caBundle after a repeated step")
            if step == 2:
                ev = srv.wait_log("serving certificate reloaded", since, timeout=t(10))
                check(ev is not None, "the server did not take the new certificate:\n"
                      + srv.log_tail())
            time.sleep(0.5)
        stop.set()
        th.join(t(20))
        check(not results["errors"], "%d of %d calls failed during the rotation, first: %s"
              % (len(results["errors"]), results["ok"] + len(results["errors"]),
                 results["errors"][:3]))
        check(results["ok"] >= 10, "only %d calls during the rotation" % results["ok"])
        # the rotation really happened: the old CA alone is no longer enough
        eq(published[1].count("BEGIN CERTIFICATE"), 2, "CAs trusted after step 1")
        eq(published[-1].count("BEGIN CERTIFICATE"), 1, "CAs trusted after step 3")
        check(published[-1] != first, "step 3 kept the first CA")
        try:
            validate(srv.port, client_ctx(first))
            raise Fail("a client trusting only the old CA was served after the rotation")
        except ssl.SSLCertVerificationError:
            pass
        validate(srv.port, client_ctx(published[-1]))
    r = certs("--check", "--out", d, ok=False)
    eq(r.returncode, 0, "--check after the rotation:\n" + r.stdout.decode())


TESTS = [test_openssl_verifies_what_certs_writes, test_server_trusted_through_printed_bundle,
         test_check_exit_codes, test_rotation_without_an_error_window]


def setup(work):
    E.work = work


def main():
    return run_suite("e2e-certs", TESTS, SUITE_LIMIT_S, setup)


if __name__ == "__main__":
    sys.exit(main())
