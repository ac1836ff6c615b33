"""Helpers shared by the end-to-end suites tests/e2e/test_*.py (this file is not a suite: the
Makefile runs tests/e2e/test_*.py). Python 3 standard library only.

The suites import it with tests/e2e on sys.path (a script's own directory is sys.path[0]).
"""
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback

SLOW = os.environ.get("GPUADMIT_SLOW", "") not in ("", "0")
SCALE = 3.0 if SLOW else 1.0
SERVICE_DNS = "gpuadmit.gpuadmit-system.svc"
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "SUMMARY: AddressSanitizer", "SUMMARY: UndefinedBehaviorSanitizer")


def t(seconds):
    """A time bound, scaled for slow (sanitizer) builds."""
    return seconds * SCALE


class Fail(AssertionError):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def eq(got, want, what):
    if got != want:
        raise Fail("%s: expected %r, got %r" % (what, want, got))


def indent(title, text):
    return "# %s:\n%s\n" % (title, "\n".join("#   " + l for l in text.splitlines()))


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def check_no_sanitizer_report(text, where="the server log"):
    """Fails with the report's first 40 lines when text holds a sanitizer report."""
    for mark in SANITIZER_MARKS:
        if mark in text:
            at = text.rfind("\n", 0, text.find(mark)) + 1
            raise Fail("sanitizer report in %s:\n%s"
                       % (where, "\n".join(text[at:].splitlines()[:40])))


def check_json_log(text):
    """Every log line is a JSON object with time, level and msg."""
    for line in text.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            raise Fail("log line is not JSON: %r" % line[:200])
        check(isinstance(ev, dict) and "time" in ev and "level" in ev and "msg" in ev,
              "log line lacks time/level/msg: %r" % line[:200])


