"""Which triton a repository targets, read from its files: pure, no triton, no network.

Only what is robust to read without running anything: lock files (uv.lock, poetry.lock,
pdm.lock, Pipfile.lock: the exact version they resolved), `requirements*.txt` (and what they
`-r`-include), `pyproject.toml`'s dependency lists, and `setup.py`/`setup.cfg`'s
install_requires as literal strings (setup.py is parsed, never run). A pin is a PEP 440
specifier on the package `triton` (`==3.3.1`, `>=3.2,<3.4`, `==3.3.*`); markers, extras and
URLs are not pins. Versions are release numbers (`3.5.1`): a pre-release is never chosen.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ptxdiff.compile.triton_pin_files import LOCKS, REQUIREMENTS
from ptxdiff.errors import ConfigError, PtxdiffError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_NAME = re.compile(r"^\s*triton\s*(?:\[[^\]]*\])?\s*(\(?\s*[<>=!~][^;#]*)?(?:;.*)?$", re.IGNORECASE)
_CLAUSE = re.compile(r"^(===|==|!=|~=|>=|<=|>|<)\s*([0-9][0-9a-zA-Z.*+!-]*)$")
# a release is a few short numbers: a longer one is no version (and `int()` of 5,000 digits raises)
RELEASE = re.compile(r"^\d{1,9}(?:\.\d{1,9}){0,5}$")
# a pre-release (`1.0.1dev`, `2.0.0.dev20221105`, `3.1rc1`): the release it comes before, group 1
PRE_RELEASE = re.compile(r"^(\d{1,9}(?:\.\d{1,9}){0,5})[.-]?(?:dev|a|b|c|rc|alpha|beta|pre|preview)\d*(?:\.?dev\d*)?$")
MAX_PIN = 120   # characters of one pin's specifier: real ones are under 40 (`>=3.2,<3.4,!=3.3.0`)


@dataclass(frozen=True)
class Pin:
    """A triton specifier and the file that says it (`requirements.txt`, `uv.lock`, ...)."""

    spec: str      # "==3.3.1", ">=3.2,<3.4"; "" for a bare `triton` (any version)
    source: str

    @property
    def exact(self) -> str | None:
        """The one version `==X.Y.Z` names, else None."""
        clauses = clauses_of(self.spec)
        if len(clauses) == 1 and clauses[0][0] in ("==", "===") and RELEASE.match(clauses[0][1]):
            return clauses[0][1]
        return None


def version_tuple(version: str) -> tuple[int, ...]:
    """`3.5.1` -> (3, 5, 1); only release versions (RELEASE) are ever compared."""
    return tuple(int(x) for x in version.split("."))


def clauses_of(spec: str) -> list[tuple[str, str]]:
    """`>=3.2, <3.4` -> [(">=", "3.2"), ("<", "3.4")]; a clause that is not PEP 440 is dropped."""
    out = []
    for part in spec.strip().strip("()").split(","):
        m = _CLAUSE.match(part.strip())
        if m:
            out.append((m.group(1), m.group(2)))
    return out


def _padded(a: tuple[int, ...], n: int) -> tuple[int, ...]:
    return a + (0,) * (n - len(a))


def _compare(version: tuple[int, ...], other: tuple[int, ...]) -> int:
    n = max(len(version), len(other))
    a, b = _padded(version, n), _padded(other, n)
    return (a > b) - (a < b)


def satisfies(version: str, spec: str) -> bool:
    """Whether the release `version` meets every clause of `spec` (PEP 440, releases only)."""
    if not RELEASE.match(version):
        return False
    v = version_tuple(version)
    for op, target in clauses_of(spec):
        if target.endswith(".*"):
            prefix = target[:-2]
            if not RELEASE.match(prefix):
                return False
            p = version_tuple(prefix)
            same = _padded(v, len(p))[:len(p)] == p
            if (op == "==" and not same) or (op == "!=" and same):
                return False
            continue
        if not RELEASE.match(target):
            pre = PRE_RELEASE.match(target)
            if pre is None:
                return False   # a local or post-release bound: no release we choose meets it exactly
            # a release is above a pre-release of X (`>=1.0.1dev`) exactly where it is X or above
            c = _compare(v, version_tuple(pre.group(1)))
            if not {">=": c >= 0, ">": c >= 0, "<": c < 0, "<=": c < 0, "!=": True}.get(op, False):
                return False
            continue
        t = version_tuple(target)
        c = _compare(v, t)
        ok = {"==": c == 0, "===": c == 0, "!=": c != 0, ">=": c >= 0, "<=": c <= 0, ">": c > 0, "<": c < 0,
              "~=": c >= 0 and len(t) >= 2 and v[:len(t) - 1] == t[:-1]}[op]
        if not ok:
            return False
    return True


def best(spec: str, versions: Iterable[str]) -> str | None:
    """The newest release among `versions` that `spec` allows."""
    fits = [v for v in versions if satisfies(v, spec)]
    return max(fits, key=version_tuple) if fits else None


_NUMERIC = re.compile(r"^\d{1,9}(?:\.\d{1,9}){0,5}")


def nearest(spec: str, versions: Iterable[str]) -> str | None:
    """Where no release among `versions` meets `spec`, the one closest to what it asks for, its
    bounds read as releases (`==2.0.0.dev20221105` as 2.0.0, `>=1.0.1dev` as 1.0.1): the newest that
    meets them, else the oldest for a pin below them all (`==2.3.0`), the newest for one above
    (`>=4`), the newest below it for one in a gap (`==3.4.5`). None for a spec with no version."""
    numeric = [(op, m.group(0).rstrip(".")) for op, target in clauses_of(spec) for m in [_NUMERIC.match(target)] if m]
    if not numeric:
        return None
    ordered = sorted(versions, key=version_tuple)
    fits = best(",".join(f"{op}{target}" for op, target in numeric), ordered)
    if fits is not None:
        return fits
    wanted = min(version_tuple(target) for _, target in numeric)
    below = [v for v in ordered if _compare(version_tuple(v), wanted) <= 0]
    return below[-1] if below else ordered[0]


def below_all(spec: str, versions: Iterable[str]) -> bool:
    """Whether `spec` asks only for releases older than all of `versions`, its bounds read as
    `nearest` reads them: `==2.3.0`, `==2.0.0.dev20221105`, `<3` (none of them meets it, and what it
    names is older than the oldest, or an upper bound at or below it)."""
    numeric = [(op, m.group(0).rstrip(".")) for op, target in clauses_of(spec) for m in [_NUMERIC.match(target)] if m]
    ordered = sorted(versions, key=version_tuple)
    if not numeric or not ordered or best(",".join(f"{op}{target}" for op, target in numeric), ordered) is not None:
        return False
    oldest = version_tuple(ordered[0])
    return all(_compare(version_tuple(t), oldest) < 0 or op in ("<", "<=") and _compare(version_tuple(t), oldest) <= 0
               for op, t in numeric)


def requirement(text: str) -> str | None:
    """The specifier of a requirement string on triton (`triton==3.3.1 ; sys_platform == "linux"`
    -> `==3.3.1`, `triton` -> ``), or None when it is not about triton or names a URL."""
    text = text.split("#", 1)[0].strip()
    if "@" in text or text.startswith("-"):
        return None
    m = _NAME.match(text)
    if not m:
        return None
    return (m.group(1) or "").strip().strip("()").strip().replace(" ", "")


def _from_requirements(text: str) -> str | None:
    for line in text.splitlines():
        found = requirement(line.replace("\\", " "))
        if found is not None:
            return found
    return None


def _included(text: str, path: str) -> list[str]:
    """The files a requirements file `-r`/`--requirement`-includes, relative to it."""
    folder = path.rpartition("/")[0]
    out = []
    for line in text.splitlines():
        m = re.match(r"^\s*(?:-r|--requirement)[\s=]+(\S+)", line)
        if m and "://" not in m.group(1):
            out.append(f"{folder}/{m.group(1)}" if folder else m.group(1))
    return out


def _toml(text: str) -> dict[str, Any]:
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _locked(name: str, text: str) -> str | None:
    """The exact triton version a lock file resolved."""
    if name == "Pipfile.lock":
        try:
            data = json.loads(text)
        except ValueError:
            return None
        for section in ("default", "develop"):
            entry = (data.get(section) or {}).get("triton") if isinstance(data, dict) else None
            version = entry.get("version") if isinstance(entry, dict) else None
            if isinstance(version, str) and version.startswith("=="):
                return version[2:]
        return None
    packages = _toml(text).get("package")
    for pkg in packages if isinstance(packages, list) else []:
        if isinstance(pkg, dict) and str(pkg.get("name", "")).lower() == "triton" and isinstance(pkg.get("version"), str):
            found: str = pkg["version"]
            return found
    return None


def _from_pyproject(text: str) -> str | None:
    data = _toml(text)
    project = data["project"] if isinstance(data.get("project"), dict) else {}
    lists = [project.get("dependencies")]
    optional = project.get("optional-dependencies")
    lists += list(optional.values()) if isinstance(optional, dict) else []
    groups = data.get("dependency-groups")
    lists += list(groups.values()) if isinstance(groups, dict) else []
    for deps in lists:
        for dep in deps if isinstance(deps, list) else []:
            found = requirement(dep) if isinstance(dep, str) else None
            if found is not None:
                return found
    poetry = ((data.get("tool") or {}).get("poetry") or {}) if isinstance(data.get("tool"), dict) else {}
    for table in (poetry.get("dependencies"), *((g or {}).get("dependencies") for g in (poetry.get("group") or {}).values()
                                                if isinstance(g, dict))) if isinstance(poetry, dict) else ():
        value = table.get("triton") if isinstance(table, dict) else None
        value = value.get("version") if isinstance(value, dict) else value
        if isinstance(value, str):
            return _poetry_spec(value)
    return None


def _poetry_spec(value: str) -> str:
    """Poetry's `3.3.1`, `^3.2`, `~3.2` or `>=3.2,<3.4` as a PEP 440 specifier."""
    value = value.strip()
    if RELEASE.match(value):
        return f"=={value}"
    if value.startswith("^") and RELEASE.match(value[1:]):
        v = version_tuple(value[1:])
        upper = (v[0] + 1,) if v[0] else (0, v[1] + 1) if len(v) > 1 else (1,)
        return f">={value[1:]},<{'.'.join(map(str, upper))}"
    if value.startswith("~") and not value.startswith("~=") and RELEASE.match(value[1:]):
        v = version_tuple(value[1:])
        upper = (v[0], v[1] + 1) if len(v) > 1 else (v[0] + 1,)
        return f">={value[1:]},<{'.'.join(map(str, upper))}"
    return "" if value == "*" else value


