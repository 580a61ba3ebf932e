"""`ptxdiff doctor`: is this machine and repo set up, and if not, what exactly to do."""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ptxdiff import __version__, binaries, repo_config, user_settings
from ptxdiff.cli.options import unpacked
from ptxdiff.compare.cache import cache_dir
from ptxdiff.errors import EXIT_BLOCKED, EXIT_OK, GitError, PtxdiffError
from ptxdiff.git.repo import Repo
from ptxdiff.git.values import Side
from ptxdiff.report.console import say


def checks(repo: Repo | None, ci: bool = False) -> list[tuple[bool, str, str]]:
    """(ok, what, how to fix) for every part of the set-up: the machine's, then the repository's
    (None: not in one, said so). In CI (`ci`) the diff driver and the hook are not needed; the
    history `ptxdiff ci` reads is."""
    out = machine_checks()
    if repo is None:
        out.append((True, "not in a git repository: its checks (diff driver, pre-push hook, config, cache) were "
                    "skipped; run doctor inside one, or with -C DIR", ""))
        return out
    out.append(toolchains_check(repo))
    out += ci_checks(repo) if ci else install_checks(repo)
    root = cache_dir(repo.git_dir)
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root):
            pass
        out.append((True, f"cache writable: {root}", ""))
    except OSError as e:
        out.append((False, f"cache not writable: {root} ({e.strerror})", "set PTXDIFF_CACHE_DIR to a writable folder"))
    out.append(remote_check(root))
    try:
        snap = repo.snapshot(Side("work tree", None))
        cfg = repo_config.load(snap.read, snap.__contains__)
        out.append((True, f"config ({cfg.source}): targets {', '.join(f'sm_{t}' for t in cfg.targets)}", ""))
    except PtxdiffError as e:
        out.append((False, f"config: {e}", "fix the key it names"))
    return out


def machine_checks() -> list[tuple[bool, str, str]]:
    """What compiles need on this machine, wherever doctor runs: triton, the tools, the sandbox."""
    out: list[tuple[bool, str, str]] = []
    version = binaries.triton_version()
    supported = version is not None and (3, 6) <= tuple(int(x) for x in version.split(".")[:2]) <= (3, 9)
    out.append((True, f"ptxdiff {__version__} (python {platform.python_version()}, {sys.executable})", ""))
    out.append((supported, f"triton {version or 'missing'} (3.6 to 3.9 supported)", binaries.install_triton()))
    for tool in ("ptxas", "cuobjdump"):
        try:
            path = binaries.tool_path(tool)
            out.append((os.access(path, os.X_OK), f"{tool}: {path}", f"make {path} executable or set PTXDIFF_{tool.upper()}"))
        except PtxdiffError as e:
            out.append((False, f"{tool}: missing", str(e)))
    out.append((importlib.util.find_spec("torch") is not None, "torch importable (kernel modules and --outputs need it)",
                "pip install torch"))
    out.append(sandbox_check())
    return out


def toolchains_check(repo: Repo) -> tuple[bool, str, str]:
    """The tritons installed besides the one beside ptxdiff, and which one this repository's work
    tree compiles with (compile/toolchains.py): a pin that names a missing one is installed on
    the first compile, which needs the package index."""
    from ptxdiff.compile import toolchains, triton_pin
    here = [t.version for t in toolchains.listed()]
    listed = f"toolchains in {toolchains.root()}: {', '.join(here) or 'none'}"
    try:
        snap = repo.snapshot(Side("work tree", None))
        asked = toolchains.asked(None, repo.config_get(toolchains.GIT_KEY))
        chosen = toolchains.choose(asked.new, asked.said_by, triton_pin.read_pin(snap.read, snap.paths),
                                   toolchains.TODAY)   # the work tree is today's
    except PtxdiffError as e:
        return False, f"{listed}; this repository: {e}", "ptxdiff diff --triton VERSION, or PTXDIFF_TRITON"
    ready = chosen.version is None or chosen.version in here
    return ready, f"{listed}; this repository compiles with triton {chosen.name} ({chosen.why})", \
        f"ptxdiff toolchain add {chosen.version} (or it is installed on the first compile)"


