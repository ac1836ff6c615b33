"""A small evaluator for the subset of CEL that manifests/base/webhooks.yaml uses in its
matchConditions, so that tests/manifests/test_manifests.py can run them on sample objects
without a CEL engine (there is none in Debian). Not a suite: the test imports it.

The subset: identifiers, field selection (a.b), indexing (m['k'], l[0]), has(a.b), string, int,
bool and null literals (null compares with any type), !, &&, ||, ==, !=, `in` (a key of a map,
an element of a list), x.startsWith(s), x.contains(s) and the
x.exists(v, predicate) macro over lists (elements) and maps (keys). Anything else is a parse
error, so an expression cannot quietly step outside what is checked here.

Semantics follow CEL as the kube-apiserver runs it, with one deliberate difference: && and ||
evaluate left to right, so an error on the left is an error here even where CEL, whose && and
|| are commutative, would let the right side absorb it. Every error CEL reports is reported
here too, so "no error here" implies "no error in the apiserver", which is what the test needs
(an error there fails the request under failurePolicy Fail).
"""
import re


class CelError(Exception):
    """An evaluation error (CEL's no_such_field, no_matching_overload, ...)."""


class CelSyntaxError(Exception):
    """The expression is not in the supported subset."""


_TOKEN = re.compile(r"""\s*(?:
    (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<int>\d+)
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>&&|\|\||==|!=|[!().,\[\]])
)""", re.X)


def _tokens(text):
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise CelSyntaxError("unexpected %r at %d" % (text[pos:pos + 20], pos))
        pos = m.end()
        if m.group("str") is not None:
            s = m.group("str")[1:-1]
            out.append(("lit", re.sub(r"\\(.)", r"\1", s)))
        elif m.group("int") is not None:
            out.append(("lit", int(m.group("int"))))
        elif m.group("id") is not None:
            word = m.group("id")
            if word in ("true", "false", "null"):
                out.append(("lit", {"true": True, "false": False, "null": None}[word]))
            elif word == "in":
                out.append(("op", "in"))
            else:
                out.append(("id", word))
        else:
            out.append(("op", m.group("op")))
    out.append(("end", None))
    return out


class _Parser:
    def __init__(self, text):
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, kind=None, value=None):
        k, v = self.toks[self.i]
        return (kind is None or k == kind) and (value is None or v == value)

    def take(self, kind=None, value=None):
        if not self.peek(kind, value):
            raise CelSyntaxError("expected %s %s, got %r" % (kind, value or "", self.toks[self.i]))
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def parse(self):
        e = self.or_()
        self.take("end")
        return e

    def or_(self):
        e = self.and_()
        while self.peek("op", "||"):
            self.take()
            e = ("or", e, self.and_())
        return e

    def and_(self):
        e = self.rel()
        while self.peek("op", "&&"):
            self.take()
            e = ("and", e, self.rel())
        return e

    def rel(self):
        e = self.unary()
        for op in ("==", "!=", "in"):
            if self.peek("op", op):
                self.take()
                return (op, e, self.unary())
        return e

    def unary(self):
        if self.peek("op", "!"):
            self.take()
            return ("not", self.unary())
        return self.member()

    def member(self):
        e = self.primary()
        while self.peek("op", ".") or self.peek("op", "["):
            if self.take()[1] == "[":
                e = ("index", e, self.or_())
                self.take("op", "]")
                continue
            name = self.take("id")[1]
            if self.peek("op", "("):
                e = self.method(e, name)
            else:
                e = ("sel", e, name)
        return e

    def method(self, target, name):
        self.take("op", "(")
        if name in ("startsWith", "contains"):
            arg = self.or_()
            self.take("op", ")")
            return (name, target, arg)
        if name == "exists":
            var = self.take("id")[1]
            self.take("op", ",")
            pred = self.or_()
            self.take("op", ")")
            return ("exists", target, var, pred)
        raise CelSyntaxError("method %s() is not in the supported subset" % name)

    def primary(self):
        if self.peek("lit"):
            return ("lit", self.take()[1])
        if self.peek("op", "("):
            self.take()
            e = self.or_()
            self.take("op", ")")
            return e
        name = self.take("id")[1]
        if self.peek("op", "("):
            if name != "has":
                raise CelSyntaxError("function %s() is not in the supported subset" % name)
            self.take()
            arg = self.member()
            self.take("op", ")")
            if arg[0] != "sel":
                raise CelSyntaxError("has() takes a field selection")
            return ("has", arg[1], arg[2])
        return ("id", name)


