#!/usr/bin/env python3
"""A simulated kube-apiserver for the list/watch client's tests (Python standard library only).

It speaks the real wire format over TLS (HTTP/1.1, keep-alive):

* GET <kind path>?limit=N[&continue=T][&fieldSelector=...]: a paged list, consistent at the
  resourceVersion of its first page; items carry no kind/apiVersion (as the apiserver writes
  typed lists); a continue token that has expired gets 410 with a metav1.Status.
* GET <kind path>?watch=1&resourceVersion=RV[&allowWatchBookmarks=true][&timeoutSeconds=T]:
  200 with Transfer-Encoding: chunked, one JSON event per line. The byte stream is cut into
  chunks at random places: an event is often split across chunks, and several events often share
  one. Bookmarks come every `bookmark_interval` seconds when asked for. A resourceVersion older
  than the last compaction gets 410 (as the HTTP status, or as an ERROR event: `gone_mode`).
* fieldSelector terms (field=value, field==value, field!=value) on metadata.name,
  metadata.namespace, spec.nodeName and status.phase; an object that stops matching is sent as
  DELETED with its previous content, one that starts matching as ADDED (cacher semantics).
* Bearer-token auth (401 on a wrong or missing token); a client certificate signed by
  `client_ca` authenticates too.

State: objects per kind, resourceVersions from one global counter (strings on the wire), and an
event log every watch reads from. Faults are injected through methods (see FakeAPIServer).

    from fake_apiserver import FakeAPIServer
    fake = FakeAPIServer(cert, key, token="t0k3n").start()
    fake.add("nodes", {"metadata": {"name": "n1"}, ...})
    ...
    fake.stop()

Standalone:  fake_apiserver.py --certs DIR [--port P] [--token T] [--pods N]
serves until interrupted and prints a kubeconfig to use with it.
"""
import base64
import bisect
import copy
import http.server
import json
import os
import random
import select
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.parse
import uuid

# plural -> (path, kind, apiVersion, namespaced)
KINDS = {
    "nodes": ("/api/v1/nodes", "Node", "v1", False),
    "pods": ("/api/v1/pods", "Pod", "v1", True),
    "priorityclasses": ("/apis/scheduling.k8s.io/v1/priorityclasses", "PriorityClass",
                        "scheduling.k8s.io/v1", False),
    "replicasets": ("/apis/apps/v1/replicasets", "ReplicaSet", "apps/v1", True),
    "deployments": ("/apis/apps/v1/deployments", "Deployment", "apps/v1", True),
    "statefulsets": ("/apis/apps/v1/statefulsets", "StatefulSet", "apps/v1", True),
    "jobs": ("/apis/batch/v1/jobs", "Job", "batch/v1", True),
    # served only when a test asks (FakeAPIServer(optional=...)): a cluster without Cluster
    # Autoscaler or Karpenter answers 404
    "configmaps": ("/api/v1/namespaces/kube-system/configmaps", "ConfigMap", "v1", True),
    "nodepools": ("/apis/karpenter.sh/v1/nodepools", "NodePool", "karpenter.sh/v1", False),
}
OPTIONAL = ("configmaps", "nodepools")
PATHS = {v[0]: k for k, v in KINDS.items()}
FIELDS = ("metadata.name", "metadata.namespace", "spec.nodeName", "status.phase")


def obj_key(obj):
    md = obj.get("metadata", {})
    ns = md.get("namespace", "")
    return "%s/%s" % (ns, md["name"]) if ns else md["name"]


def field_value(obj, field):
    cur = obj
    for part in field.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return "" if cur is None else str(cur)


def parse_selector(text):
    """[(field, op, value)] from a fieldSelector; ValueError when unsupported."""
    terms = []
    for term in filter(None, (text or "").split(",")):
        for op in ("!=", "==", "="):
            if op in term:
                f, v = term.split(op, 1)
                if f not in FIELDS:
                    raise ValueError('field label not supported: "%s"' % f)
                terms.append((f, "!=" if op == "!=" else "=", v))
                break
        else:
            raise ValueError('invalid selector: "%s"' % term)
    return terms


