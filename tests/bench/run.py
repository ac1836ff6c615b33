"""make bench: gpuadmit against nginx (an HTTPS responder that does no work) and a hand-written
Node.js webhook, end to end over TLS, handshakes, in process and memory. Python 3 stdlib only.

    tests/bench/run.py BUILD_DIR          (make bench runs it; BENCH_QUICK=1 for a short run)

The machine is shared and small, so nothing here is an absolute figure: every measurement runs
next to its baseline in the same run, A/B interleaved (the servers' order rotates every rep),
and the table gives medians over the reps of the per-rep ratios. /proc/loadavg is recorded
before each run. Every run's raw figures go to BUILD_DIR/bench/runs.jsonl.
"""
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "bench")
REVIEW = os.path.join(HERE, "data", "training-pod-review.json")
QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
REPS = int(os.environ.get("BENCH_REPS", "1" if QUICK else "3"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "1" if QUICK else "3"))
CONNS = (1, 16, 64)
ENDPOINTS = ("validate", "mutate")
HANDSHAKE_THREADS = 2
# overload: callers at once, each with a new connection (a full handshake) per call and the
# deadline of the shipped webhook configurations (timeoutSeconds: 3)
OVERLOAD_CLIENTS = (16, 1000, 3000)
OVERLOAD_DEADLINE_MS = 3000
OVERLOAD_SECONDS = float(os.environ.get("BENCH_OVERLOAD_SECONDS", "3" if QUICK else "8"))
TICK = os.sysconf("SC_CLK_TCK")
SERVERS = ("gpuadmit", "nginx", "node")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def cpu_ticks(pids):
    """utime + stime of these processes (all their threads), in clock ticks."""
    total = 0
    for pid in pids:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total


def read_bytes(pids):
    """Bytes these processes read through read() and recv() (rchar: sockets included)."""
    total = 0
    for pid in pids:
        with open("/proc/%d/io" % pid) as f:
            for line in f:
                if line.startswith("rchar:"):
                    total += int(line.split()[1])
    return total