def compile_expr(text):
    """The parsed expression (raises CelSyntaxError)."""
    return _Parser(text).parse()


def _type(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "map"
    if isinstance(v, list):
        return "list"
    return "null"


def _bool(v, what):
    if not isinstance(v, bool):
        raise CelError("%s: no matching overload for %s" % (what, _type(v)))
    return v


def evaluate(ast, env):
    """The value of a parsed expression in env (a dict of variables); raises CelError."""
    op = ast[0]
    if op == "lit":
        return ast[1]
    if op == "id":
        if ast[1] not in env:
            raise CelError("undeclared reference to %r" % ast[1])
        return env[ast[1]]
    if op in ("sel", "has"):
        v = evaluate(ast[1], env)
        if not isinstance(v, dict):
            raise CelError("field %r of a %s" % (ast[2], _type(v)))
        if op == "has":
            return ast[2] in v
        if ast[2] not in v:
            raise CelError("no such key: %s" % ast[2])
        return v[ast[2]]
    if op == "index":
        v, k = evaluate(ast[1], env), evaluate(ast[2], env)
        if isinstance(v, dict) and isinstance(k, str):
            if k not in v:
                raise CelError("no such key: %s" % k)
            return v[k]
        if isinstance(v, list) and isinstance(k, int) and not isinstance(k, bool):
            if not 0 <= k < len(v):
                raise CelError("index out of bounds: %d" % k)
            return v[k]
        raise CelError("[]: no matching overload for %s, %s" % (_type(v), _type(k)))
    if op == "not":
        return not _bool(evaluate(ast[1], env), "!")
    if op == "and":
        return _bool(evaluate(ast[1], env), "&&") and _bool(evaluate(ast[2], env), "&&")
    if op == "or":
        return _bool(evaluate(ast[1], env), "||") or _bool(evaluate(ast[2], env), "||")
    if op in ("==", "!="):
        a, b = evaluate(ast[1], env), evaluate(ast[2], env)
        if a is None or b is None:  # null equals only null, whatever the other side's type
            return (a is b) == (op == "==")
        if _type(a) != _type(b):
            raise CelError("%s: no matching overload for %s, %s" % (op, _type(a), _type(b)))
        return (a == b) == (op == "==")
    if op == "in":
        a, b = evaluate(ast[1], env), evaluate(ast[2], env)
        if isinstance(b, dict) or isinstance(b, list):
            return a in b
        raise CelError("in: no matching overload for %s" % _type(b))
    if op == "startsWith":
        s, p = evaluate(ast[1], env), evaluate(ast[2], env)
        if not isinstance(s, str) or not isinstance(p, str):
            raise CelError("startsWith: no matching overload for %s" % _type(s))
        return s.startswith(p)
    if op == "contains":
        s, p = evaluate(ast[1], env), evaluate(ast[2], env)
        if not isinstance(s, str) or not isinstance(p, str):
            raise CelError("contains: no matching overload for %s" % _type(s))
        return p in s
    if op == "exists":
        coll = evaluate(ast[1], env)
        if not isinstance(coll, (list, dict)):
            raise CelError("exists() over a %s" % _type(coll))
        err = None
        for item in coll:  # a map's keys, a list's elements
            inner = dict(env)
            inner[ast[2]] = item
            try:
                if _bool(evaluate(ast[3], inner), "exists"):
                    return True
            except CelError as e:  # a true element absorbs errors of the others, as in CEL
                err = err or e
        if err is not None:
            raise err
        return False
    raise CelSyntaxError("unknown node %r" % (op,))


def match(conditions, env):
    """How the apiserver combines a webhook's matchConditions: "skip" when any is false, else
    "error" when any failed to evaluate, else "call". conditions: [(name, parsed)]."""
    errors = []
    for name, ast in conditions:
        try:
            v = evaluate(ast, env)
        except CelError as e:
            errors.append("%s: %s" % (name, e))
            continue
        if v is not True:
            if v is not False:
                errors.append("%s: not a bool" % name)
                continue
            return "skip", []
    return ("error", errors) if errors else ("call", [])