def matches(obj, terms):
    for f, op, v in terms:
        got = field_value(obj, f)
        if (got == v) != (op == "="):
            return False
    return True


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class Watch:
    """An open watch, as fault injection sees it."""

    def __init__(self, kind, rv):
        self.kind = kind
        self.start_rv = rv
        self.drop = False      # close abruptly (after half of the next event, if any)
        self.reset = False     # end with a TCP RST at once (no close_notify, no FIN)
        self.hang = False      # send nothing more, never close
        self.sent = 0


class FakeAPIServer:
    def __init__(self, cert, key, token="fake-token", host="127.0.0.1", port=0,
                 bookmark_interval=1.0, client_ca=None, seed=1, gone_mode="http", optional=()):
        self.cert, self.key, self.token = cert, key, token
        self.optional = set(optional)  # the optional kinds served; the others are 404
        self.host, self.port = host, port
        self.bookmark_interval = bookmark_interval
        self.client_ca = client_ca
        self.gone_mode = gone_mode  # "http": 410 status; "event": 200 + ERROR event
        self.rng = random.Random(seed)
        self.cv = threading.Condition()
        self.rv = 1
        self.objects = {k: {} for k in KINDS}
        self.log = []        # (rv, kind, type, obj, prev): every change, in order
        self.log_rvs = []    # the rvs of self.log, for bisect
        self.compacted = 0   # a watch from an rv below this is too old
        self.continues = {}  # id -> {"kind", "rv", "items", "at"}
        self.watches = set()
        self.faults = []     # [{"n", "status", "kind", "op"}]
        self.expire_continue_n = 0
        self.hang_new = set()      # kinds whose new watches hang
        # one-shot faults per kind, taken by whichever watch of the kind acts next (an open one,
        # or the next one opened): a fault never lands on a watch that is just ending
        self.next_fault = {"malformed": set(), "expire": set(), "cut": set()}
        self.requests = []   # {"t", "op", "kind", "query", "status", "auth"}
        self.stats = {"split_events": 0, "packed_chunks": 0, "bookmarks": 0, "chunks": 0}
        self.cuts = []       # (time, kind, resourceVersion of the event cut in half)
        self.stopping = False
        self.conns = set()
        self.httpd = None
        self.thread = None

    # ---------------------------------------------------------------- lifecycle

    def start(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(self.cert, self.key)
        ctx.set_alpn_protocols(["http/1.1"])
        if self.client_ca:
            ctx.load_verify_locations(cafile=self.client_ca)
            ctx.verify_mode = ssl.CERT_OPTIONAL
        self.ssl_ctx = ctx
        fake = self

        class Handler(_Handler):
            server_fake = fake

        server_class = _Server6 if ":" in self.host else _Server
        self.httpd = server_class((self.host, self.port), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        with self.cv:
            self.stopping = True
            self.cv.notify_all()
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
        with self.cv:
            conns = list(self.conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self.thread is not None:
            self.thread.join(5)

    @property
    def url(self):
        host = "[%s]" % self.host if ":" in self.host else self.host
        return "https://%s:%d" % (host, self.port)

    def kubeconfig(self, path, ca_file=None, ca_data=None, token=None, token_file=None,
                   cert=None, key=None, cert_data=None, key_data=None, extra_user=""):
        """Writes a kubeconfig for this server (JSON is YAML). Returns path."""
        cluster = {"server": self.url}
        if ca_file:
            cluster["certificate-authority"] = ca_file
        if ca_data:
            cluster["certificate-authority-data"] = base64.b64encode(ca_data).decode()
        user = {}
        for k, v in (("token", token), ("tokenFile", token_file), ("client-certificate", cert),
                     ("client-key", key)):
            if v:
                user[k] = v
        if cert_data:
            user["client-certificate-data"] = base64.b64encode(cert_data).decode()
        if key_data:
            user["client-key-data"] = base64.b64encode(key_data).decode()
        lines = ["apiVersion: v1", "kind: Config", "current-context: fake",
                 "preferences: {}",
                 "clusters:", "- name: fake-cluster", "  cluster:"]
        lines += ["    %s: %s" % (k, json.dumps(v)) for k, v in cluster.items()]
        lines += ["contexts:", "- name: other", "  context: {cluster: nowhere, user: nobody}",
                  "- name: fake", "  context:", "    cluster: fake-cluster",
                  "    user: fake-user", "    namespace: default",
                  "users:", "- name: fake-user", "  user:"]
        lines += ["    %s: %s" % (k, json.dumps(v)) for k, v in user.items()]
        if not user:
            lines[-1] = "  user: {}"
        lines += [extra_user] if extra_user else []
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    # ---------------------------------------------------------------- state

    def _record(self, kind, typ, obj, prev):
        self.log.append((self.rv, kind, typ, obj, prev))
        self.log_rvs.append(self.rv)
        self.cv.notify_all()

    def put(self, kind, obj):
        """Adds or replaces an object (by namespace/name); returns the stored copy."""
        path, k, api, namespaced = KINDS[kind]
        obj = copy.deepcopy(obj)
        obj["kind"], obj["apiVersion"] = k, api
        md = obj.setdefault("metadata", {})
        if namespaced:
            md.setdefault("namespace", "default")
        with self.cv:
            self.rv += 1
            md["resourceVersion"] = str(self.rv)
            md.setdefault("uid", str(uuid.uuid4()))
            key = obj_key(obj)
            prev = self.objects[kind].get(key)
            self.objects[kind][key] = obj
            self._record(kind, "MODIFIED" if prev else "ADDED", obj, prev)
            return copy.deepcopy(obj)

    add = modify = put

    def put_many(self, kind, objs):
        for o in objs:
            self.put(kind, o)

    def delete(self, kind, name, namespace=None):
        key = "%s/%s" % (namespace, name) if namespace else name
        with self.cv:
            prev = self.objects[kind].pop(key)
            self.rv += 1
            gone = copy.deepcopy(prev)
            gone["metadata"]["resourceVersion"] = str(self.rv)
            self._record(kind, "DELETED", gone, prev)

    def snapshot(self):
        """{kind: {key: object}} as it is now (deep copies)."""
        with self.cv:
            return copy.deepcopy(self.objects)

    def current_rv(self):
        with self.cv:
            return self.rv

    # ---------------------------------------------------------------- faults

    def fail_next(self, n, code=500, kind=None, op=None, field_selector=None):
        """The next n requests (of kind, of op "list"/"watch", with that fieldSelector, when
        given) get code."""
        with self.cv:
            self.faults.append({"n": n, "status": code, "kind": kind, "op": op,
                                "fieldSelector": field_selector})

    def clear_faults(self):
        with self.cv:
            self.faults = []
            self.hang_new.clear()
            for f in self.next_fault.values():
                f.clear()
            self.expire_continue_n = 0

    def _open(self, kind):
        return [w for w in self.watches if kind is None or w.kind == kind]

    def drop_watches(self, kind=None):
        """Open watches (of kind) close abruptly, mid-event when one is on its way."""
        with self.cv:
            for w in self._open(kind):
                w.drop = True
            self.cv.notify_all()

    def reset_watches(self, kind=None):
        """Open watches (of kind) end at once with a TCP RST, as when a load balancer or a
        restarting apiserver resets them. Returns how many."""
        with self.cv:
            open_now = self._open(kind)
            for w in open_now:
                w.reset = True
            self.cv.notify_all()
            return len(open_now)

    def drop_on_next_event(self, kind):
        """The next event of kind goes out half, then the connection dies (see self.cuts)."""
        with self.cv:
            self.next_fault["cut"].add(kind)

    def hang_watches(self, kind=None, new=False):
        """Open watches (and, with new, later ones) stop sending and never close. Returns how
        many open watches hang now."""
        with self.cv:
            for w in self._open(kind):
                w.hang = True
            if new:
                self.hang_new.add(kind)
            self.cv.notify_all()
            return len(self._open(kind))

    def unhang(self, new_only=False):
        """New watches no longer hang; nor, unless new_only, the hung ones."""
        with self.cv:
            self.hang_new.clear()
            for w in self.watches:
                w.hang = w.hang and new_only
            self.cv.notify_all()

    def malformed(self, kind):
        """The next line on a watch of kind is not JSON."""
        with self.cv:
            self.next_fault["malformed"].add(kind)
            self.cv.notify_all()

    def expire_watches(self, kind):
        """The next thing a watch of kind sends is an ERROR event with a 410 Status; the stream
        ends there."""
        with self.cv:
            self.next_fault["expire"].add(kind)
            self.cv.notify_all()

    def compact(self):
        """Forgets history: watches from a resourceVersion before now are too old (410)."""
        with self.cv:
            self.compacted = self.rv

    def expire_continue(self, n=1):
        """The next n list requests that carry a continue token get 410 Expired."""
        with self.cv:
            self.expire_continue_n += n

    def open_watches(self, kind=None):
        with self.cv:
            return len(self._open(kind))

    def requests_since(self, i=0, kind=None, op=None):
        with self.cv:
            return [r for r in self.requests[i:]
                    if (kind is None or r["kind"] == kind) and (op is None or r["op"] == op)]

    def n_requests(self):
        with self.cv:
            return len(self.requests)

    # ---------------------------------------------------------------- serving

    def _take_fault(self, kind, op, q=None):
        for f in self.faults:
            if f["n"] > 0 and f["kind"] in (None, kind) and f["op"] in (None, op) and \
                    f.get("fieldSelector") in (None, (q or {}).get("fieldSelector")):
                f["n"] -= 1
                return f["status"]
        return None

    def _list(self, kind, q):
        """(status, body dict, extra headers)."""
        path, k, api, namespaced = KINDS[kind]
        try:
            terms = parse_selector(q.get("fieldSelector", ""))
            limit = int(q.get("limit", "0") or "0")
        except ValueError as e:
            return 400, status(400, "BadRequest", str(e))
        with self.cv:
            cont = q.get("continue")
            if cont:
                if self.expire_continue_n > 0:
                    self.expire_continue_n -= 1
                    return 410, status(410, "Expired", "The provided continue parameter is too "
                                       "old to display a consistent list result. You can start "
                                       "a new list without the continue parameter.")
                try:
                    tok = json.loads(base64.b64decode(cont))
                    state = self.continues[tok["id"]]
                    start = int(tok["start"])
                except (ValueError, KeyError, TypeError):
                    return 400, status(400, "BadRequest", "invalid continue token")
                if state["kind"] != kind:
                    return 400, status(400, "BadRequest", "continue token of another kind")
                items, list_rv = state["items"], state["rv"]
            else:
                items = [self.objects[kind][key] for key in sorted(self.objects[kind])]
                items = [copy.deepcopy(o) for o in items if matches(o, terms)]
                for o in items:
                    o.pop("kind", None)
                    o.pop("apiVersion", None)
                list_rv, start = self.rv, 0
            end = len(items) if limit <= 0 else min(len(items), start + limit)
            body = {"kind": k + "List", "apiVersion": api,
                    "metadata": {"resourceVersion": str(list_rv)}, "items": items[start:end]}
            if end < len(items):
                if cont:
                    cid = tok["id"]
                else:
                    cid = uuid.uuid4().hex
                    self.continues[cid] = {"kind": kind, "rv": list_rv, "items": items}
                body["metadata"]["continue"] = base64.b64encode(json.dumps(
                    {"rv": list_rv, "start": end, "id": cid}).encode()).decode()
                body["metadata"]["remainingItemCount"] = len(items) - end
            return 200, body

    def _events(self, w, cursor, terms):
        """The log from cursor on as watch events of w's kind: ([(type, obj)], new cursor)."""
        out = []
        while cursor < len(self.log):
            rv, kind, typ, obj, prev = self.log[cursor]
            cursor += 1
            if kind != w.kind:
                continue
            cur_ok = typ != "DELETED" and matches(obj, terms)
            old_ok = prev is not None and matches(prev, terms)
            if cur_ok and not old_ok:
                out.append(("ADDED", obj))
            elif cur_ok and old_ok:
                out.append(("MODIFIED", obj))
            elif old_ok:
                gone = copy.deepcopy(prev)
                gone["metadata"]["resourceVersion"] = str(rv)
                out.append(("DELETED", gone))
        return out, cursor


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def handle_error(self, request, client_address):
        pass  # a client that went away is not news


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_fake = None
    timeout = 60

    def setup(self):
        fake = self.server_fake
        raw = self.request
        raw.settimeout(10)
        self.request = fake.ssl_ctx.wrap_socket(raw, server_side=True)
        self.request.settimeout(self.timeout)
        with fake.cv:
            fake.conns.add(self.request)
        super().setup()

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass
        finally:
            with self.server_fake.cv:
                self.server_fake.conns.discard(self.request)
            try:
                self.request.close()  # wrap_socket detached the raw socket: ours to close
            except OSError:
                pass

    def log_message(self, fmt, *args):
        pass

    def _send_json(self, code, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _authenticated(self):
        fake = self.server_fake
        try:
            if self.request.getpeercert():
                return True
        except (ValueError, ssl.SSLError):
            pass
        return self.headers.get("Authorization") == "Bearer %s" % fake.token

    def do_GET(self):
        fake = self.server_fake
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
        kind = PATHS.get(u.path)
        if kind in OPTIONAL and kind not in fake.optional:
            kind = None
        op = "watch" if q.get("watch") in ("1", "true") else "list"
        rec = {"t": time.monotonic(), "op": op, "kind": kind, "query": q, "status": None,
               "auth": self.headers.get("Authorization")}
        with fake.cv:
            fake.requests.append(rec)
            injected = fake._take_fault(kind, op, q)
        if kind is None:
            rec["status"] = 404
            return self._send_json(404, status(404, "NotFound", "the server could not find "
                                               "the requested resource"))
        if not self._authenticated():
            rec["status"] = 401
            return self._send_json(401, status(401, "Unauthorized", "Unauthorized"))
        if injected is not None:
            rec["status"] = injected
            hdrs = [("Retry-After", "1")] if injected == 429 else []
            reason = {410: "Expired", 429: "TooManyRequests", 500: "InternalError",
                      503: "ServiceUnavailable"}.get(injected, "Failure")
            return self._send_json(injected, status(injected, reason, "injected %d" % injected),
                                   hdrs)
        if op == "list":
            code, body = fake._list(kind, q)
            rec["status"] = code
            rec["rv"] = body.get("metadata", {}).get("resourceVersion")
            return self._send_json(code, body)
        return self._watch(kind, q, rec)

    # ------------------------------------------------------------ watch

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _write_stream(self, data, n_events):
        """Sends data (whole events) as chunks cut at 1-4 random places: with several events,
        chunks hold several and cut some in two; a lone event is cut in two half the time."""
        fake = self.server_fake
        rng = fake.rng
        n_cuts = 0 if n_events == 1 and rng.random() < 0.5 else rng.randint(1, 4)
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, n_cuts)))
        pieces, last = [], 0
        for c in cuts + [len(data)]:
            pieces.append(data[last:c])
            last = c
        with fake.cv:
            fake.stats["chunks"] += len(pieces)
            fake.stats["packed_chunks"] += sum(1 for p in pieces if p.count(b"\n") > 1)
            fake.stats["split_events"] += sum(1 for p in pieces[:-1] if not p.endswith(b"\n"))
        for i, p in enumerate(pieces):
            self._chunk(p)
            if i + 1 < len(pieces) and rng.random() < 0.5:
                time.sleep(0.002)  # let the halves arrive as separate reads

    def _abort(self):
        try:
            self.request.shutdown(socket.SHUT_RDWR)  # no close_notify, no last chunk
        except OSError:
            pass
        self.close_connection = True

    def _reset(self):
        try:
            # linger 0: close() sends RST instead of FIN and drops what is unsent
            self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.request.close()
        except OSError:
            pass
        self.close_connection = True

    def _client_gone(self):
        try:
            r, _, _ = select.select([self.request], [], [], 0)
            if not r:
                return False
            self.request.settimeout(0)
            try:
                return self.request.recv(1) == b""
            except (ssl.SSLWantReadError, BlockingIOError):
                return False
            finally:
                self.request.settimeout(self.timeout)
        except (OSError, ValueError):
            return True

    def _watch(self, kind, q, rec):
        fake = self.server_fake
        try:
            terms = parse_selector(q.get("fieldSelector", ""))
            timeout = float(q.get("timeoutSeconds", "1800"))
            rv_text = q.get("resourceVersion", "")
            rv = int(rv_text) if rv_text not in ("", "0") else None
        except ValueError as e:
            rec["status"] = 400
            return self._send_json(400, status(400, "BadRequest", str(e)))
        bookmarks = q.get("allowWatchBookmarks") == "true"
        w = Watch(kind, rv)
        too_old = None
        with fake.cv:
            if rv is not None and rv < fake.compacted:
                too_old = status(410, "Expired", "too old resource version: %d (%d)"
                                 % (rv, fake.compacted))
            if too_old is None or fake.gone_mode == "event":
                fake.watches.add(w)
                w.hang = kind in fake.hang_new or None in fake.hang_new
            if rv is None:
                initial = [("ADDED", o) for _, o in sorted(fake.objects[kind].items())
                           if matches(o, terms)]
                cursor = len(fake.log)
            else:
                initial = []
                cursor = bisect.bisect_right(fake.log_rvs, rv)
            seen_rv = fake.rv
        if too_old is not None and fake.gone_mode == "http":
            rec["status"] = 410
            return self._send_json(410, too_old)
        rec["status"] = 200
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if too_old is not None:
                self._chunk(json.dumps({"type": "ERROR", "object": too_old}).encode() + b"\n")
                self._chunk(b"")
                return
            self._stream(w, terms, initial, cursor, seen_rv, timeout, bookmarks)
        except (OSError, ssl.SSLError, ValueError):
            self.close_connection = True
        finally:
            with fake.cv:
                fake.watches.discard(w)

    def _stream(self, w, terms, pending, cursor, seen_rv, timeout, bookmarks):
        fake = self.server_fake
        deadline = time.monotonic() + timeout
        next_bookmark = time.monotonic() + fake.bookmark_interval
        while True:
            with fake.cv:
                while True:
                    if fake.stopping:
                        return self._abort()
                    if w.reset:
                        break
                    if w.hang:
                        break  # what is pending waits for the unhang
                    if (w.drop or pending or w.kind in fake.next_fault["malformed"] or
                            w.kind in fake.next_fault["expire"]):
                        break
                    if cursor < len(fake.log):
                        more, cursor = fake._events(w, cursor, terms)
                        seen_rv = fake.log_rvs[cursor - 1]
                        pending += more
                        if pending:
                            break
                        continue
                    now = time.monotonic()
                    if now >= deadline or (bookmarks and now >= next_bookmark):
                        seen_rv = fake.rv
                        break
                    fake.cv.wait(min(deadline, next_bookmark if bookmarks else deadline) - now)
                if w.reset:
                    return self._reset()
                hang = w.hang
                bad = expire = cut = False
                if not hang:
                    nf = fake.next_fault
                    bad = w.kind in nf["malformed"]
                    expire = w.kind in nf["expire"]
                    cut = bool(pending) and w.kind in nf["cut"]
                    for f, taken in (("malformed", bad), ("expire", expire), ("cut", cut)):
                        if taken:
                            nf[f].discard(w.kind)
                drop = w.drop or cut
            if hang:
                # a dead peer: nothing more, no end, until the client gives up
                while True:
                    with fake.cv:
                        if fake.stopping:
                            return self._abort()
                        if w.drop:
                            return self._abort()
                        if w.reset:
                            return self._reset()
                        if not w.hang:
                            break
                        fake.cv.wait(0.1)
                    if self._client_gone():
                        self.close_connection = True
                        return
                continue
            lines = [json.dumps({"type": t, "object": o}).encode() + b"\n" for t, o in pending]
            pending = []
            if drop:
                if lines:  # half of an event, then the connection dies
                    self._chunk(lines[0][:max(1, len(lines[0]) // 2)])
                    with fake.cv:
                        fake.cuts.append((time.monotonic(), w.kind,
                                          int(json.loads(lines[0])["object"]["metadata"]
                                              ["resourceVersion"])))
                return self._abort()
            if bad:
                lines.insert(0, b'{"type":"MODIFIED","object":{"metadata":{"name":"x"}\n')
            if expire:
                lines.append(json.dumps({"type": "ERROR", "object": status(
                    410, "Expired", "too old resource version: %s (%d)"
                    % (w.start_rv, fake.rv))}).encode() + b"\n")
            if lines:
                self._write_stream(b"".join(lines), len(lines))
                w.sent += len(lines)
            if expire:
                self._chunk(b"")
                return
            now = time.monotonic()
            if bookmarks and now >= next_bookmark:
                self._chunk(json.dumps({"type": "BOOKMARK", "object": {
                    "kind": KINDS[w.kind][1], "apiVersion": KINDS[w.kind][2],
                    "metadata": {"resourceVersion": str(seen_rv)}}}).encode() + b"\n")
                with fake.cv:
                    fake.stats["bookmarks"] += 1
                next_bookmark = now + fake.bookmark_interval
            if now >= deadline:
                self._chunk(b"")  # the clean end of a watch
                return


# ------------------------------------------------------------------------------------------------


def _demo_objects(fake, n_pods):
    for i in range(3):
        fake.add("nodes", {"metadata": {"name": "gpu-%d" % i, "labels": {
            "nvidia.com/gpu.present": "true"}}, "spec": {},
            "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"},
                       "conditions": [{"type": "Ready", "status": "True"}]}})
    for i in range(n_pods):
        fake.add("pods", {"metadata": {"name": "p-%d" % i, "namespace": "ml"},
                          "spec": {"nodeName": "gpu-%d" % (i % 3), "containers": [
                              {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
                          "status": {"phase": "Running"}})
    fake.add("priorityclasses", {"metadata": {"name": "high"}, "value": 1000})


def main():
    import argparse
    ap = argparse.ArgumentParser(description="simulated kube-apiserver over TLS")
    ap.add_argument("--certs", required=True, help="directory made by gpuadmit certs (ca.crt, tls.crt, tls.key)")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--token", default="fake-token")
    ap.add_argument("--pods", type=int, default=10)
    ap.add_argument("--bookmark-interval", type=float, default=5.0)
    a = ap.parse_args()
    fake = FakeAPIServer(os.path.join(a.certs, "tls.crt"), os.path.join(a.certs, "tls.key"),
                         token=a.token, port=a.port, bookmark_interval=a.bookmark_interval)
    fake.start()
    _demo_objects(fake, a.pods)
    kc = fake.kubeconfig(os.path.join(a.certs, "fake-kubeconfig.yaml"),
                         ca_file=os.path.join(a.certs, "ca.crt"), token=a.token)
    print("fake apiserver on %s; kubeconfig: %s" % (fake.url, kc), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