def make_certs(directory):
    """A CA and a serving certificate in directory (ca.crt, ca.key, tls.crt, tls.key), made by
    the binary under test's `gpuadmit certs`: for the Service name, localhost, 127.0.0.1 and
    ::1. Returns the paths of ca.crt, tls.crt and tls.key."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    binary = os.environ.get("GPUADMIT_BIN", os.path.join(root, "build/release/gpuadmit"))
    r = subprocess.run([os.path.abspath(binary), "certs", "--force", "--out", directory, "--dns",
                        "localhost", "--ip", "127.0.0.1", "--ip", "::1"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=t(60))
    if r.returncode != 0:
        raise RuntimeError("gpuadmit certs --out %s failed: %s" % (directory, r.stderr.decode()))
    return tuple(os.path.join(directory, n) for n in ("ca.crt", "tls.crt", "tls.key"))


class CertPair:
    """A CA and serving certificate made by `gpuadmit certs` in directory (make_certs)."""

    def __init__(self, directory):
        self.dir = directory
        self.ca, self.crt, self.key = make_certs(directory)
        with open(self.crt) as f:
            self.der = ssl.PEM_cert_to_DER_cert(f.read())

    def context(self, *more_cas):
        """A client context that trusts this CA (and more_cas'), checking the host name."""
        ctx = ssl.create_default_context(cafile=self.ca)
        for extra in more_cas:
            ctx.load_verify_locations(cafile=extra.ca)
        ctx.check_hostname = True
        ctx.verify_mode = ssl.CERT_REQUIRED
        return ctx


def tls_connect(port, ctx, timeout, hostname=SERVICE_DNS, nodelay=True):
    """A TLS socket to 127.0.0.1:port verified as hostname; the TCP socket is closed when the
    handshake fails."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        if nodelay:
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return ctx.wrap_socket(raw, server_hostname=hostname)
    except BaseException:
        raw.close()
        raise


# ---------------------------------------------------------------------------------------------
# the server process

RUNNING = set()  # server processes to kill if a suite's watchdog fires
RUNNING_LOCK = threading.Lock()


def kill_running():
    with RUNNING_LOCK:
        for p in list(RUNNING):
            try:
                p.kill()
            except Exception:
                pass


class ServerProcess:
    """The parts of a gpuadmit process wrapper the suites share. A subclass sets args and
    log_path; launch() starts the process and waits for its "serving" log line (t(10) seconds,
    or timeout)."""

    NAME = "server"           # in failure messages
    LOG_WHERE = "the server log"
    proc = None
    port = None
    rc = None
    serving = None

    def launch(self, env=None, timeout=None):
        # The suites run on shared, loaded machines (and under sanitizers), where a ClientHello
        # can wait past the default --max-queue-ms and be shed as under overload; shedding has
        # a test of its own, which sets the flag.
        if "serve" in self.args and "--max-queue-ms" not in self.args:
            self.args = list(self.args) + ["--max-queue-ms", "30000"]
        self.logf = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self.logf, env=env)
        with RUNNING_LOCK:
            RUNNING.add(self.proc)
        try:
            timeout = t(10) if timeout is None else timeout
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                for ev in self.events():
                    if ev.get("msg") == "serving":
                        self.port = int(ev["port"])
                        self.serving = ev
                        check(self.port > 0, "serving line has port %r" % ev.get("port"))
                        return self
                if self.proc.poll() is not None:
                    raise Fail("%s exited with %s before serving; log:\n%s"
                               % (self.NAME, self.proc.returncode, self.log_tail()))
                time.sleep(0.02)
            raise Fail("no \"serving\" log line within %.0f s; log:\n%s"
                       % (timeout, self.log_tail()))
        except BaseException:
            self.kill()
            raise

    def stop(self, wait):
        """SIGTERM, wait up to `wait` s, then SIGKILL. Returns the exit code (None if killed)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.rc = self.proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                self.kill()
                self.rc = None
        else:
            self.rc = self.proc.returncode
        self.kill()
        return self.rc

    def kill(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        with RUNNING_LOCK:
            RUNNING.discard(self.proc)
        try:
            self.logf.close()
        except Exception:
            pass

    def check_exit_code(self, rc):
        check(rc == 0, "%s did not stop cleanly on SIGTERM (exit code %r); log:\n%s"
              % (self.NAME, rc, self.log_tail()))

    def check_log(self, text):
        """More checks of the whole log after a clean exit (for subclasses)."""

    def check_clean_exit(self, rc):
        text = self.log_text()
        check_no_sanitizer_report(text, self.LOG_WHERE)
        self.check_exit_code(rc)
        self.check_log(text)
        check_json_log(text)

    def log_text(self, since=0):
        try:
            with open(self.log_path, "rb") as f:
                f.seek(since)
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_size(self):
        try:
            return os.path.getsize(self.log_path)
        except OSError:
            return 0

    def events(self, since=0):
        out = []
        for line in self.log_text(since).splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if isinstance(ev, dict):
                out.append(ev)
        return out

    def log_tail(self, n=15):
        return "\n".join(self.log_text().splitlines()[-n:])

    def wait_event(self, pred, since=0, timeout=5.0, step=0.02):
        """The first log event since the offset for which pred(ev) holds, or None."""
        deadline = time.monotonic() + timeout
        while True:
            for ev in self.events(since):
                if pred(ev):
                    return ev
            if time.monotonic() >= deadline:
                return None
            time.sleep(step)

    def wait_log(self, msg_part, since=0, timeout=5.0):
        """The first log event since the offset whose msg contains msg_part, or None."""
        return self.wait_event(lambda ev: msg_part in str(ev.get("msg", "")), since, timeout,
                               step=0.05)


# ---------------------------------------------------------------------------------------------
# a suite


def run_suite(name, tests, limit_s, setup=None):
    """Runs the test functions in order in a fresh temporary folder (setup(work) first), one
    "ok"/"not ok" line each, and the closing line "NAME: N passed, M failed". A watchdog ends
    the suite, and every server it started, after limit_s seconds. Returns the exit code."""
    state = {"passed": 0, "failed": 0}

    def dog():
        kill_running()
        sys.stdout.write("not ok - watchdog: suite over %d s\n%s: %d passed, %d failed\n"
                         % (limit_s, name, state["passed"], state["failed"] + 1))
        sys.stdout.flush()
        os._exit(1)

    timer = threading.Timer(limit_s, dog)
    timer.daemon = True
    timer.start()
    with tempfile.TemporaryDirectory(prefix="gpuadmit-%s-" % name) as work:
        if setup is not None:
            setup(work)
        for fn in tests:
            try:
                fn()
                state["passed"] += 1
                sys.stdout.write("ok - %s\n" % fn.__name__)
            except Fail as e:
                state["failed"] += 1
                sys.stdout.write("not ok - %s: %s\n" % (fn.__name__, e))
            except Exception as e:
                state["failed"] += 1
                sys.stdout.write("not ok - %s: %s: %s\n%s" % (fn.__name__, type(e).__name__, e,
                                                               traceback.format_exc()))
            sys.stdout.flush()
    timer.cancel()
    sys.stdout.write("%s: %d passed, %d failed\n" % (name, state["passed"], state["failed"]))
    return 1 if state["failed"] else 0
