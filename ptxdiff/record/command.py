"""`ptxdiff record`: the launches a command really makes, or those tritonparse traced, written to
the recorded-launch file (launches.py says its format).

The command is the user's (their tests, a benchmark), run because they asked: it runs with a
temporary folder first on PYTHONPATH whose sitecustomize loads launch_hook.py in every Python
process the command starts; each process writes its launches under a temporary folder, and this
side adds them up, keeps the kernels of the repository (tracked files, or untracked ones git
does not ignore), and merges them into the file: the kernels seen are replaced, the others kept.
Without a GPU the command runs under TRITON_INTERPRET=1 and the same specialisation rules are
applied to its actual arguments.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from ptxdiff.errors import PtxdiffError, UsageError
from ptxdiff.fastio import read_inside, replace_file
from ptxdiff.record import launches as recorded
from ptxdiff.record import replay_format
from ptxdiff.record.launch_hook import ENV_OUT, ENV_ROOT

HOOK = Path(__file__).resolve().with_name("launch_hook.py")

SITECUSTOMIZE = '''\
# Written by `ptxdiff record` for the command it runs, and deleted when that command ends.
import sys


def _ptxdiff_record():
    import importlib.util
    spec = importlib.util.spec_from_file_location("_ptxdiff_record_hook", {hook!r})
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.install()
    module.chain_sitecustomize({here!r})


try:
    _ptxdiff_record()
except Exception as e:
    sys.stderr.write(f"ptxdiff record: not recording in this process: {{type(e).__name__}}: {{e}}\\n")
'''


Raw = tuple[dict[str, Any], int, str, dict[str, Any] | None]   # (launch, count, where, shape), as JSON


class CommandFailed(PtxdiffError):
    """The recorded command failed: nothing is written (exit 1, like a test run that failed)."""

    exit_code = 1


def interpreting(device: str, env: Mapping[str, str]) -> bool:
    """auto: the interpreter unless a GPU device node is visible (or TRITON_INTERPRET is set)."""
    if device != "auto":
        return device == "interpreter"
    if env.get("TRITON_INTERPRET", "0") not in ("", "0"):
        return True
    if env.get("CUDA_VISIBLE_DEVICES") in ("", "-1"):
        return True
    return not any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd"))


def run_command(command: list[str], root: str, interpret: bool) -> tuple[int, list[Raw]]:
    """Run the command with the hook in every Python process it starts; its exit status and the
    raw records (launch, count, where) of all its processes."""
    tmp = tempfile.mkdtemp(prefix="ptxdiff-record-")
    try:
        site, out = os.path.join(tmp, "site"), os.path.join(tmp, "launches")
        os.mkdir(site)
        os.mkdir(out)
        Path(site, "sitecustomize.py").write_text(SITECUSTOMIZE.format(hook=str(HOOK), here=site))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([site] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env[ENV_OUT] = out
        env[ENV_ROOT] = os.path.realpath(root)
        if interpret:
            env["TRITON_INTERPRET"] = "1"
        try:
            rc = subprocess.run(command, env=env).returncode
        except OSError as e:
            raise UsageError(f"cannot run {command[0]}: {e.strerror or e}") from None
        return rc, read_raw(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def read_raw(folder: str) -> list[Raw]:
    """The per-process files: one `{"count": n, "launch": {...}, "shape": {...} or null}` per line
    (`shape`: replay_format.py's launch, with the ranges of the first values seen)."""
    records = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        with open(path, encoding="ascii") as f:
            for n, line in enumerate(f, 1):
                if not line.endswith("\n"):
                    continue  # a process killed mid-write: its earlier lines stand
                obj = json.loads(line)
                records.append((obj["launch"], obj["count"], f"{name}:{n}", obj.get("shape")))
    return records


def split(raw: list[Raw], repo_files: Collection[str], via: str) -> recorded.Recording:
    """Raw records -> the launches of repository kernels, and what was left out."""
    launches = []
    ignored: Counter[str] = Counter()
    for obj, count, where, shape in raw:
        path = obj["kernel"].rpartition("::")[0]
        if path in repo_files:
            launch = recorded.from_json({**obj, "count": count}, where)
            if shape is not None:
                launch = dataclasses.replace(launch, replay=(
                    replay_format.rounded(replay_format.from_json({**shape, "count": count}, where)),))
            launches.append(launch)
        else:
            ignored[obj["kernel"]] += count
    return recorded.Recording(tuple(launches), dict(ignored), (), via)


def _display(path: Path, root: str) -> str:
    try:
        return path.resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return str(path)


def save(path: Path, recording: recorded.Recording, keep: int, root: str,
         keep_launches: int = replay_format.DEFAULT_KEEP_LAUNCHES) -> dict[str, tuple[recorded.Launch, ...]]:
    """Merge the recording into the file at `path` (its other kernels kept) and write it
    atomically; a file we cannot read back is an error, never overwritten."""
    where = _display(path, root)
    for p in (path, path.parent):
        if p.is_symlink():
            raise UsageError(f"{_display(p, root)} is a symlink; not writing through it")
    old = {}
    if os.path.lexists(path):
        try:
            # a repository file: never a FIFO or device, never over the bound (fastio.read_inside)
            text = read_inside(str(path.parent), path.name).decode("utf-8")
        except OSError as e:
            raise UsageError(f"{e}; not writing through it") from None
        except UnicodeDecodeError:
            raise UsageError(f"{where}: not UTF-8 text; fix or delete it, then record again") from None
        old = recorded.parse(text, where)
    new = recorded.combine(recording.launches, keep, keep_launches)
    merged = recorded.replace(old, new)
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(str(path), recorded.dumps(merged).encode("ascii"))
    return new


def summary(recording: recorded.Recording, new: dict[str, tuple[recorded.Launch, ...]], where: str,
            keep: int) -> list[str]:
    launches = sum(launch.count for launch in recording.launches)
    specs = sum(len(v) for v in new.values())
    lines = [f"recorded {launches} launch{'es' if launches != 1 else ''} of {len(new)} "
             f"kernel{'s' if len(new) != 1 else ''} ({specs} distinct spec{'s' if specs != 1 else ''}"
             f"{', ' + recording.via if recording.via else ''}) into {where}"]
    distinct = Counter(launch.kernel for launch in {(launch.kernel, launch.spec_text): launch
                                                     for launch in recording.launches}.values())
    for kernel, n in sorted(distinct.items()):
        if n > keep:
            lines.append(f"  {kernel}: kept the {keep} most frequent of {n} specs (--keep)")
    if recording.ignored:
        total = sum(recording.ignored.values())
        shown = ", ".join(sorted(recording.ignored)[:3]) + (", ..." if len(recording.ignored) > 3 else "")
        installed = any(part in k for k in recording.ignored for part in ("site-packages", "dist-packages"))
        lines.append(f"ignored {total} launch{'es' if total != 1 else ''} of {len(recording.ignored)} kernel"
                     f"{'s' if len(recording.ignored) != 1 else ''} outside the repository or ignored by git "
                     f"({shown})" + ("; an installed copy of the package ran, not the repository's files "
                                     "(pip install -e . makes them the same)" if installed else ""))
    lines.extend(recording.notes)
    return lines


@dataclasses.dataclass(frozen=True)
class Asked:
    """What `ptxdiff record` was asked: the cli unpacks its command line into this."""

    repo: str = "."
    output: str | None = None            # -o FILE (default: .ptxdiff/launches.jsonl at the root)
    keep: int | None = None              # the N most frequent specs per kernel
    keep_launches: int | None = None     # replayable launches kept per spec
    device: str = "auto"                 # auto, gpu or interpreter
    allow_failure: bool = False
    from_tritonparse: str | None = None  # read tritonparse's trace logs instead of running a command


def main(args: Asked, command: list[str] | None) -> int:
    """The `record` subcommand."""
    from ptxdiff.git.repo import Repo

    if bool(command) == bool(args.from_tritonparse):
        raise UsageError("say what to record: ptxdiff record [options] -- CMD ..., "
                         "or ptxdiff record --from-tritonparse DIR")
    keep = recorded.DEFAULT_KEEP if args.keep is None else args.keep
    if keep < 1:
        raise UsageError("--keep must be at least 1")
    keep_launches = replay_format.DEFAULT_KEEP_LAUNCHES if args.keep_launches is None else args.keep_launches
    if keep_launches < 0:
        raise UsageError("--keep-launches must be at least 0")
    repo = Repo(args.repo)
    root = repo.workdir
    files = frozenset(repo.worktree_files())
    out = Path(args.output) if args.output else Path(root, recorded.DEFAULT_PATH)
    if args.from_tritonparse:
        from ptxdiff.record import tritonparse as tritonparse_logs
        recording = tritonparse_logs.read(Path(args.from_tritonparse), files)
    else:
        assert command, "checked above: a command or --from-tritonparse"
        interpret = interpreting(args.device, os.environ)
        print(f"ptxdiff record: running {' '.join(command)}"
              + (" under the triton interpreter (TRITON_INTERPRET=1)" if interpret else " on the GPU"),
              file=sys.stderr, flush=True)
        rc, raw = run_command(command, root, interpret)
        if rc != 0 and not args.allow_failure:
            raise CommandFailed(f"{command[0]} exited with status {rc}; nothing written "
                                "(--allow-failure records the launches that ran)")
        recording = split(raw, files, "interpreter" if interpret else "gpu")
    where = _display(out, root)
    if not recording.launches:
        hint = ("" if args.from_tritonparse else
                " (the hook needs a Python that reads PYTHONPATH's sitecustomize: no -I, -E or -S, "
                "and a command that adds to PYTHONPATH rather than replacing it)")
        raise UsageError(f"no launch of a kernel of this repository was recorded; {where} not changed{hint}"
                         + "".join(f"; {line}" for line in summary(recording, {}, where, keep)[1:]))
    new = save(out, recording, keep, root, keep_launches)
    for line in summary(recording, new, where, keep):
        print(line)
    if not args.output:  # the default file is read from the compared revisions: it counts once committed
        print(f"commit {where}: ptxdiff diff, git diff and the pre-push gate read it from the revisions they compare")
    return 0
