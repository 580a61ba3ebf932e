"""`ptxdiff install` / `uninstall`: the diff driver, the attributes line, the pre-push hook.

Install records what it did in a manifest (`<common git dir>/ptxdiff/install.json`, or
`~/.config/ptxdiff/install.json` with --global); uninstall undoes exactly that and nothing
else, so `git config --list --show-origin`, the attributes file and the hooks folder are as
before. A foreign pre-push hook is kept and run first. On git >= 2.54 the hook is a
config-defined hook (`hook.ptxdiff.*`), so no hook file is written at all.

The hook is the file hooks/pre-push of this package with the interpreter filled in (`hook_text`):
a reader sees the git touchpoint without reading Python. In a linked work tree (`git worktree
add`) everything goes where git reads it for every work tree: the common git dir's config,
hooks/ and info/attributes, and the install record beside them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ptxdiff import PACKAGE_DIR
from ptxdiff.errors import GitError, ToolError, UsageError
from ptxdiff.fastio import read_inside
from ptxdiff.git.repo import Repo, config_file_set, global_config_get
from ptxdiff.gitdiff.driver import PYTHON_FUNCNAME

MARKER = "# ptxdiff-managed pre-push hook"
LEGACY = "pre-push.ptxdiff-legacy"
# Python files, and the files a kernel's launch values come from besides its source (the
# recording, the config): a launch change shows its kernel lines under the file that changed
# (globs by suffix: git 2.39 prints blanks forever for `log -p --graph --no-graph`, as the driver
# re-runs it, when *.py stands beside a literal path such as /pyproject.toml)
ATTR_LINES = ("*.py diff=ptxdiff", "*.toml diff=ptxdiff", "*.jsonl diff=ptxdiff")


def _lines_added(record: dict[str, Any]) -> list[str]:
    """The attribute lines an install added (an install before launch files added one)."""
    if record.get("attributes_line_added"):
        return [ATTR_LINES[0]]
    return list(record.get("attributes_lines_added", ()))


def git_version() -> tuple[int, ...]:
    try:
        out = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
    except OSError:
        return (0,)
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
    return tuple(int(x) for x in m.groups() if x) if m else (0,)


DRIVER_MARKER = "# ptxdiff diff driver:"


def driver_shim(python: str) -> str:
    """hooks/diff-driver with the interpreter and ptxdiff's import root filled in."""
    root = os.path.dirname(PACKAGE_DIR)
    return hook_source("diff-driver").read_text(encoding="utf-8").replace("@PYTHON@", shlex.quote(python), 1).replace(
        "@ROOT@", shlex.quote(root), 1)


def driver_command(shim: str) -> str:
    """The diff.ptxdiff.command value: the installed shim (git runs it through sh if quoted)."""
    return shlex.quote(shim)


def driver_python(command: str) -> str | None:
    """The interpreter a diff.ptxdiff.command runs: the one filled into the shim it names (or,
    for a command written by an older ptxdiff, the one before `-m ptxdiff`)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) == 1 and os.path.isfile(words[0]):
        for line in Path(words[0]).read_text(errors="replace").splitlines():
            if line.startswith("PTXDIFF_PYTHON="):
                filled = shlex.split(line[len("PTXDIFF_PYTHON="):])
                return filled[0] if filled else None
        return None
    if "-m ptxdiff" not in command:
        return None
    before = shlex.split(command.split("-m ptxdiff")[0].split("{", 1)[-1])
    return before[-1] if before else None


def hook_source(name: str) -> Path:
    """hooks/NAME of this ptxdiff: package data (`ptxdiff/hooks/`) in an installed wheel, the
    checkout's top-level hooks/ in an editable install (`pip install -e .`)."""
    here = Path(PACKAGE_DIR)
    for folder in (here / "hooks", here.parent / "hooks"):
        path = folder / name
        if path.is_file() and "ptxdiff" in path.read_text(encoding="utf-8", errors="replace"):
            return path
    raise ToolError(f"hooks/{name} is missing from this ptxdiff ({here}); reinstall ptxdiff")


