#!/usr/bin/env python3
"""make mutation: puts each one-line bug of tests/mutation/mutants.txt into a scratch copy of the
tree, runs the test command that must catch it, and says whether it did.

The scratch copy is build/mutation/tree: the tracked (and untracked, not ignored) files of this
tree, with its build/release objects, so that a mutant costs one compile, the links and its
command. Everything a command builds under the copy's build/ (release, san, ...) is put back
after each mutant, so that no mutant's objects reach the next one. Every command first runs once without a mutant and must pass there (a command that
fails anyway would "kill" everything). After each mutant the file and the objects are put back
as they were (contents and times), so the next build starts from the unmutated objects. The
real tree is never written; the copy is removed at the end. Logs: build/mutation/logs/ID.log.

  tests/mutation/run.py [--list FILE] [--keep] [ID ...]   only the named mutants when IDs given

Prints one line per mutant, then "N killed, M survived" as the last line. Exit status 1 when
a mutant survived, a mutant is broken (its text does not occur exactly once) or a command
fails without a mutant; 2 on a usage error.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORK = os.path.join(ROOT, "build", "mutation")
TREE = os.path.join(WORK, "tree")
BASE = os.path.join(WORK, "base")  # the copy's build/ as it is without a mutant
LOGS = os.path.join(WORK, "logs")
TIMEOUT_S = 900  # a mutant that hangs its tests is killed by the timeout
CHILD = None  # the command running now (its own process group), for the signal handlers


def on_signal(signum, frame):
    """SIGINT and SIGTERM: stop the running command's whole group, then unwind through the
    finally blocks that restore and remove the scratch tree."""
    if CHILD is not None and CHILD.poll() is None:
        os.killpg(CHILD.pid, signal.SIGKILL)
        CHILD.wait()
    raise KeyboardInterrupt


def unescape(field):
    return field.replace("\\n", "\n")


def read_mutants(path):
    """(id, file, search, replace, command, line number) of each mutant line."""
    out, errors, seen = [], [], set()
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 5 or not all(fields[i] for i in (0, 1, 2, 4)):
                errors.append("%s:%d: want 5 tab-separated fields (id, file, text, replacement, "
                              "command), got %d" % (path, no, len(fields)))
                continue
            mid, fname, search, repl, cmd = fields
            if mid in seen:
                errors.append("%s:%d: id %s used twice" % (path, no, mid))
            seen.add(mid)
            out.append((mid, fname, unescape(search), unescape(repl), cmd, no))
    return out, errors


def tracked_files():
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, check=True, capture_output=True).stdout.split(b"\0")
    return [n.decode() for n in names if n and os.path.isfile(os.path.join(ROOT, n.decode()))]


def make_tree():
    shutil.rmtree(TREE, ignore_errors=True)
    os.makedirs(TREE)
    for name in tracked_files():
        dst = os.path.join(TREE, name)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, name), dst)  # times kept: make judges by them
    release = os.path.join(ROOT, "build", "release")
    if os.path.isdir(release):  # objects already built here need not be built again
        shutil.copytree(release, os.path.join(TREE, "build", "release"), symlinks=True)


def run(cmd, log):
    """True when cmd passes (in the scratch tree), with its output in log."""
    global CHILD
    env = dict(os.environ, MAKEFLAGS=os.environ.get("MUTATION_MAKEFLAGS", "-j2"))
    env.pop("MAKELEVEL", None)
    with open(log, "a") as out:
        CHILD = p = subprocess.Popen(["bash", "-c", cmd], cwd=TREE, stdout=out,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                     start_new_session=True)
        try:
            return p.wait(timeout=TIMEOUT_S) == 0
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            out.write("\nmutation: timed out after %d s\n" % TIMEOUT_S)
            return False
        finally:
            CHILD = None


def object_of(fname):
    """What to build to see that a mutated file compiles: its object, or everything."""
    if fname.endswith(".c") and fname.startswith("webhook/"):
        return "build/release/" + fname[:-2] + ".o"
    return "all"


def snapshot(src):
    """{relative path: (size, mtime_ns)} of the files under src."""
    got = {}
    for d, _, files in os.walk(src):
        for f in files:
            full = os.path.join(d, f)
            st = os.lstat(full)
            got[os.path.relpath(full, src)] = (st.st_size, st.st_mtime_ns)
    return got


def restore_build(base_index):
    """Puts the copy's build/ back as BASE holds it: changed files copied back, new ones
    removed."""
    release = os.path.join(TREE, "build")
    now = snapshot(release)
    for rel, meta in now.items():
        if rel not in base_index:
            os.unlink(os.path.join(release, rel))
        elif meta != base_index[rel]:
            shutil.copy2(os.path.join(BASE, rel), os.path.join(release, rel))
    for rel in base_index.keys() - now.keys():
        dst = os.path.join(release, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(BASE, rel), dst)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", default=os.path.join(ROOT, "tests", "mutation", "mutants.txt"))
    ap.add_argument("--keep", action="store_true", help="keep build/mutation/tree afterwards")
    ap.add_argument("ids", nargs="*")
    args = ap.parse_args()
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    start = time.monotonic()
    mutants, errors = read_mutants(args.list)
    for e in errors:
        print(e)
    if errors:
        return 2
    if args.ids:
        unknown = set(args.ids) - {m[0] for m in mutants}
        if unknown:
            print("no such mutant: %s" % " ".join(sorted(unknown)))
            return 2
        mutants = [m for m in mutants if m[0] in args.ids]
    shutil.rmtree(LOGS, ignore_errors=True)
    os.makedirs(LOGS)
    killed = survived = broken = 0
    try:
        make_tree()
        commands = list(dict.fromkeys(m[4] for m in mutants))
        for i, cmd in enumerate(commands):
            log = os.path.join(LOGS, "baseline-%d.log" % i)
            if not run(cmd, log):
                print("baseline: fails without a mutant (see %s): %s" % (log, cmd))
                print("0 killed, 0 survived")
                return 1
        shutil.rmtree(BASE, ignore_errors=True)
        shutil.copytree(os.path.join(TREE, "build"), BASE, symlinks=True)
        base_index = snapshot(BASE)
        for mid, fname, search, repl, cmd, no in mutants:
            path = os.path.join(TREE, fname)
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                print("BROKEN   %-28s %s: %s" % (mid, fname, e.strerror))
                broken += 1
                continue
            n = text.count(search)
            if n != 1:
                print("BROKEN   %-28s %s: its text occurs %d times, not once (%s:%d)"
                      % (mid, fname, n, os.path.basename(args.list), no))
                broken += 1
                continue
            st = os.stat(path)
            t0 = time.monotonic()
            with open(path, "w", encoding="utf-8") as f:
                f.write(text.replace(search, repl, 1))
            log = os.path.join(LOGS, mid + ".log")
            try:
                # a mutant that does not compile proves nothing about the tests
                builds = run("make -s " + object_of(fname), log)
                caught = builds and not run(cmd, log)
            finally:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
                os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
                restore_build(base_index)
            took = time.monotonic() - t0
            if not builds:
                broken += 1
                print("BROKEN   %-28s %s: does not compile (see %s)" % (mid, fname, log))
            elif caught:
                killed += 1
                print("killed   %-28s %-22s %5.1f s" % (mid, fname, took))
            else:
                survived += 1
                print("SURVIVED %-28s %-22s %5.1f s  (%s)" % (mid, fname, took, cmd))
            sys.stdout.flush()
    finally:
        if not args.keep:
            shutil.rmtree(TREE, ignore_errors=True)
            shutil.rmtree(BASE, ignore_errors=True)
    if broken:
        print("%d broken (a text not found exactly once, or a mutant that does not compile)" % broken)
    print("make mutation: %d mutants in %.0f s" % (len(mutants), time.monotonic() - start))
    print("%d killed, %d survived" % (killed, survived))
    return 1 if survived or broken else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("make mutation: interrupted; the scratch tree is removed")
        sys.exit(130)