def _from_setup_py(text: str) -> str | None:
    """Literal strings of setup.py (never run): the first that is a requirement on triton."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "triton" in node.value.lower():
            found = requirement(node.value)
            if found is not None:
                return found
    return None


def _from_setup_cfg(text: str) -> str | None:
    for line in text.splitlines():
        found = requirement(line)
        if found is not None and line[:1].isspace():
            return found
    return None


def _bounded(pin: Pin) -> Pin:
    """A pin as read, or one line (exit 2) where its text is past what a pin can be: the file is
    the repository's, so nothing of its text goes further than this bound."""
    if len(pin.spec) > MAX_PIN or not pin.spec.isprintable() or any(len(v) > 40 for _, v in clauses_of(pin.spec[:4 * MAX_PIN])):
        raise ConfigError(f"{pin.source}: the triton requirement is {len(pin.spec)} characters long "
                          f"({pin.spec[:24]!r}...), over the {MAX_PIN}-character bound for a pin")
    return pin


def read_pin(read: Callable[[str], bytes], paths: Iterable[str]) -> Pin | None:
    """The repository's triton pin from the files at its top (and requirements files in any
    folder): a lock file's exact version first, then requirements files, pyproject.toml,
    setup.cfg, setup.py; an exact pin (`==X.Y.Z`) beats a range from a file read later. A pin's
    text past MAX_PIN characters is a ConfigError of one line."""
    found = _read_pin(read, paths)
    return _bounded(found) if found is not None else None


