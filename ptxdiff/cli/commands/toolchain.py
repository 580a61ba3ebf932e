"""`ptxdiff toolchain list|add|remove [VERSION]`: the tritons ptxdiff can compile with besides the
installed one (compile/toolchains.py), in the user's cache, shared by every repository."""

from __future__ import annotations

import argparse

from ptxdiff.compile import toolchain, toolchains
from ptxdiff.errors import EXIT_OK, UsageError


def lines() -> list[str]:
    """One line per triton: the installed one, then each toolchain with its folder."""
    out = [f"triton {toolchain.triton_version() or 'missing'}  (installed, beside ptxdiff)"]
    out += [f"triton {t.version}  {t.prefix}" for t in toolchains.listed()]
    return out


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    if args.action == "list":
        print("\n".join(lines()))
        print(f"(toolchains live in {toolchains.root()}; {toolchains.ROOT_ENV} moves them)")
        return EXIT_OK
    if not args.versions:
        raise UsageError(f"ptxdiff toolchain {args.action}: name the triton version(s), e.g. 3.6.0")
    for version in args.versions:
        if args.action == "add":
            found = toolchains.install(version)
            print(f"triton {found.version}  {found.prefix}")
        elif toolchains.remove(version):
            print(f"removed triton {toolchains.release(version, 'version')}")
        else:
            raise UsageError(f"triton {version}: no such toolchain in {toolchains.root()} (ptxdiff toolchain list)")
    return EXIT_OK