def hook_text(name: str, python: str) -> str:
    """The hook file as written into a repository: the template with the interpreter filled in."""
    return hook_source(name).read_text(encoding="utf-8").replace("@PYTHON@", shlex.quote(python))


def hook_python(text: str) -> str | None:
    """The interpreter a hook written by `hook_text` runs (its `python=` line), if it has one."""
    for line in text.splitlines():
        if line.startswith("python="):
            words = shlex.split(line[len("python="):], comments=True)
            return words[0] if words else None
    return None


def runs_isolated(python: str) -> bool:
    """Whether `python -I` (the way the hook starts it) can import ptxdiff."""
    try:
        return subprocess.run([python, "-I", "-c", "import ptxdiff"], capture_output=True).returncode == 0
    except OSError:
        return False


@dataclass
class Plan:
    """What install will do (and uninstall will undo)."""

    config_file: str
    config: dict[str, str] = field(default_factory=dict)
    attributes_file: str = ""
    hook_file: str | None = None
    hook_text: str = ""
    driver_file: str = ""
    driver_text: str = ""
    legacy_from: str | None = None
    messages: list[str] = field(default_factory=list)


def _attributes_text(path: Path) -> str | None:
    """The attributes file's text, None when there is none. A work tree's `.gitattributes` is a
    repository file, read by the rules of one (fastio.read_inside): a symlink, FIFO or device
    there is refused, never read, waited on or written through."""
    if not os.path.lexists(path):
        return None
    if path.name != ".gitattributes":
        return path.read_text()
    try:
        return read_inside(str(path.parent), path.name).decode("utf-8", "replace")
    except OSError as e:
        raise GitError(f"{e}; not reading or writing through it") from None


def _local(repo: Repo | None) -> Repo:
    """The repository an install that is not --global writes to (the CLI passes one then)."""
    assert repo is not None, "an install that is not --global needs a repository"
    return repo


def _config_file(repo: Repo | None, global_: bool) -> str:
    if global_:
        return os.path.expanduser("~/.gitconfig")
    return os.path.join(_local(repo).common_dir, "config")


def _manifest_path(repo: Repo | None, global_: bool) -> Path:
    if global_:
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
        return Path(base) / "ptxdiff" / "install.json"
    return Path(_local(repo).common_dir) / "ptxdiff" / "install.json"


def hooks_dir(repo: Repo) -> Path:
    """Where git looks for this repository's hooks: core.hooksPath (relative to the work tree
    the hook runs in), else the hooks/ of the common git dir, shared by all linked work trees."""
    configured = repo.config_get("core.hooksPath")
    if configured:
        if configured.strip() == "/dev/null":
            raise UsageError("core.hooksPath is /dev/null (hooks disabled in this repo); "
                             "unset it or install the hook elsewhere by hand")
        path = Path(os.path.expanduser(configured))
        return path if path.is_absolute() else Path(repo.workdir) / path
    return Path(repo.common_dir) / "hooks"


