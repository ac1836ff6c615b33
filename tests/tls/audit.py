#!/usr/bin/python3
"""make tls-audit: testssl.sh (Debian's testssl.sh package) against a gpuadmit server started
with certificates from gpuadmit certs, trusting their CA (--add-ca), and a verdict on its
findings. Passes when testssl rates nothing HIGH or CRITICAL but the one finding a private
webhook CA always has (no CRL or OCSP URI: the apiserver pins the caBundle and never checks
revocation for webhooks), when only TLS 1.2 and 1.3 are offered, and when every cipher offered
has forward secrecy. The server runs with --client-ca, the hardened configuration (its handshake
asks for a client certificate; testssl presents none and is still served), so the audit covers
that handshake too; openssl s_client -msg checks that the CertificateRequest is really sent.
Takes about a minute. CI runs it after make check (.ci/run).

Run: GPUADMIT_BIN=build/release/gpuadmit /usr/bin/python3 tests/tls/audit.py
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.abspath(os.environ.get("GPUADMIT_BIN", os.path.join(ROOT, "build/release/gpuadmit")))
ACCEPTED = {"cert_revocation": "a private webhook CA publishes no CRL or OCSP; the apiserver "
                               "pins the caBundle and checks no revocation"}
NOT_OFFERED = ("SSLv2", "SSLv3", "TLS1", "TLS1_1")
OFFERED = ("TLS1_2", "TLS1_3")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client_renegotiation(port, ca):
    """TLS 1.2 (1.3 has no renegotiation): a handshake, then s_client's "R" asks for a new one.
    Refused when the server sent one ServerHello only (no second handshake) and the connection
    closed after the request; counted from openssl's -msg trace of the records received."""
    p = subprocess.Popen(["openssl", "s_client", "-tls1_2", "-msg", "-CAfile", ca, "-connect",
                          "127.0.0.1:%d" % port], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        time.sleep(1)
        p.stdin.write(b"R\n")
        p.stdin.flush()
        time.sleep(2)  # the server's answer to the ClientHello, before our end of input
        out = p.communicate(timeout=30)[0].decode("utf-8", "replace")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    lines = out.splitlines()
    hellos = sum(1 for l in lines if l.startswith("<<<") and l.endswith(", ServerHello"))
    after = lines[next((i for i, l in enumerate(lines) if l == "RENEGOTIATING"), len(lines)):]
    closed = bool(after) and any(l.strip() == "closed" or "errno" in l or "alert" in l
                                 for l in after[1:])
    return {"server_hellos": hellos, "closed": closed,
            "refused": hellos == 1 and bool(after) and closed}


def main():
    failures = []
    with tempfile.TemporaryDirectory(prefix="gpuadmit-tls-audit-") as work:
        certs = os.path.join(work, "certs")
        subprocess.run([BIN, "certs", "--out", certs, "--dns", "localhost", "--ip", "127.0.0.1"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # a CA of its own for the clients: the serving CA's files do for it
        client_ca = os.path.join(work, "client-ca")
        subprocess.run([BIN, "certs", "--out", client_ca], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port = free_port()
        log = open(os.path.join(work, "server.log"), "wb")
        srv = subprocess.Popen([BIN, "serve", "--listen", "127.0.0.1:%d" % port, "--tls-cert",
                                os.path.join(certs, "tls.crt"), "--tls-key",
                                os.path.join(certs, "tls.key"), "--rules",
                                os.path.join(ROOT, "rules"), "--no-cluster", "--client-ca",
                                os.path.join(client_ca, "ca.crt")],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            out = os.path.join(work, "testssl.json")
            r = subprocess.run(["testssl", "--quiet", "--color", "0", "--warnings", "off",
                                "--add-ca", os.path.join(certs, "ca.crt"), "--jsonfile", out,
                                "127.0.0.1:%d" % port], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=600)
            with open(out) as f:
                findings = json.load(f)
            # for both versions: TLS 1.3 sends the CertificateRequest encrypted, -msg shows it
            asks_cert = all(
                "CertificateRequest" in subprocess.run(
                    ["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-msg", flag],
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    timeout=30).stdout.decode("utf-8", "replace")
                for flag in ("-tls1_2", "-tls1_3"))
            renego = client_renegotiation(port, os.path.join(certs, "ca.crt"))
        finally:
            srv.terminate()
            srv.wait(timeout=30)
            log.close()
    by_id = {f["id"]: f for f in findings}
    # testssl judges client-initiated renegotiation by openssl s_client's exit status, which is
    # 0 whether the server renegotiated or closed the connection on it; it exempts a close only
    # when "closed" is among the last lines of its first try, which depends on which of the
    # server's close and s_client's end of input comes first (on a loaded machine it reported a
    # server that closes as "VULNERABLE, DoS threat"). The handshake messages decide instead.
    if renego["refused"]:
        ACCEPTED["secure_client_renego"] = (
            "not so: openssl -msg saw %d ServerHello and the connection closed after "
            "RENEGOTIATING; the server renegotiates nothing" % renego["server_hellos"])
    else:
        failures.append("a client-initiated renegotiation was served: %d ServerHello, closed: %s"
                        % (renego["server_hellos"], renego["closed"]))
    for f in findings:
        if f["severity"] in ("HIGH", "CRITICAL") and f["id"] not in ACCEPTED:
            failures.append("%s %s: %s" % (f["severity"], f["id"], f["finding"]))
    for p in NOT_OFFERED:
        if "not offered" not in by_id.get(p, {}).get("finding", ""):
            failures.append("%s: %r, expected not offered" % (p, by_id.get(p, {}).get("finding")))
    for p in OFFERED:
        if not by_id.get(p, {}).get("finding", "").startswith("offered"):
            failures.append("%s: %r, expected offered" % (p, by_id.get(p, {}).get("finding")))
    if not asks_cert:
        failures.append("the handshake did not ask for a client certificate (--client-ca)")
    # testssl 3.0 names forward secrecy PFS, later versions FS
    fs_id = "PFS" if "PFS" in by_id else "FS"
    fs = by_id.get(fs_id, {}).get("finding", "")
    if "offered" not in fs or "not offered" in fs:
        failures.append("%s: %r, expected forward secrecy offered" % (fs_id, fs))
    counts = {}
    for f in findings:
        counts[f["severity"]] = counts.get(f["severity"], 0) + 1
    print("# testssl %s: %s" % (r.returncode, ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
    for f in findings:
        if f["severity"] in ("LOW", "MEDIUM", "HIGH", "CRITICAL"):
            why = " (accepted: %s)" % ACCEPTED[f["id"]] if f["id"] in ACCEPTED else ""
            print("# %-8s %-20s %s%s" % (f["severity"], f["id"], f["finding"], why))
    print("# client certificate asked for (CertificateRequest): %s" % asks_cert)
    print("# client-initiated renegotiation (TLS 1.2): %d ServerHello, closed after it: %s"
          % (renego["server_hellos"], renego["closed"]))
    for p in NOT_OFFERED + OFFERED + (fs_id,):
        print("# %-8s %s" % (p, by_id.get(p, {}).get("finding")))
    for msg in failures:
        print("not ok - " + msg)
    print("tls-audit: %d passed, %d failed" % (0 if failures else 1, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
