"""The shared tier behind the local results cache (compare/remote.py): set by the user or CI
only; an entry is byte for byte a local one and is used only when it checks out; reads are
concurrent and bounded, so a remote that is down, slow or hung costs one deadline and one line,
never the diff. End to end: CI fills a `file://` directory and a real S3-protocol server (moto,
on localhost), and a second clone with an empty local cache compiles nothing, in `ptxdiff diff`
and under `git diff`."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from helpers import PY, commit, git, head, install, kernel_lines, make_repo, ptxdiff, run_json, run_main, scale_kernel
from ptxdiff import binaries
from ptxdiff.compare import remote
from ptxdiff.compare.cache import Cache
from ptxdiff.compare.engine import Engine
from ptxdiff.git.repo import Repo, Side

SM90 = ["--target", "sm_90"]
FORCE = {"PTXDIFF_FORCE": "1", "PTXDIFF_DRIVER_BUDGET": "600"}   # kernel lines, every compile waited for
PROGRESS = re.compile(r"^\[\d+/\d+\] ", re.M)                    # a compile pool's progress line
VALUE = [{"key": None, "label": "-", "error": "compile failed: ops/k.py:3:1: NameError: x"}]
KEY = "ab" + "0" * 62
SECRET = "the-protected-branch-secret"


def setting(url: str, write: bool = False, timeout: float = 3.0) -> remote.Setting:
    return remote.Setting(url, write, timeout, "test")


def entries(root: Path) -> dict[str, bytes]:
    """The results entries under a cache folder (local or a file:// remote), by relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.glob("*/*.json.gz"))}


def two_clones(tmp_path: Path) -> tuple[Path, Path, str, str]:
    """CI's clone and a developer's clone of one repo: a kernel (A), then a change of it (B)."""
    one = make_repo(tmp_path, {"ops/__init__.py": "", "ops/k.py": scale_kernel()}, name="one")
    a = head(one)
    b = commit(one, "triple", {"ops/k.py": scale_kernel("x * 3.0")})
    git(tmp_path, "clone", "-q", str(one), str(tmp_path / "two"))
    return one, tmp_path / "two", a, b


def fresh_cache(tmp_path: Path, monkeypatch, name: str) -> Path:
    path = tmp_path / name
    monkeypatch.setenv("PTXDIFF_CACHE_DIR", str(path))
    return path


def ci_fills(one: Path, a: str, b: str, url: str, tmp_path: Path, monkeypatch, capsys) -> Path:
    """`ptxdiff diff A B` in CI's clone with a read-write remote; returns CI's local cache."""
    cache = fresh_cache(tmp_path, monkeypatch, "ci-cache")
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE", url)
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE_WRITE", "1")
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE_SECRET", SECRET)    # a protected branch's job: the trusted tier
    rc, out, err = run_main(["-C", str(one), "diff", a, b, *SM90], capsys)
    assert rc == 0, err
    assert "rows: 1 compiled" in out and "remote cache" not in out
    monkeypatch.delenv("PTXDIFF_REMOTE_CACHE")
    monkeypatch.delenv("PTXDIFF_REMOTE_CACHE_WRITE")
    monkeypatch.delenv("PTXDIFF_REMOTE_CACHE_SECRET")
    return cache


def git_diff_reads_the_remote(two: Path, a: str, b: str) -> str:
    """`git diff A B` through the installed driver; the kernel line, compiled by no one here."""
    text = git(two, "diff", a, b, env=FORCE).stdout
    lines = kernel_lines(text)
    assert len(lines) == 1 and "scale_kernel" in lines[0] and "structural" in lines[0], text
    log = (two / ".git" / "ptxdiff" / "driver" / "filler.log").read_text()
    assert "done" in log and not PROGRESS.search(log), log   # the filler ran and compiled nothing
    return text


# -- who sets it -----------------------------------------------------------------------------

@pytest.mark.integration
def test_the_remote_is_the_user_s_setting_never_the_repository_s(tmp_path, monkeypatch):
    repo = make_repo(tmp_path, {"README": "r\n"})
    git(repo, "config", "ptxdiff.remoteCache", "file:///somewhere")       # the repository's own config
    git(repo, "config", "ptxdiff.remoteCacheWrite", "true")
    assert remote.setting() is None and Engine(Repo(repo)).measurer.remote is None
    git(repo, "config", "--global", "ptxdiff.remoteCache", "s3://team/ptxdiff")
    assert remote.setting() == remote.Setting("s3://team/ptxdiff", False, 3.0, "git config ptxdiff.remoteCache")
    git(repo, "config", "--global", "ptxdiff.remoteCacheWrite", "true")
    assert remote.setting().write
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE", "gs://ci/cache")              # the environment wins (CI)
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE_WRITE", "0")
    monkeypatch.setenv("PTXDIFF_REMOTE_TIMEOUT", "0.5")
    assert remote.setting() == remote.Setting("gs://ci/cache", False, 0.5, "PTXDIFF_REMOTE_CACHE")
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE", "https://cache.example/ptxdiff")
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE_WRITE", "1")
    monkeypatch.setenv("PTXDIFF_REMOTE_TIMEOUT", "soon")
    assert remote.setting() == remote.Setting("https://cache.example/ptxdiff", False, 3.0, "PTXDIFF_REMOTE_CACHE")
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE", "off")                        # off, whatever git config says
    assert remote.setting() is None


@pytest.mark.integration
def test_a_repository_may_only_suggest_a_remote(tmp_path, monkeypatch, capsys):
    repo = make_repo(tmp_path, {"ptxdiff.toml": 'remote_cache = "s3://team/ptxdiff"\n', "README": "r\n"})
    commit(repo, "readme", {"README": "r2\n"})
    report = run_json(["-C", str(repo), "diff", "HEAD~1", "HEAD"], capsys)
    assert report["messages"] == ["ptxdiff.toml suggests a shared compile cache; to read it: "
                                  "git config --global ptxdiff.remoteCache s3://team/ptxdiff"]
    git(repo, "config", "--global", "ptxdiff.remoteCache", (tmp_path / "mine").as_uri())
    assert run_json(["-C", str(repo), "diff", "HEAD~1", "HEAD"], capsys)["messages"] == []
    commit(repo, "bad", {"ptxdiff.toml": "remote_cache = 3\n"})
    rc, _, err = run_main(["-C", str(repo), "diff", "HEAD~1", "HEAD"], capsys)
    assert rc == 2 and "remote_cache" in err


def test_messages_show_no_credentials():
    assert remote.shown("https://user:secret@cache.example/p?X-Amz-Signature=abc") == "https://cache.example/p"
    assert remote.shown("s3://bucket/ptxdiff") == "s3://bucket/ptxdiff"


@pytest.mark.integration
def test_without_a_remote_nothing_imports_fsspec(tmp_path):
    """The diff driver's filler and every command pay nothing for a remote nobody set."""
    repo = make_repo(tmp_path, {"README": "r\n"})
    code = ("import sys; from ptxdiff.compare.engine import Engine; from ptxdiff.git.repo import Repo; "
            f"e = Engine(Repo({str(repo)!r})); print(e.measurer.remote, 'fsspec' in sys.modules)")
    out = subprocess.run([PY, "-I", "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["None", "False"]


# -- the key ---------------------------------------------------------------------------------

def test_the_key_names_the_toolchain_by_content_not_by_path(tmp_path, monkeypatch):
    ours = remote.toolchain_id(tmp_path / "c1")
    assert remote.toolchain_id(tmp_path / "c2") == ours == remote.toolchain_id(tmp_path / "c1")   # memo agrees
    assert (tmp_path / "c1" / remote.MEMO).is_file()
    assert ours["triton"] == binaries.triton_version() and ours["ptxdiff"]
    assert not [v for v in ours.values() if "/" in v]        # no path of this machine is in the key
    stamp = binaries.fingerprint()
    assert ours.keys() >= stamp.keys() and ours["ptxas"] != stamp["ptxas"]
    ptxas = Path(binaries.tool_path("ptxas"))
    moved = tmp_path / "elsewhere" / "ptxas"                 # the same ptxas at another path: the same key
    moved.parent.mkdir()
    shutil.copy2(ptxas, moved)
    monkeypatch.setenv("TRITON_PTXAS_PATH", str(moved))
    assert remote.toolchain_id(tmp_path / "c3")["ptxas"] == ours["ptxas"]
    with open(moved, "ab") as f:                             # another ptxas: another key
        f.write(b"\0")
    assert remote.toolchain_id(tmp_path / "c3")["ptxas"] != ours["ptxas"]


# -- what is trusted -------------------------------------------------------------------------

def test_an_entry_is_used_only_when_it_is_what_the_local_store_writes(tmp_path, monkeypatch):
    store = Cache(tmp_path / "local")
    r = remote.Remote(setting("file:///unused"), store)
    data = store.encode(KEY, VALUE)
    store.put(KEY, VALUE)
    assert store.path(KEY).read_bytes() == data              # a remote entry is byte for byte a local one
    assert r.decode(KEY, data) == VALUE
    other = "cd" + "1" * 62
    assert r.decode(KEY, data[:-8]) is None                                  # truncated gzip
    assert r.decode(KEY, data + b"junk") is None                             # trailing bytes
    assert r.decode(KEY, b"not gzip") is None
    assert r.decode(KEY, store.encode(other, VALUE)) is None                 # another key inside
    assert r.decode(KEY, gzip.compress(json.dumps({"format": 99, "key": KEY, "value": VALUE}).encode())) is None
    assert r.decode(KEY, store.encode(KEY, [{"label": 1}])) is None          # not a result list
    assert r.decode(KEY, gzip.compress(b"{" * 100)) is None
    monkeypatch.setattr(remote, "MAX_PLAIN", 64)                             # bigger than any entry: a bomb
    assert r.decode(KEY, data) is None


def test_fetch_copies_good_entries_and_misses_bad_ones(tmp_path):
    shared = tmp_path / "shared"
    store = Cache(tmp_path / "local")
    good, truncated, wrong, absent = (f"{i:02x}" + "e" * 62 for i in range(4))
    for key, data in ((good, store.encode(good, VALUE)), (truncated, store.encode(truncated, VALUE)[:-4]),
                      (wrong, store.encode(good, VALUE))):
        (shared / key[:2]).mkdir(parents=True)
        (shared / key[:2] / f"{key}.json.gz").write_bytes(data)
    r = remote.Remote(setting(shared.as_uri()), store)
    assert r.fetch([good, truncated, wrong, absent, good]) == {good: VALUE}
    assert entries(store.root) == {f"{good[:2]}/{good}.json.gz": store.encode(good, VALUE)}
    assert r.down is None and r.lines() == []                # a bad entry is a miss, not a failure


def test_a_read_only_remote_stores_nothing_and_a_writable_one_stores_what_was_staged(tmp_path):
    shared = tmp_path / "shared"
    reader = remote.Remote(setting(shared.as_uri()), Cache(tmp_path / "a"))
    reader.stage(KEY, VALUE)
    reader.push()
    assert not shared.exists()
    writer = remote.Remote(remote.Setting(shared.as_uri(), True, 3.0, "test", SECRET), Cache(tmp_path / "b"))
    writer.stage(KEY, VALUE)
    writer.push()
    data = Cache(tmp_path / "b").encode(KEY, VALUE)
    assert entries(shared) == {f"{KEY[:2]}/{KEY}.json.gz": data}
    assert (shared / KEY[:2] / f"{KEY}.json.gz.sig").read_bytes() == remote.signature(SECRET, KEY, data).encode()
    assert writer.lines() == []
    umask = os.umask(0o022)
    os.umask(umask)
    mode = (shared / KEY[:2] / f"{KEY}.json.gz").stat().st_mode & 0o777
    assert mode == 0o666 & ~umask                            # the team reads it (the local store keeps 0600)


def test_a_write_that_fails_is_one_line_and_stops_writes(tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache's folder would be\n")
    r = remote.Remote(setting(blocked.as_uri(), write=True), Cache(tmp_path / "local"))
    r.stage(KEY, VALUE)
    r.push()
    (line,) = r.lines()
    assert line.startswith(f"remote cache {blocked.as_uri()}: stored 0 of 1 results (") and "Error" in line
    r.stage(KEY, VALUE)
    r.push()
    assert r.lines() == []


def test_a_store_that_refuses_missing_entries_misses_and_says_so_only_when_it_refuses_all(tmp_path):
    """S3 answers 403, not 404, for a missing key to a reader who may not list the bucket."""
    import fsspec
    from fsspec.implementations.memory import MemoryFileSystem

    class Refusing(MemoryFileSystem):
        protocol = "refusing"
        store: dict = {}   # its own, not the memory filesystem's
        pseudo_dirs = [""]

        @classmethod
        def _strip_protocol(cls, path):
            return MemoryFileSystem._strip_protocol(path.replace("refusing://", "memory://", 1))

        def cat_file(self, path, start=None, end=None, **kwargs):
            if not self.exists(path):
                raise PermissionError("Access Denied")
            return super().cat_file(path, start, end, **kwargs)

    fsspec.register_implementation("refusing", Refusing, clobber=True)
    store = Cache(tmp_path / "local")
    Refusing().pipe_file(f"/team/{KEY[:2]}/{KEY}.json.gz", store.encode(KEY, VALUE))
    absent = "cd" + "0" * 62
    r = remote.Remote(setting("refusing://team"), store)
    assert r.fetch([KEY, absent]) == {KEY: VALUE} and r.lines() == []
    assert r.fetch([absent]) == {}
    assert r.lines() == ["remote cache refusing://team: access denied to all 1 entries asked "
                         "(a reader needs to read and to list); compiled here instead"]


@pytest.fixture
def hung():
    """An address on this machine that accepts connections and never answers."""
    with socket.create_server(("127.0.0.1", 0), backlog=64) as listener:
        yield f"127.0.0.1:{listener.getsockname()[1]}"


def test_a_remote_that_never_answers_costs_one_deadline_and_one_line(tmp_path, hung):
    r = remote.Remote(setting(f"http://{hung}/ptxdiff", timeout=0.5), Cache(tmp_path / "local"))
    assert r.fetch([KEY, "cd" + "0" * 62]) == {}
    assert r.lines() == [f"remote cache http://{hung}/ptxdiff: no answer within 0.5 s (PTXDIFF_REMOTE_TIMEOUT); "
                         "compiled here instead"]
    assert r.fetch([KEY]) == {} and r.lines() == []          # down for the rest of the run: not asked again


def test_a_missing_backend_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    from fsspec.registry import known_implementations

    monkeypatch.setitem(known_implementations, "gs",
                        {"class": "no_such_module.GCSFileSystem", "err": "Please install gcsfs"})
    r = remote.Remote(setting("gs://team/ptxdiff"), Cache(tmp_path / "local"))
    assert r.fetch([KEY]) == {}
    assert r.lines() == ["remote cache gs://team/ptxdiff: gs:// needs a package: pip install 'ptxdiff[gcs]'; "
                         "compiled here instead"]


def test_bounded_returns_what_finished_by_the_first_failure_or_the_deadline():
    never = threading.Event()
    got, failure, finished = remote.bounded([1, 2, 3], lambda i: i * 10, 5.0)
    assert (got, failure, finished) == ({1: 10, 2: 20, 3: 30}, None, True)

    def fails(i: int) -> int:
        if i == 2:
            raise PermissionError("denied")
        return i

    got, failure, finished = remote.bounded([2], fails, 5.0)
    assert got == {} and isinstance(failure, PermissionError)
    got, failure, finished = remote.bounded([1, 2], lambda i: never.wait() if i == 2 else i, 0.2)
    assert got == {1: 1} and failure is None and not finished
    never.set()


# -- end to end ------------------------------------------------------------------------------

@pytest.mark.integration
def test_a_file_remote_filled_by_ci_serves_a_second_clone_and_a_corrupt_entry_is_a_miss(tmp_path, monkeypatch, capsys):
    one, two, a, b = two_clones(tmp_path)
    shared = tmp_path / "shared"
    ci = ci_fills(one, a, b, shared.as_uri(), tmp_path, monkeypatch, capsys)
    assert len(entries(shared)) == 2 and entries(shared) == entries(ci)   # old and new side, byte for byte

    # a developer: read-only, from the global git config, an empty local cache
    git(two, "config", "--global", "ptxdiff.remoteCache", shared.as_uri())
    dev = fresh_cache(tmp_path, monkeypatch, "dev-cache")
    engine = Engine(Repo(two), targets=[90])
    report = engine.compare(Side("A", a), Side("B", b))
    assert engine.measurer.compiles == 0 and report.compiled == 0
    assert [(r.verdict, r.cache) for r in report.rows] == [("structural", "remote")]
    assert entries(dev) == entries(shared)

    fresh_cache(tmp_path, monkeypatch, "dev-cache-2")
    rc, out, _ = run_main(["-C", str(two), "diff", a, b, *SM90], capsys)
    assert rc == 0 and "rows: 1 from the remote cache" in out
    fresh_cache(tmp_path, monkeypatch, "dev-cache-3")
    as_json = run_json(["-C", str(two), "diff", a, b, *SM90], capsys)
    assert [(r["verdict"], r["cache"]) for r in as_json["kernels"]] == [("structural", "remote")]
    assert as_json["messages"] == []
    install(two, capsys)
    fresh_cache(tmp_path, monkeypatch, "dev-cache-4")
    git_diff_reads_the_remote(two, a, b)

    # a corrupt entry is a miss: that side is compiled again (one compile), and a writer replaces it
    victim, other = sorted(entries(shared))
    good = entries(shared)[victim]
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE_WRITE", "1")
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE_SECRET", SECRET)
    for n, bad in enumerate((good[:len(good) // 2], entries(shared)[other])):   # truncated; another key inside
        (shared / victim).write_bytes(bad)
        fresh_cache(tmp_path, monkeypatch, f"writer-cache-{n}")
        engine = Engine(Repo(two), targets=[90])
        report = engine.compare(Side("A", a), Side("B", b))
        assert engine.measurer.compiles == 1 and [(r.verdict, r.cache) for r in report.rows] == [("structural", "compiled")]
        assert report.messages == []
        assert (shared / victim).read_bytes() == good


@pytest.fixture
def moto_s3(monkeypatch):
    """A real S3-protocol server on this machine (moto's), with a bucket; stopped at the end."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    for var, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                       ("AWS_DEFAULT_REGION", "us-east-1"), ("AWS_EC2_METADATA_DISABLED", "true"),
                       ("AWS_ENDPOINT_URL", f"http://{host}:{port}")):
        monkeypatch.setenv(var, value)
    import fsspec

    fsspec.filesystem("s3", skip_instance_cache=True).mkdir("ptxdiff-ci")
    running = {"server": server}
    yield running
    if running["server"] is not None:
        server.stop()


@pytest.mark.integration
def test_an_s3_remote_filled_by_ci_serves_a_second_clone_and_a_stopped_server_costs_nothing(
        tmp_path, monkeypatch, capsys, moto_s3):
    one, two, a, b = two_clones(tmp_path)
    url = "s3://ptxdiff-ci/cache"
    ci = ci_fills(one, a, b, url, tmp_path, monkeypatch, capsys)
    import fsspec

    s3 = fsspec.filesystem("s3", skip_instance_cache=True)
    stored = {p.split("/cache/", 1)[1]: s3.cat_file(p) for p in s3.find("ptxdiff-ci/cache") if p.endswith(".json.gz")}
    assert len(stored) == 2 and stored == entries(ci)        # byte for byte what CI's local cache holds

    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE", url)
    fresh_cache(tmp_path, monkeypatch, "dev-cache")
    monkeypatch.setenv("PTXDIFF_PROGRESS", "1")              # a compile would say so on stderr
    rc, out, err = run_main(["-C", str(two), "diff", a, b, *SM90, "--format", "json"], capsys)
    assert rc == 0 and not PROGRESS.search(err), err
    report = json.loads(out)
    assert [(r["verdict"], r["cache"]) for r in report["kernels"]] == [("structural", "remote")]
    install(two, capsys)
    fresh_cache(tmp_path, monkeypatch, "dev-cache-2")
    git_diff_reads_the_remote(two, a, b)

    moto_s3["server"].stop()                                 # the server goes away
    moto_s3["server"] = None
    fresh_cache(tmp_path, monkeypatch, "dev-cache-3")
    proc = ptxdiff(["-C", str(two), "diff", a, b, *SM90, "--format", "json"], tmp_path,
                   env={"PTXDIFF_REMOTE_TIMEOUT": "1"})
    assert proc.returncode == 0, proc.stderr                 # as with the server up
    report = json.loads(proc.stdout)
    assert [(r["verdict"], r["cache"]) for r in report["kernels"]] == [("structural", "compiled")]
    (line,) = report["messages"]                             # one line: botocore retries, or the deadline
    assert line.startswith(f"remote cache {url}: ") and line.endswith("; compiled here instead"), line


@pytest.mark.integration
def test_a_hung_remote_does_not_hang_git_diff(tmp_path, monkeypatch, capsys, hung):
    """The diff driver's background filler reads the remote: a remote that accepts and never
    answers costs it the timeout, and git diff shows the kernel line and the one line."""
    one, _, a, b = two_clones(tmp_path)
    install(one, capsys)
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE", f"http://{hung}/ptxdiff")
    monkeypatch.setenv("PTXDIFF_REMOTE_TIMEOUT", "1")
    text = git(one, "diff", a, b, env=FORCE).stdout
    (line,) = kernel_lines(text)
    assert "scale_kernel" in line and "structural" in line, text
    assert text.count("remote cache") == 1
    assert f"ptxdiff: remote cache http://{hung}/ptxdiff: no answer within 1 s" in text


# -- who may write what a trusted run reads (issue 41) ----------------------------------------

def signed_setting(url: str, write: bool = False, secret: str | None = SECRET, namespace: str | None = None):
    return remote.Setting(url, write, 3.0, "test", secret, namespace)


def test_an_untrusted_writer_s_entry_never_reaches_a_trusted_read(tmp_path):
    """A pull request's job (no secret) stores a forged entry under the right key: it goes to its
    own namespace, which no run reads; a trusted writer's entry (the control) is read."""
    shared = tmp_path / "shared"
    forger = remote.Remote(signed_setting(shared.as_uri(), write=True, secret=None, namespace="pr-9/../x"),
                           Cache(tmp_path / "pr"))
    forger.stage(KEY, VALUE)
    forger.push()
    assert [p.relative_to(shared).as_posix() for p in shared.rglob("*.json.gz")] == \
        [f"untrusted/pr-9-..-x/{KEY[:2]}/{KEY}.json.gz"]                  # its namespace, never a path out of it
    for secret in (SECRET, None):                                          # a trusted run, and any other
        assert remote.Remote(signed_setting(shared.as_uri(), secret=secret), Cache(tmp_path / "r")).fetch([KEY]) == {}
    trusted = remote.Remote(signed_setting(shared.as_uri(), write=True), Cache(tmp_path / "main"))
    trusted.stage(KEY, VALUE)
    trusted.push()
    assert remote.Remote(signed_setting(shared.as_uri()), Cache(tmp_path / "r2")).fetch([KEY]) == {KEY: VALUE}


def test_a_trusted_read_needs_the_trusted_writer_s_signature(tmp_path):
    """Whoever holds the bucket's credentials can write the trusted tier by hand, with the right
    key and hash: a trusted run reads nothing without a signature made with the secret."""
    shared, store = tmp_path / "shared", Cache(tmp_path / "local")
    data = store.encode(KEY, VALUE)
    (shared / KEY[:2]).mkdir(parents=True)
    (shared / KEY[:2] / f"{KEY}.json.gz").write_bytes(data)
    sig = shared / KEY[:2] / f"{KEY}.json.gz.sig"
    for forged in (None, remote.signature("a guess", KEY, data), remote.signature(SECRET, "cd" + "0" * 62, data)):
        if forged is not None:
            sig.write_text(forged)
        r = remote.Remote(signed_setting(shared.as_uri()), Cache(tmp_path / f"t{len(str(forged))}"))
        assert r.fetch([KEY]) == {}
        assert r.lines() == [f"remote cache {shared.as_uri()}: 1 of 1 entries not signed by a trusted writer "
                             "(PTXDIFF_REMOTE_CACHE_SECRET): not read, compiled here instead"]
    sig.write_text(remote.signature(SECRET, KEY, data))                     # the control: signed with the secret
    r = remote.Remote(signed_setting(shared.as_uri()), Cache(tmp_path / "ok"))
    assert r.fetch([KEY]) == {KEY: VALUE} and r.lines() == []
    assert "SECRET" not in repr(signed_setting("file:///x")) and SECRET not in repr(signed_setting("file:///x"))


def forged_entries(one: Path, a: str, b: str, tmp_path: Path, monkeypatch, capsys) -> tuple[str, list]:
    """The attack: an honest cold run's results for A (old) and B (new), and B's key holding A's
    results (PTX, metrics, cubin) with B's source hashes: the right key and the right hash."""
    cache = fresh_cache(tmp_path, monkeypatch, "attacker")
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE", (tmp_path / "nothing").as_uri())   # the remote's keys
    assert run_main(["-C", str(one), "show", a, *SM90], capsys)[0] == 0
    old_only = set(entries(cache))
    assert run_main(["-C", str(one), "diff", a, b, *SM90], capsys)[0] == 0
    (old_path,), (new_path,) = old_only, set(entries(cache)) - old_only
    store = Cache(cache)
    key_a, key_b = (Path(p).name.split(".")[0] for p in (old_path, new_path))
    old_value, new_value = store.get(key_a), store.get(key_b)
    assert isinstance(old_value, list) and isinstance(new_value, list) and len(old_value) == len(new_value)
    monkeypatch.delenv("PTXDIFF_REMOTE_CACHE")
    return key_b, [{**o, "source": n["source"]} for o, n in zip(old_value, new_value)]


@pytest.mark.integration
def test_a_forged_result_a_pull_request_job_stores_never_reaches_a_review_of_main(tmp_path, monkeypatch, capsys):
    one, two, a, b = two_clones(tmp_path)
    shared = tmp_path / "shared"
    key_b, forged = forged_entries(one, a, b, tmp_path, monkeypatch, capsys)
    # the forgery is a good one: in the trusted tier, a run that cannot check signatures reads it
    loose = tmp_path / "loose"
    writer = remote.Remote(signed_setting(loose.as_uri(), write=True, secret=None), Cache(tmp_path / "w"))
    (loose / key_b[:2]).mkdir(parents=True)
    (loose / key_b[:2] / f"{key_b}.json.gz").write_bytes(writer.store.encode(key_b, forged))
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE", loose.as_uri())
    fresh_cache(tmp_path, monkeypatch, "unchecked")
    report = run_json(["-C", str(two), "diff", a, b, *SM90], capsys)
    assert [r["verdict"] for r in report["kernels"]] == ["identical"]

    # the attack: the pull request's job stores it as an untrusted writer, and by hand in the trusted tier
    pr = remote.Remote(signed_setting(shared.as_uri(), write=True, secret=None, namespace="pr-9"), Cache(tmp_path / "p"))
    pr.stage(key_b, forged)
    pr.push()
    (shared / key_b[:2]).mkdir(parents=True)
    (shared / key_b[:2] / f"{key_b}.json.gz").write_bytes(pr.store.encode(key_b, forged))
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE", shared.as_uri())
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE_SECRET", SECRET)               # a review of main: a trusted run
    fresh_cache(tmp_path, monkeypatch, "review")
    report = run_json(["-C", str(two), "diff", a, b, *SM90], capsys)
    assert [(r["verdict"], r["cache"]) for r in report["kernels"]] == [("structural", "compiled")]
    assert any("not signed by a trusted writer" in m for m in report["messages"]), report["messages"]
    fresh_cache(tmp_path, monkeypatch, "review-ci")
    for var in ("GITHUB_EVENT_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "CI_MERGE_REQUEST_DIFF_BASE_SHA"):
        monkeypatch.delenv(var, raising=False)
    rc, _, err = run_main(["-C", str(two), "ci", "-q", *SM90, "--base", a, "--head", b, "--comment-file",
                           str(tmp_path / "c.md"), "--json-file", str(tmp_path / "r.json")], capsys)
    assert rc == 1, err                                                      # structural blocks by default
    assert {r["verdict"] for r in json.loads((tmp_path / "r.json").read_text())["kernels"]} == {"structural"}

    # the control: a trusted writer's entries (CI on the protected branch) are read, nothing compiled
    monkeypatch.delenv("PTXDIFF_REMOTE_CACHE_SECRET")
    honest = tmp_path / "honest"
    ci_fills(one, a, b, honest.as_uri(), tmp_path, monkeypatch, capsys)
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE", honest.as_uri())
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE_SECRET", SECRET)
    fresh_cache(tmp_path, monkeypatch, "review-2")
    report = run_json(["-C", str(two), "diff", a, b, *SM90], capsys)
    assert [(r["verdict"], r["cache"]) for r in report["kernels"]] == [("structural", "remote")]
    assert report["messages"] == []


def test_doctor_says_whose_entries_a_job_writes_and_reads(tmp_path, monkeypatch):
    assert signed_setting("s3://b/p", write=True).mode == "read-write, trusted: reads signed entries only"
    assert signed_setting("s3://b/p", write=True, secret=None, namespace="pr-9").mode == \
        "read-write into untrusted/pr-9/, which no run reads"
    assert signed_setting("s3://b/p", secret=None).mode == "read-only"
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE", "s3://b/p")
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE_SECRET", SECRET)
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE_NAMESPACE", "pr-9")
    found = remote.setting()
    assert found is not None and found.trusted and found.namespace == "pr-9" and found.folder == ""
    from ptxdiff import user_settings
    assert SECRET not in repr(user_settings.load()) and SECRET not in repr(found)