def install_checks(repo: Repo) -> list[tuple[bool, str, str]]:
    """What `ptxdiff install` sets up for a person: the diff driver, its attribute, the hook."""
    out: list[tuple[bool, str, str]] = []
    command = repo.config_get("diff.ptxdiff.command")
    if command is None:
        out.append((False, "diff driver: not configured", "ptxdiff install"))
    else:
        from ptxdiff.gitdiff.install import driver_python
        python = driver_python(command) or command
        runs = subprocess.run([python, "-c", "import ptxdiff"], capture_output=True).returncode == 0 \
            if os.path.exists(python) else False
        out.append((runs, f"diff driver: {python} -m ptxdiff", "ptxdiff install (again, from the right interpreter)"))
    attr = repo.attribute("x.py", "diff")
    out.append((attr == "ptxdiff", "*.py files use the ptxdiff diff driver" if attr == "ptxdiff" else
                "*.py files have no diff attribute (git diff shows no kernel lines)" if attr is None else
                f"*.py files use diff={attr}, not ptxdiff (git diff shows no kernel lines)", "ptxdiff install"))
    out.append(pre_push_check(repo))
    return out


def ci_checks(repo: Repo) -> list[tuple[bool, str, str]]:
    """What `ptxdiff ci` needs of a CI checkout: the history down to the pull request's base (a
    shallow clone may stop before it), and objects it can read or fetch."""
    out: list[tuple[bool, str, str]] = [(True, "CI: the diff driver and the pre-push hook are not needed here", "")]
    if repo.shallow:
        out.append((False, f"history: a shallow clone ({len(repo.shallow)} boundary commit(s)): `ptxdiff ci` needs "
                    "the base commit of the pull request", "fetch the history: actions/checkout with fetch-depth: 0, "
                    "GIT_DEPTH: 0 in GitLab, or git fetch --unshallow"))
    else:
        out.append((True, "history: a full clone (the base commit of any pull request is here)", ""))
    if repo.promisors:
        out.append((True, f"a partial clone: missing Python files are fetched from {repo.promisors[0]} as needed", ""))
    return out


def sandbox_check() -> tuple[bool, str, str]:
    """What holds around the compile workers, tried for real: a sealed worker must fail to write
    outside its folder, read a file outside, read a secret of the environment, connect over TCP
    and run /bin/sh."""
    import shutil
    import socket

    from ptxdiff.sandbox import limits, probe

    most, where = limits.user_max()
    bound = f"{most:g} s per compile at most ({where}; PTXDIFF_MAX_TIMEOUT or git config ptxdiff.maxTimeout)"
    off = user_settings.load().unsandboxed
    if off:
        return True, f"sandbox: off by your setting {off}: compiles run with your rights; {bound}", ""
    from ptxdiff.compile.pool import sandboxed_call
    from ptxdiff.sandbox import selftest

    outside = tempfile.mkdtemp(prefix="ptxdiff-doctor-")
    secret = os.path.join(outside, "secret")
    with open(secret, "w") as f:
        f.write("not for the sandbox\n")
    listener = socket.create_server(("127.0.0.1", 0))
    os.environ["PTXDIFF_DOCTOR_TOKEN"] = "not-for-the-sandbox"
    tries = [("write", os.path.join(outside, "written")), ("read", secret), ("env", "PTXDIFF_DOCTOR_TOKEN"),
             ("tcp", f"127.0.0.1:{listener.getsockname()[1]}"), ("exec", "/bin/sh")]
    try:
        active, results = sandboxed_call(selftest.attempts, (tries,))
    except PtxdiffError as e:
        return False, f"sandbox: {e}", probe.OPT_OUT
    finally:
        listener.close()
        del os.environ["PTXDIFF_DOCTOR_TOKEN"]
        shutil.rmtree(outside, ignore_errors=True)
    got = results if isinstance(results, list) else []
    through = [what for (what, _), answer in zip(tries, got, strict=False) if answer == "ok"]
    if through or len(got) != len(tries):
        return False, f"sandbox: {active}; NOT refused: {', '.join(through) or results}", "report this as a bug"
    return True, (f"sandbox: {active}; {bound}; a write outside, a read outside, an environment secret, "
                  "a TCP connect and /bin/sh were refused"), ""