def plan(repo: Repo | None, global_: bool, attributes: str, python: str) -> Plan:
    p = Plan(_config_file(repo, global_))
    p.driver_file = str(_manifest_path(repo, global_).parent / "diff-driver")
    p.driver_text = driver_shim(python)
    p.config["diff.ptxdiff.command"] = driver_command(p.driver_file)
    p.config["diff.ptxdiff.xfuncname"] = PYTHON_FUNCNAME
    config_hooks = git_version() >= (2, 54)
    if global_:
        configured = global_config_get("core.attributesFile")
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
        p.attributes_file = os.path.expanduser(configured) if configured else os.path.join(base, "git", "attributes")
    elif attributes == "commit":
        p.attributes_file = os.path.join(_local(repo).workdir, ".gitattributes")
    else:
        p.attributes_file = os.path.join(_local(repo).common_dir, "info", "attributes")
    if repo is not None and not global_ and os.path.normpath(repo.common_dir) != os.path.normpath(repo.git_dir):
        p.messages.append(f"linked work tree: installed for the whole repository ({repo.common_dir}), "
                          "as git reads hooks, config and attributes from there")
    if config_hooks:
        p.config["hook.ptxdiff.command"] = f"{shlex.quote(python)} -I -m ptxdiff pre-push"
        p.config["hook.ptxdiff.event"] = "pre-push"
    elif global_:
        p.messages.append("git < 2.54 has no config-defined hooks: run `ptxdiff install` in each repo "
                          "for the pre-push gate")
    else:
        hooks = hooks_dir(_local(repo))
        p.hook_file = str(hooks / "pre-push")
        p.hook_text = hook_text("pre-push", python)
        if os.path.exists(p.hook_file) and MARKER not in Path(p.hook_file).read_text(errors="replace"):
            p.legacy_from = p.hook_file
    return p


def _set_config(path: str, values: dict[str, str]) -> dict[str, str | None]:
    Path(path).touch(exist_ok=True)
    return config_file_set(path, values)


def _section_header(key: str) -> str:
    section, _, _ = key.rpartition(".")
    head, _, sub = section.partition(".")
    return f'[{head} "{sub}"]' if sub else f"[{head}]"


def _drop_empty_sections(path: str, headers: set[str]) -> None:
    lines = Path(path).read_text().splitlines(keepends=True)
    out = []
    for i, line in enumerate(lines):
        if line.strip() in headers:
            following = next((ln for ln in lines[i + 1:] if ln.strip()), "")
            if not following or following.lstrip().startswith("["):
                continue
        out.append(line)
    Path(path).write_text("".join(out))