def _read_pin(read: Callable[[str], bytes], paths: Iterable[str]) -> Pin | None:
    present = set(paths)

    def text(path: str) -> str:
        try:
            return read(path).decode("utf-8", errors="replace")
        except (OSError, KeyError, PtxdiffError):   # a symlink, a file that went away
            return ""

    for name in LOCKS:
        if name in present:
            version = _locked(name, text(name))
            if version and RELEASE.match(version):
                return Pin(f"=={version}", name)
    found: list[Pin] = []
    reqs = sorted((p for p in present if REQUIREMENTS.match(p)), key=lambda p: (p.count("/"), p))
    seen: set[str] = set()
    while reqs:
        path = reqs.pop(0)
        if path in seen or len(seen) > 32:
            continue
        seen.add(path)
        body = text(path)
        spec = _from_requirements(body)
        if spec is not None:
            found.append(_bounded(Pin(spec, path)))
        reqs += [p for p in _included(body, path) if p in present]
    readers = (("pyproject.toml", _from_pyproject), ("setup.cfg", _from_setup_cfg), ("setup.py", _from_setup_py))
    for name, reader in readers:
        if name in present:
            spec = reader(text(name))
            if spec is not None:
                found.append(_bounded(Pin(spec, name)))
    exact = [p for p in found if p.exact]
    usable = [p for p in found if p.spec and clauses_of(p.spec)]
    return (exact or usable)[0] if exact or usable else None