def remote_check(root: Path) -> tuple[bool, str, str]:
    """The shared results cache the user or CI set (docs/ci.md, "Sharing the cache"), and whether it
    answers within its timeout; reads only."""
    from ptxdiff.compare import remote
    from ptxdiff.compare.cache import Cache

    found = remote.setting()
    if found is None:
        return True, (f"remote cache: none (to share compiles: git config --global {user_settings.GIT_REMOTE} URL, "
                      f"or {user_settings.REMOTE})"), ""
    ok, how = remote.Remote(found, Cache(root)).probe()
    off = f"unset {user_settings.REMOTE}" if found.origin == user_settings.REMOTE else \
        f"git config --global --unset {user_settings.GIT_REMOTE}"
    return ok, f"remote cache: {remote.shown(found.url)} ({found.mode}, from {found.origin}): {how}", \
        f"check the URL and its credentials (s3:// reads AWS_* or ~/.aws, gs:// Google's default credentials), or: {off}"


def pre_push_check(repo: Repo) -> tuple[bool, str, str]:
    """Would git run a working ptxdiff gate on `git push`? The hook must be where git looks (the
    common git dir in a linked work tree, or core.hooksPath), executable, and its interpreter
    must import ptxdiff the way the hook starts it."""
    from ptxdiff.gitdiff.install import MARKER, hook_python, hooks_dir, runs_isolated

    hooks = repo.config_get("core.hooksPath")
    if hooks and hooks.strip() == "/dev/null":
        return False, "pre-push hook: core.hooksPath=/dev/null disables hooks", "git config --unset core.hooksPath"
    command = repo.config_get("hook.ptxdiff.command")
    if command:
        python = shlex.split(command)[0] if command.strip() else ""
        ok = runs_isolated(python)
        return ok, f"pre-push hook: config-defined hook.ptxdiff ({python}{'' if ok else ' cannot import ptxdiff'})", \
            "ptxdiff install (again, from the right interpreter)"
    hook = hooks_dir(repo) / "pre-push"
    text = hook.read_text(errors="replace") if hook.is_file() else None
    if text is None or MARKER not in text:
        return False, f"pre-push hook: {hook} {'missing' if text is None else 'is not written by ptxdiff'}", "ptxdiff install"
    if not os.access(hook, os.X_OK):
        return False, f"pre-push hook: {hook} is not executable (git skips it)", f"chmod +x {shlex.quote(str(hook))}"
    interpreter = hook_python(text)
    if interpreter is None or not runs_isolated(interpreter):
        return False, f"pre-push hook: {hook} runs {interpreter or 'no interpreter'}, which cannot import ptxdiff " \
            "(every push is blocked)", "ptxdiff install (again, from the right interpreter)"
    return True, f"pre-push hook: {hook} (ptxdiff, {interpreter})", ""


@dataclass(frozen=True)
class Options:
    """`ptxdiff doctor`'s command line."""

    ci: bool = False             # --ci: what `ptxdiff ci` needs (the default where CI=true)
    repo: str = "."

    @classmethod
    def of(cls, args: argparse.Namespace) -> Options:
        return unpacked(cls, args)


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    opts = Options.of(args)
    try:
        repo: Repo | None = Repo(opts.repo)
    except GitError:
        repo = None   # the machine is still worth checking
    ci = opts.ci or os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")   # the CI provider's word
    return diagnose(repo, sys.stdout, ci)


def diagnose(repo: Repo | None, out: TextIO, ci: bool = False) -> int:
    """Every check first, then the report: the exit code does not depend on anyone reading it."""
    results = checks(repo, ci)
    bad = sum(not ok for ok, _, _ in results)
    lines = [f"{'ok ' if ok else 'FIX'} {what}" + ("" if ok or not fix else f"\n    -> {fix}") for ok, what, fix in results]
    lines.append("all good" if not bad else f"{bad} thing(s) to fix")
    say("".join(f"{line}\n" for line in lines), out)
    return EXIT_OK if not bad else EXIT_BLOCKED
