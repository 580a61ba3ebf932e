"""`ptxdiff toolchain list|add|remove [VERSION]`: the tritons ptxdiff can compile with besides the
installed one (compile/toolchains.py), in the user's cache, shared by every repository."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ptxdiff import binaries
from ptxdiff.cli.options import unpacked
from ptxdiff.compile import toolchains
from ptxdiff.errors import EXIT_OK, UsageError


def lines() -> list[str]:
    """One line per triton: the installed one, then each toolchain with its folder."""
    out = [f"triton {binaries.triton_version() or 'missing'}  (installed, beside ptxdiff)"]
    out += [f"triton {t.version}  {t.prefix}" for t in toolchains.listed()]
    return out


@dataclass(frozen=True)
class Options:
    """`ptxdiff toolchain`'s command line."""

    action: str                  # list, add or remove
    versions: tuple[str, ...] = ()

    @classmethod
    def of(cls, args: argparse.Namespace) -> Options:
        return unpacked(cls, args, versions=tuple(args.versions))


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    opts = Options.of(args)
    if opts.action == "list":
        print("\n".join(lines()))
        print(f"(toolchains live in {toolchains.root()}; {toolchains.ROOT_ENV} moves them)")
        return EXIT_OK
    if not opts.versions:
        raise UsageError(f"ptxdiff toolchain {opts.action}: name the triton version(s), e.g. 3.6.0")
    for version in opts.versions:
        if opts.action == "add":
            found = toolchains.install(version)
            print(f"triton {found.version}  {found.prefix}")
        elif toolchains.remove(version):
            print(f"removed triton {toolchains.release(version, 'version')}")
        else:
            raise UsageError(f"triton {version}: no such toolchain in {toolchains.root()} (ptxdiff toolchain list)")
    return EXIT_OK