def status_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def children(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except OSError:
                pass
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("bench: %s exited with %s at start" % (what, proc.returncode))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("bench: %s does not listen on %d" % (what, port))


def post(port, ca, path, body):
    ctx = ssl.create_default_context(cafile=ca)
    conn = http.client.HTTPSConnection("localhost", port, context=ctx, timeout=10)
    try:
        conn.request("POST", path, body, {"Content-Type": "application/json"})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


class Server:
    def __init__(self, name, proc, port, pids):
        self.name, self.proc, self.port, self.pids = name, proc, port, pids

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM if self.name != "nginx" else signal.SIGQUIT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_gpuadmit(build, tmp, cert, key):
    logf = open(os.path.join(tmp, "gpuadmit.log"), "wb")
    proc = subprocess.Popen([os.path.join(build, "gpuadmit"), "serve", "--listen",
                             "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key, "--rules",
                             os.path.join(ROOT, "rules"), "--no-cluster"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=logf)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open(logf.name) as f:
            for line in f:
                ev = json.loads(line)
                if ev.get("msg") == "serving":
                    return Server("gpuadmit", proc, int(ev["port"]), [proc.pid])
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise SystemExit("bench: gpuadmit did not start; see %s" % logf.name)


def start_nginx(tmp, cert, key, answer, workers, started):
    port = free_port()
    with open(os.path.join(HERE, "nginx.conf.in")) as f:
        template = f.read()

    def conf(d, p):
        text = template
        for k, v in (("DIR", d), ("WORKERS", str(workers)), ("PORT", str(p)),
                     ("CERT", cert), ("KEY", key), ("ANSWER", answer)):
            text = text.replace("@%s@" % k, v)
        return text

    with open(os.path.join(tmp, "nginx.conf"), "w") as f:
        f.write(conf(tmp, port))
    for d, p in ((tmp, port),):
        proc = subprocess.Popen(["nginx", "-p", d, "-e", os.path.join(d, "nginx-error.log"),
                                 "-c", os.path.join(d, "nginx.conf")],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        started.append(Server("nginx", proc, p, [proc.pid]))
        wait_port(p, proc, "nginx")
        deadline = time.monotonic() + 5
        while len(children(proc.pid)) < workers and time.monotonic() < deadline:
            time.sleep(0.05)
        started[-1].pids += children(proc.pid)
    return started[-1]


def start_node(tmp, cert, key):
    port = free_port()
    proc = subprocess.Popen(["node", os.path.join(HERE, "node-webhook.js"), cert, key, str(port)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(tmp, "node.log"), "wb"))
    wait_port(port, proc, "node")
    return Server("node", proc, port, [proc.pid])


RUNS = []


def record(kind, **fields):
    fields["kind"] = kind
    RUNS.append(fields)
    return fields


def run_wrk(srv, endpoint, conns, seconds, uid):
    threads = 1 if conns == 1 else 2
    load = loadavg()
    before = cpu_ticks(srv.pids)
    rbefore = read_bytes(srv.pids)
    out = subprocess.run(["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % max(1, round(seconds)),
                          "--timeout", "5s", "-s", os.path.join(HERE, "review.lua"),
                          "https://127.0.0.1:%d/%s" % (srv.port, endpoint), "--", REVIEW, uid],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=True).stdout
    cpu = cpu_ticks(srv.pids) - before
    rchar = read_bytes(srv.pids) - rbefore
    line = [l for l in out.decode().splitlines() if l.startswith("BENCH ")]
    if not line:
        raise SystemExit("bench: wrk printed no result:\n%s" % out.decode())
    r = json.loads(line[0][6:])
    secs = r["duration_us"] / 1e6
    n = max(r["requests"], 1)
    return record("wrk", server=srv.name, endpoint=endpoint, conns=conns, load=load,
                  rps=r["requests"] / secs, p50_us=r["p50_us"], p99_us=r["p99_us"],
                  cpu_us_per_req=cpu * 1e6 / TICK / n, read_per_req=rchar / n,
                  requests=r["requests"], bad=r["bad"],
                  errors=r["errors"], seconds=secs)


def run_handshakes(tool, srv, mode, seconds):
    load = loadavg()
    before = cpu_ticks(srv.pids)
    out = subprocess.run([tool, "127.0.0.1", str(srv.port), str(seconds), str(HANDSHAKE_THREADS),
                          mode, "/healthz"], stdout=subprocess.PIPE, check=True).stdout
    cpu = cpu_ticks(srv.pids) - before
    r = json.loads(out)
    n = max(r["connections"], 1)
    return record("handshake", server=srv.name, mode=mode, load=load,
                  rate=r["connections"] / r["seconds"], cpu_us_per_conn=cpu * 1e6 / TICK / n,
                  connections=r["connections"], resumed=r["resumed"], errors=r["errors"],
                  bad=r["bad"], seconds=r["seconds"])


def run_overload(tool, srv, clients, seconds):
    load = loadavg()
    out = subprocess.run([tool, "127.0.0.1", str(srv.port), str(seconds), str(clients),
                          str(OVERLOAD_DEADLINE_MS), "full", "/validate", REVIEW],
                         stdout=subprocess.PIPE, check=True).stdout
    r = json.loads(out)
    return record("overload", server=srv.name, clients=clients, load=load, **r)


def med(values):
    return statistics.median(values) if values else float("nan")


def ratio_of(runs, key, a="gpuadmit", b="nginx"):
    """Median over reps of run[a][key] / run[b][key]; runs is a list of {server: run} per rep."""
    return med([r[a][key] / r[b][key] for r in runs if r[b][key]])


def fmt(x, digits=2):
    if x != x:
        return "n/a"
    if abs(x) >= 100:
        return "%.0f" % x
    return ("%." + str(digits) + "f") % x


def verdict(value, limit, below=True):
    if value != value:
        return "n/a"
    return "met" if (value <= limit if below else value >= limit) else "NOT met"


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: run.py BUILD_DIR")
    build = os.path.abspath(sys.argv[1])
    out_dir = os.path.join(build, "bench")
    os.makedirs(out_dir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="run.", dir=out_dir)
    started = time.monotonic()
    log("bench: %s, %d rep(s) of %.0f s per run, in %s; load average %s"
        % ("quick" if QUICK else "full", REPS, SECONDS, tmp, open("/proc/loadavg").read().strip()))

    certs = os.path.join(tmp, "certs")
    subprocess.run([os.path.join(build, "gpuadmit"), "certs", "--out", certs, "--dns",
                    "localhost", "--ip", "127.0.0.1"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    ca, cert, key = (os.path.join(certs, n) for n in ("ca.crt", "tls.crt", "tls.key"))
    body = open(REVIEW, "rb").read()
    uid = json.loads(body)["request"]["uid"]

    servers = []
    try:
        gp = start_gpuadmit(build, tmp, cert, key)
        servers.append(gp)
        answers = {}
        for ep in ENDPOINTS:
            status, payload = post(gp.port, ca, "/" + ep, body)
            resp = json.loads(payload)["response"]
            if status != 200 or resp.get("uid") != uid or resp.get("allowed") is not True:
                raise SystemExit("bench: gpuadmit's answer at /%s is not an allowed review: %s %r"
                                 % (ep, status, payload[:300]))
            answers[ep] = payload.decode()
        if answers["validate"] != answers["mutate"]:
            raise SystemExit("bench: the bench review should be allowed untouched at both ends")
        rss_idle = status_kib(gp.proc.pid, "VmRSS")
        workers = int(os.environ.get("BENCH_NGINX_WORKERS", "0")) or os.cpu_count() or 1
        ng = start_nginx(tmp, cert, key, answers["validate"], workers, servers)
        nd = start_node(tmp, cert, key)
        servers.append(nd)
        for srv in (ng, nd):
            status, payload = post(srv.port, ca, "/validate", body)
            resp = json.loads(payload)["response"]
            if status != 200 or resp.get("uid") != uid or not resp.get("allowed"):
                raise SystemExit("bench: %s's answer is wrong: %s %r" % (srv.name, status, payload))
        by_name = {"gpuadmit": gp, "nginx": ng, "node": nd}
        for srv in by_name.values():  # warm-up, not recorded
            run_wrk(srv, "validate", 16, 0.5 if QUICK else 1, uid)
            RUNS.pop()

        # end to end, keep-alive
        e2e = {}
        for rep in range(REPS):
            order = SERVERS[rep % 3:] + SERVERS[:rep % 3]
            for conns in CONNS:
                for ep in ENDPOINTS:
                    cell = {}
                    for name in order:
                        r = run_wrk(by_name[name], ep, conns, SECONDS, uid)
                        cell[name] = r
                        log("  %-8s /%-8s %2d conns  %7.0f req/s  p50 %6d us  p99 %6d us  "
                            "cpu %5.1f us/req  bad %d err %d  load %.2f"
                            % (name, ep, conns, r["rps"], r["p50_us"], r["p99_us"],
                               r["cpu_us_per_req"], r["bad"], r["errors"], r["load"]))
                    e2e.setdefault((ep, conns), []).append(cell)

        # handshakes: a new connection per request
        hs = {}
        tool = os.path.join(build, "tests", "bench", "handshake")
        for rep in range(REPS):
            order = SERVERS[rep % 3:] + SERVERS[:rep % 3]
            for mode in ("full", "resume"):
                cell = {}
                for name in order:
                    r = run_handshakes(tool, by_name[name], mode, SECONDS)
                    cell[name] = r
                    log("  %-8s %-6s handshakes  %6.0f /s  cpu %6.1f us/conn  resumed %d/%d  "
                        "errors %d bad %d  load %.2f"
                        % (name, mode, r["rate"], r["cpu_us_per_conn"], r["resumed"],
                           r["connections"], r["errors"], r["bad"], r["load"]))
                hs.setdefault(mode, []).append(cell)

        # overload: more callers than the server can answer within the deadline; nginx is the
        # baseline of a server that lets connections queue (here: in the listen backlog)
        ov = {}
        tool = os.path.join(build, "tests", "bench", "overload")
        for clients in OVERLOAD_CLIENTS:
            for name in ("gpuadmit", "nginx"):
                r = run_overload(tool, by_name[name], clients, OVERLOAD_SECONDS)
                ov[(name, clients)] = r
                log("  %-8s overload %4d callers  ok %6d  refused %6d  late %6d  ok p99 %6.0f ms"
                    "  refused p50 %6.0f ms  load %.2f"
                    % (name, clients, r["ok"], r["refused"], r["late"], r["ok_p99_ms"],
                       r["refused_p50_ms"], r["load"]))

        load_seconds = sum(r["seconds"] for r in RUNS
                           if r["server"] == "gpuadmit" and r["kind"] != "overload")
        rss_load = status_kib(gp.proc.pid, "VmRSS")
        hwm = status_kib(gp.proc.pid, "VmHWM")
        ng_rss = sum(status_kib(p, "VmRSS") for p in ng.pids)
        nd_rss = status_kib(nd.proc.pid, "VmRSS")
    finally:
        for srv in servers:
            srv.stop()

    # in process
    codec = []
    out = subprocess.run([os.path.join(build, "tests", "bench", "bench_codec"),
                          os.path.join(ROOT, "rules"), os.path.join(HERE, "data"),
                          os.path.join(ROOT, "tests", "data", "k8s", "testdata"),
                          os.path.join(ROOT, "tests", "data", "review-pod.json"),
                          "--reps", "3" if QUICK else "7", "--ms", "50" if QUICK else "200"],
                         stdout=subprocess.PIPE, check=True).stdout
    for line in out.decode().splitlines():
        codec.append(record("codec", server="gpuadmit", **json.loads(line)))

    with open(os.path.join(out_dir, "runs.jsonl"), "w") as f:
        for r in RUNS:
            f.write(json.dumps(r) + "\n")

    # ---- the table ----
    loads = [r["load"] for r in RUNS if "load" in r]
    bad = sum(r.get("bad", 0) + r.get("errors", 0) for r in RUNS if r["kind"] != "codec")
    print()
    print("gpuadmit bench: ratios are medians over %d rep(s) of per-rep ratios, A/B interleaved; "
          "%.0f s runs" % (REPS, SECONDS))
    print()
    print("End to end over TLS, keep-alive (wrk, the %d-byte training-pod review; gpuadmit "
          "%d worker threads (its default: one per CPU), nginx %d workers, node 1 process)"
          % (len(body), os.cpu_count(), workers))
    print()
    print("| endpoint | conns | gpuadmit req/s | ×nginx | ×node | p50 ×nginx | p99 ×nginx "
          "| CPU µs/req gpuadmit | nginx | node | CPU ×nginx |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    targets = []
    for ep in ENDPOINTS:
        for conns in CONNS:
            runs = e2e[(ep, conns)]
            g = [r["gpuadmit"] for r in runs]
            rps_r = ratio_of(runs, "rps")
            p99_r = ratio_of(runs, "p99_us")
            cpu_r = ratio_of(runs, "cpu_us_per_req")
            print("| /%s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
                  % (ep, conns, fmt(med([x["rps"] for x in g])), fmt(rps_r),
                     fmt(ratio_of(runs, "rps", "gpuadmit", "node")), fmt(ratio_of(runs, "p50_us")),
                     fmt(p99_r), fmt(med([x["cpu_us_per_req"] for x in g]), 1),
                     fmt(med([r["nginx"]["cpu_us_per_req"] for r in runs]), 1),
                     fmt(med([r["node"]["cpu_us_per_req"] for r in runs]), 1), fmt(cpu_r)))
            if conns > 1:
                node_r = ratio_of(runs, "rps", "gpuadmit", "node")
                targets.append(("/%s %d conns: req/s ≥ 3× node" % (ep, conns), node_r,
                                verdict(node_r, 3.0, below=False)))
                targets.append(("/%s %d conns: CPU/req ≤ 3× nginx" % (ep, conns), cpu_r,
                                verdict(cpu_r, 3.0)))
                targets.append(("/%s %d conns: p99 ≤ 1.5× nginx" % (ep, conns), p99_r,
                                verdict(p99_r, 1.5)))
    floor = [c for c in codec if c["fixture"].startswith("training pod")][0]["parse_ns"] / 1000
    ng_cpu = med([r["nginx"]["cpu_us_per_req"] for runs in e2e.values() for r in runs])
    print()
    print("Floor: yyjson's read of this review alone costs %.1f µs of CPU (in process, below), "
          "%.1f× nginx's whole request (%.1f µs, median of all its runs)"
          % (floor, floor / ng_cpu, ng_cpu))
    print()
    print("Handshakes: a new TLS connection per GET /healthz (%d client threads, ECDSA P-256 "
          "certificate, TLS 1.3)" % HANDSHAKE_THREADS)
    print()
    print("| handshakes | gpuadmit /s | ×nginx | ×node | resumed (gpuadmit, nginx, node) "
          "| CPU µs/conn gpuadmit | nginx | node | CPU ×nginx |")
    print("|---|---|---|---|---|---|---|---|---|")
    for mode in ("full", "resume"):
        runs = hs[mode]
        rate_r = ratio_of(runs, "rate")
        cpu_r = ratio_of(runs, "cpu_us_per_conn")
        resumed = ", ".join("%.0f%%" % (100.0 * sum(r[n]["resumed"] for r in runs)
                                        / max(1, sum(r[n]["connections"] for r in runs)))
                            for n in SERVERS)
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |"
              % ("full" if mode == "full" else "resumed", fmt(med([r["gpuadmit"]["rate"] for r in runs])),
                 fmt(rate_r), fmt(ratio_of(runs, "rate", "gpuadmit", "node")), resumed,
                 fmt(med([r["gpuadmit"]["cpu_us_per_conn"] for r in runs]), 1),
                 fmt(med([r["nginx"]["cpu_us_per_conn"] for r in runs]), 1),
                 fmt(med([r["node"]["cpu_us_per_conn"] for r in runs]), 1), fmt(cpu_r)))
        targets.append(("%s handshakes: rate ≥ 0.9× nginx" % mode, rate_r,
                        verdict(rate_r, 0.9, below=False)))
        if mode == "full":
            targets.append(("full handshakes: CPU/handshake ≤ 1.2× nginx", cpu_r,
                            verdict(cpu_r, 1.2)))
    print()
    print("Overload: callers calling at once, each call a new connection with a full handshake "
          "and a %d ms deadline counted from before the connect (the API server's timeoutSeconds); "
          "a refused or late caller calls again 20-50 ms later; %.0f s per cell. late = no answer "
          "by the deadline. gpuadmit with its default --max-queue-ms (1000)."
          % (OVERLOAD_DEADLINE_MS, OVERLOAD_SECONDS))
    print()
    print("| callers | server | answered in time | refused | late | answered p50 / p99 ms "
          "| refused p50 / p99 ms |")
    print("|---|---|---|---|---|---|---|")
    for clients in OVERLOAD_CLIENTS:
        for name in ("gpuadmit", "nginx"):
            r = ov[(name, clients)]
            print("| %d | %s | %d | %d | %d | %.0f / %.0f | %.0f / %.0f |"
                  % (clients, name, r["ok"], r["refused"], r["late"], r["ok_p50_ms"],
                     r["ok_p99_ms"], r["refused_p50_ms"], r["refused_p99_ms"]))
        g = ov[("gpuadmit", clients)]
        calls = max(1, g["calls"])
        targets.append(("overload, %d callers: late calls (no answer by the deadline) ≤ 1%%"
                        % clients, 100.0 * g["late"] / calls,
                        verdict(100.0 * g["late"] / calls, 1.0 + 1e-9)))
    print()
    print("In process: decode + evaluate + encode per review, against yyjson's bare read + write "
          "of the same bytes")
    print()
    print("| review | bytes | gpuadmit ns/op | read+write ns/op | ratio | read alone ns/op |")
    print("|---|---|---|---|---|---|")
    for c in codec:
        print("| %s | %d | %.0f | %.0f | %.2f | %.0f |"
              % (c["fixture"], c["bytes"], c["review_ns"], c["bare_ns"], c["ratio"],
                 c["parse_ns"]))
        targets.append(("in process, %s: ≤ 3× read+write" % c["fixture"], c["ratio"],
                        verdict(c["ratio"], 3.0)))
    print()
    print("Memory (resident): gpuadmit idle %.1f MiB; after %.0f s of load %.1f MiB (peak %.1f "
          "MiB); nginx %d workers + master %.1f MiB; node %.1f MiB"
          % (rss_idle / 1024, load_seconds, rss_load / 1024, hwm / 1024, workers, ng_rss / 1024,
             nd_rss / 1024))
    targets.append(("resident memory under load < 30 MiB (peak)", hwm / 1024,
                    verdict(hwm / 1024, 30 - 1e-9)))
    # instructions per review do not move with the machine's load: the figure to steer by
    if shutil.which("valgrind") and shutil.which("callgrind_control"):
        print()
        for ep in ENDPOINTS:
            out = subprocess.run([os.path.join(HERE, "callgrind-request.sh"), "500", ep],
                                 stdout=subprocess.PIPE, check=True).stdout.decode().strip()
            print("callgrind, keep-alive /%s: %s" % (ep, out))
            if ep == "validate":
                instr = int(out.split()[0])
                targets.append(("instructions per keep-alive /validate review, thousands: ≤ 400",
                                instr / 1000.0, verdict(instr, 400000)))
    print()
    print("| target | measured | |")
    print("|---|---|---|")
    for name, value, v in targets:
        print("| %s | %s | %s |" % (name, fmt(value), v))
    print()
    reads = {n: med([r["read_per_req"] for r in RUNS if r["kind"] == "wrk" and r["server"] == n])
             for n in SERVERS}
    # rchar counts read(), which nginx and node use; libmicrohttpd reads with recv(), which it
    # does not count (gpuadmit's answers carry the uid of the body it parsed)
    print("Checks: %d bad answers or socket errors in all runs (the wrk script checks the status, "
          "uid and \"allowed\":true of every answer). Bytes read per request (rchar, median): "
          "nginx %.0f, node %.0f, for a %d-byte body: both read every request whole (gpuadmit "
          "reads with recv(), which rchar does not count)."
          % (bad, reads["nginx"], reads["node"], len(body)))
    print("Machine: %d CPUs; 1-minute load average before the runs: min %.2f, median %.2f, "
          "max %.2f; %.0f s in all; raw figures in %s"
          % (os.cpu_count(), min(loads), med(loads), max(loads), time.monotonic() - started,
             os.path.relpath(os.path.join(out_dir, "runs.jsonl"), ROOT)))


if __name__ == "__main__":
    main()
