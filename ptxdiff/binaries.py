"""Where the compiler tools are, which versions they are, and running them.

Tools are looked up like triton's nvidia backend does: an env override first
(PTXDIFF_CUOBJDUMP, then triton's own TRITON_CUOBJDUMP_PATH / TRITON_PTXAS_PATH), else the binary
that ships inside the triton wheel. Finding the wheel does not import triton.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import subprocess
from pathlib import Path

from ptxdiff import PACKAGE_DIR, __version__
from ptxdiff.errors import SetupError, ToolError

# Bump when the meaning of any metric changes: old cache entries then stop matching.
METRIC_VERSION = 1


def _triton_dir(site: str | None = None) -> Path | None:
    """The triton package: the importable one, or the one in `site` (a toolchain's site-packages)."""
    if site is not None:
        return Path(site) / "triton" if (Path(site) / "triton").is_dir() else None
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def triton_version(site: str | None = None) -> str | None:
    """Read from the wheel's dist-info folder name: importlib.metadata costs ~30 ms to import,
    a tenth of the diff driver's whole warm call. `site`: a toolchain's site-packages."""
    package = _triton_dir(site)
    if package is None:
        return None
    found = sorted(package.parent.glob("triton-*.dist-info"))
    if found:
        return found[-1].name[len("triton-"):-len(".dist-info")]
    if site is not None:
        return None
    from importlib import metadata
    try:
        return metadata.version("triton")
    except metadata.PackageNotFoundError:
        return None


def _bundled_bin(site: str | None = None) -> Path | None:
    package = _triton_dir(site)
    return package / "backends" / "nvidia" / "bin" if package is not None else None


def tool_path(name: str, site: str | None = None) -> str:
    env_name = name.upper().replace("-", "_")   # ptxas-blackwell: TRITON_PTXAS_BLACKWELL_PATH, as triton spells it
    for var in (f"PTXDIFF_{env_name}", f"TRITON_{env_name}_PATH"):
        if os.environ.get(var):
            return os.environ[var]
    bundled = _bundled_bin(site)
    if bundled is not None and (bundled / name).exists():
        return str(bundled / name)
    raise ToolError(f"{name} not found: install triton (it ships {name}) or set PTXDIFF_{name.upper()}")


TOOLS = ("ptxas", "ptxas-blackwell", "cuobjdump", "nvdisasm")
SHELL_TRITONS = ("3.0.", "3.1.")   # releases whose ptxas runs through /bin/sh


def tool_paths() -> list[str]:
    """Every toolchain binary that exists here: what a sealed compile worker may execute. Triton
    3.0 and 3.1 start ptxas through `/bin/sh -c`, so their workers may execute the shell too; it
    gains nothing, as Landlock binds what the shell starts to this same list."""
    found = []
    for name in TOOLS:
        try:
            found.append(tool_path(name))
        except ToolError:
            pass
    version = triton_version()
    if version is not None and version.startswith(SHELL_TRITONS):
        found.append(os.path.realpath("/bin/sh"))
    return found


def run_tool(name: str, args: list[str], timeout: float = 120) -> str:
    path = tool_path(name)
    try:
        proc = subprocess.run([path, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise ToolError(f"{name} timed out after {timeout:.0f}s", str(e.stderr or "")) from None
    except OSError as e:
        raise ToolError(f"{name} could not run: {e}") from None
    if proc.returncode != 0:
        raise ToolError(f"{name} {' '.join(args[:1])} failed with exit code {proc.returncode}",
                        proc.stderr + proc.stdout)
    return proc.stdout


def _stamp(path: str) -> str:
    try:
        st = os.stat(path)
        return f"{path}:{st.st_size}:{int(st.st_mtime)}"
    except OSError:
        return f"{path}:missing"


def _own_source() -> str:
    """Size and mtime of ptxdiff's own modules: a changed evaluator or metric never reads an old
    entry, whatever the version number says (stat only: no file is read)."""
    import hashlib
    h = hashlib.sha256()
    for path in source_files():
        st = os.stat(path)
        h.update(f"{os.path.relpath(path, PACKAGE_DIR)}:{st.st_size}:{int(st.st_mtime)};".encode())
    return h.hexdigest()[:16]


def source_files() -> list[str]:
    """ptxdiff's own modules, every package: what a stored result depends on besides triton."""
    return sorted(os.path.join(folder, name) for folder, _, names in os.walk(PACKAGE_DIR)
                  for name in names if name.endswith(".py"))


def fingerprint(site: str | None = None) -> dict[str, str]:
    """Everything that can change what a compile produces; part of every cache key. No subprocess.
    `site`: a toolchain's site-packages instead of the installed triton."""
    tools = {}
    for name in ("ptxas", "ptxas-blackwell", "cuobjdump"):
        try:
            tools[name] = _stamp(tool_path(name, site))
        except ToolError:
            tools[name] = "missing"
    return {
        "ptxdiff": __version__,
        "source": _own_source(),
        "metrics": str(METRIC_VERSION),
        "triton": triton_version(site) or "missing",
        "python": platform.python_version(),
        "fp_fusion": os.environ.get("TRITON_DEFAULT_FP_FUSION", "1"),
        **tools,
    }


def versions() -> dict[str, str]:
    """What the report shows as the toolchain."""
    return {"ptxdiff": __version__, "triton": triton_version() or "missing", "python": platform.python_version()}


def pin_fp_fusion() -> None:
    """Triton 3.9 warns when unset and will flip the default in 3.10; pin today's default so the
    same source compiles the same way on every version we support (users may override)."""
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")


SUPPORTED_TRITON = "triton>=3.6,<3.10"


def install_triton() -> str:
    """The command that installs a supported triton for the interpreter running ptxdiff."""
    import shlex
    import sys
    return f"{shlex.quote(sys.executable)} -m pip install '{SUPPORTED_TRITON}'"


def require_triton() -> None:
    """Before the first compile: without triton every kernel fails the same way, so say it once."""
    if triton_version() is None:
        raise SetupError(f"triton is not installed, so no kernel can be compiled; install it with: {install_triton()}")