@dataclass(frozen=True)
class Api:
    """Source text that uses a part of triton's language that only some releases have: kernels
    that use it were written for a triton in [since, until), whatever range the pin allows."""

    pattern: re.Pattern[bytes]
    since: str | None   # the first release that has it; None: every release ptxdiff compiles with
    until: str | None   # the first release without it; None: every release since
    what: str


_TL = rb"(?:\btl|\blanguage)\."   # `tl.gather(`, `triton.language.gather(`: never torch's `x.topk(`
# each window read off the releases themselves (`hasattr(triton.language, name)` in 3.0 ... 3.9)
APIS = (Api(re.compile(rb"\bmake_block_ptr\s*\("), None, "3.9", "block pointers (`tl.make_block_ptr`)"),
        Api(re.compile(rb"\b_experimental_descriptor_(?:load|store)\s*\("), None, "3.4",
            "the experimental descriptor API (`tl._experimental_descriptor_load`)"),
        # `tl.flip(x)` flipped the last dimension through 3.3; 3.4 asserts on `dim=None`
        Api(re.compile(_TL + rb"flip\s*\(\s*[\w.]+(?:\[[^\]\[()]*\])?\s*\)"), None, "3.4", "`tl.flip(x)` without `dim`"),
        # a kernel read such a global as a constant through 3.2; 3.3 refuses it, unless its value
        # is a constexpr object itself (`X: tl.constexpr = tl.constexpr(1)`, which every triton reads)
        Api(re.compile(rb"(?m)^[A-Za-z_]\w*\s*:\s*(?:[\w.]+\.)?constexpr\s*=(?!\s*(?:[\w.]+\.)?constexpr\s*\()"),
            None, "3.3", "module globals annotated constexpr (`X: tl.constexpr = ...`)"),
        # a revision written against triton's main before the release that brought what it calls
        Api(re.compile(_TL + rb"_experimental_make_tensor_descriptor\s*\("), "3.3", "3.4",
            "the experimental tensor descriptor (`tl._experimental_make_tensor_descriptor`)"),
        Api(re.compile(_TL + rb"make_tensor_descriptor\s*\("), "3.4", None,
            "tensor descriptors (`tl.make_tensor_descriptor`)"),
        Api(re.compile(_TL + rb"dot_scaled\s*\("), "3.2", None, "`tl.dot_scaled`"),
        Api(re.compile(_TL + rb"gather\s*\("), "3.3", None, "`tl.gather`"),
        Api(re.compile(_TL + rb"topk\s*\("), "3.4", None, "`tl.topk`"),
        Api(re.compile(_TL + rb"map_elementwise\s*\("), "3.5", None, "`tl.map_elementwise`"),
        # warp-specialised tasks (`with tl.async_task([0]):`) came with 3.4 and went with 3.6
        Api(re.compile(_TL + rb"async_task\s*\("), "3.4", "3.6", "warp-specialized tasks (`tl.async_task`)"),
        # constexpr functions were `tl.constexpr_function` in 3.4 only: `triton.constexpr_function` from 3.5
        Api(re.compile(_TL + rb"constexpr_function\b"), "3.4", "3.5", "`tl.constexpr_function`"),
        Api(re.compile(rb"\btriton\.experimental\.gluon\b|\bfrom\s+triton\.experimental\s+import\s+gluon\b"), "3.4",
            None, "Gluon (`triton.experimental.gluon`)"),
        # Blackwell's PTX in inline assembly (`cvt.rn.satfinite.e2m1x2.f32`, `tcgen05.*`): ptxas knows it
        # from CUDA 12.8, which triton bundles from 3.4 (3.3's is 12.4: "Unknown modifier '.e2m1x2'")
        Api(re.compile(rb"\.(?:e2m1x2|e2m3x2|e3m2x2|ue8m0x2)\b|\btcgen05\.[a-z]"), "3.4", None,
            "Blackwell's PTX in inline assembly (`.e2m1x2`, `tcgen05`)"))