def install(repo: Repo | None, global_: bool = False, attributes: str = "info", dry_run: bool = False,
            python: str | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout  # looked up per call, so redirected/captured stdout is honoured
    python = python or sys.executable
    manifest = _manifest_path(repo, global_)
    p = plan(repo, global_, attributes, python)
    if not runs_isolated(python):
        p.messages.append(f"{python} -I cannot import ptxdiff (installed with --user or through PYTHONPATH?): "
                          "the pre-push hook blocks every push until ptxdiff is installed in that "
                          "interpreter's environment (e.g. a venv) and `ptxdiff install` runs from there")
    existing = json.loads(manifest.read_text()) if manifest.exists() else None
    say: Callable[[str], None] = (lambda s: print(f"would {s}", file=out)) if dry_run else (lambda s: print(s, file=out))
    for key, value in p.config.items():
        say(f"set {key} = {value}   ({p.config_file})")
    say(f"write the diff driver {p.driver_file}")
    say(f"add {', '.join(repr(line) for line in ATTR_LINES)} to {p.attributes_file}")
    if p.legacy_from:
        say(f"keep the existing pre-push hook as {Path(p.legacy_from).parent / LEGACY} (run first)")
    if p.hook_file:
        say(f"write the pre-push hook {p.hook_file}")
    for m in p.messages:
        print(f"note: {m}", file=out)
    if dry_run:
        return 0
    attr = Path(p.attributes_file)
    text = _attributes_text(attr)   # before anything is written: a refused one leaves nothing half-installed
    record = existing or {"config_file": p.config_file, "config_before": {}, "attributes_file": p.attributes_file,
                          "attributes_created": False, "attributes_added_newline": False, "hook_file": None,
                          "hooks_dir_created": False, "legacy": None, "sections_created": []}
    if existing is None:
        had = set()
        if os.path.exists(p.config_file):
            config_text = Path(p.config_file).read_text()
            had = {h for h in map(_section_header, p.config) if h in config_text}
        record["sections_created"] = sorted({_section_header(k) for k in p.config} - had)
        record["config_file_created"] = not os.path.exists(p.config_file)
        record["config_before"] = _set_config(p.config_file, p.config)
    else:
        _set_config(p.config_file, p.config)
    driver = Path(p.driver_file)
    driver.parent.mkdir(parents=True, exist_ok=True)
    driver.write_text(p.driver_text)
    driver.chmod(0o755)
    record["driver_file"] = str(driver)
    missing = [line for line in ATTR_LINES if text is None or line not in text.splitlines()]
    if missing:
        if existing is None or not _lines_added(record):
            record["attributes_created"] = text is None
            record["attributes_dir_created"] = not attr.parent.exists()
            record["attributes_added_newline"] = bool(text and not text.endswith("\n"))
        attr.parent.mkdir(parents=True, exist_ok=True)
        attr.write_text((text or "") + ("\n" if text and not text.endswith("\n") else "") + "".join(
            f"{line}\n" for line in missing))
        record["attributes_lines_added"] = [*_lines_added(record), *missing]
        record.pop("attributes_line_added", None)
    if p.hook_file:
        hook = Path(p.hook_file)
        if not hook.parent.exists():
            hook.parent.mkdir(parents=True)
            record["hooks_dir_created"] = True
        if p.legacy_from:
            os.replace(p.legacy_from, hook.parent / LEGACY)
            record["legacy"] = str(hook.parent / LEGACY)
        hook.write_text(p.hook_text)
        hook.chmod(hook.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        record["hook_file"] = str(hook)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps(record, indent=2))
    print("ptxdiff installed: `git diff` shows kernel deltas; `git push` checks them. Undo: ptxdiff uninstall",
          file=out)
    return 0


def uninstall(repo: Repo | None, global_: bool = False, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    manifest = _manifest_path(repo, global_)
    if not manifest.exists():
        raise GitError("ptxdiff is not installed here (no install record at " + str(manifest) + ")")
    record = json.loads(manifest.read_text())
    cfg_file = record["config_file"]
    if os.path.exists(cfg_file):
        config_file_set(cfg_file, record["config_before"])  # None removes what we added
        _drop_empty_sections(cfg_file, set(record.get("sections_created", [])))
        if record.get("config_file_created") and not Path(cfg_file).read_text().strip():
            os.remove(cfg_file)
    attr = Path(record["attributes_file"])
    if _lines_added(record) and attr.exists():
        lines = (_attributes_text(attr) or "").splitlines(keepends=True)
        for added in _lines_added(record):
            for i in range(len(lines) - 1, -1, -1):
                if lines[i].rstrip("\n") == added:
                    del lines[i]
                    break
        text = "".join(lines)
        if record.get("attributes_added_newline") and text.endswith("\n"):
            text = text[:-1]
        if record.get("attributes_created") and not text:
            attr.unlink()
            if record.get("attributes_dir_created"):
                try:
                    attr.parent.rmdir()
                except OSError:
                    pass
        else:
            attr.write_text(text)
    driver = record.get("driver_file")
    if driver and os.path.exists(driver) and DRIVER_MARKER in Path(driver).read_text(errors="replace"):
        os.remove(driver)
    if not global_:
        shutil.rmtree(manifest.parent / "driver", ignore_errors=True)  # the driver's spool and results
    hook_file = record.get("hook_file")
    if hook_file and os.path.exists(hook_file) and MARKER in Path(hook_file).read_text(errors="replace"):
        os.remove(hook_file)
    if record.get("legacy") and os.path.exists(record["legacy"]) and hook_file:
        os.replace(record["legacy"], hook_file)
    if record.get("hooks_dir_created") and hook_file:
        try:
            Path(hook_file).parent.rmdir()
        except OSError:
            pass
    manifest.unlink()
    try:
        manifest.parent.rmdir()
    except OSError:
        pass
    print("ptxdiff uninstalled", file=out)
    return 0