@dataclass(frozen=True)
class Use:
    """A file that uses `what`, which came with triton `release` (`added`) or went with it."""

    release: str
    what: str
    path: str
    added: bool = False


@dataclass(frozen=True)
class Written:
    """The releases the changed files were written for, by what they use: at or after `floor`
    (what the newest of its APIs came with), before `ceiling` (what the first of its removals
    took); None where nothing bounds it."""

    floor: Use | None = None
    ceiling: Use | None = None


_COMMENT = re.compile(rb"(?m)^\s*#.*$")


def written_for(files: Iterable[tuple[str, bytes]], syntax: Iterable[Use] = ()) -> Written:
    """The bounds what `files` (path, text) use put on their triton, full-line comments aside, with
    `syntax`, what their jit functions' statements put (jit_syntax.py): the earliest removal is the
    ceiling, and the floor is the newest arrival below it (an API that came with 3.4 beside one that
    went with it: the older one says the file runs on the older triton)."""
    uses: list[Use] = list(syntax)
    for path, data in files:
        code = _COMMENT.sub(b"", data)
        for api in APIS:
            if api.pattern.search(code):
                uses += [Use(api.since, api.what, path, added=True)] if api.since else []
                uses += [Use(api.until, api.what, path)] if api.until else []
    ceiling = min((u for u in uses if not u.added), key=lambda u: version_tuple(u.release), default=None)
    below = [u for u in uses if u.added and (ceiling is None
                                             or version_tuple(u.release) < version_tuple(ceiling.release))]
    return Written(max(below, key=lambda u: version_tuple(u.release), default=None), ceiling)


def capped(pin: Pin | None, written: Written) -> Pin | None:
    """`pin` bounded to the releases the source was written for (`>=3.0` and block pointers:
    `>=3.0,<3.9`; `tl._experimental_make_tensor_descriptor`: `>=3.3,<3.4`); an exact pin stands:
    the repository says which triton it means."""
    uses = [u for u in (written.floor, written.ceiling) if u is not None]
    if not uses or pin is not None and pin.exact:
        return pin
    spec = ",".join(f"{'>=' if u.added else '<'}{u.release}" for u in uses)
    why = "; ".join(f"{u.path} uses {u.what}, {'new' if u.added else 'gone'} in triton {u.release}" for u in uses)
    if pin is None or not clauses_of(pin.spec):
        return Pin(spec, why)
    return Pin(f"{pin.spec},{spec}", f"{pin.source} (triton{pin.spec}) and {why}")
