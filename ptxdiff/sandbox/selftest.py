"""What a payload would try, run inside a sealed worker by `ptxdiff doctor` and the tests (and
outside it by the tests, to show the same attempts succeed there).

Each attempt returns "ok" when it got through, else "refused: <why>".
"""

from __future__ import annotations

import ctypes
import mmap
import os
import socket
import subprocess
import time

from ptxdiff.sandbox.syscalls import PR_SET_NAME, prctl


def _write(target: str) -> None:
    with open(target, "w") as f:
        f.write("written from the sandbox\n")


def _read(target: str) -> None:
    with open(target, "rb") as f:
        f.read(1)


def _env(target: str) -> None:
    if target in os.environ:
        return
    with open("/proc/self/environ", "rb") as f:
        if target.encode() + b"=" not in f.read():
            raise LookupError(f"{target} is not in the environment")


def _tcp(target: str) -> None:
    host, _, port = target.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5):
        pass


def _exec(target: str) -> None:
    subprocess.run([target, "-c", "true"], check=True, timeout=10, capture_output=True)


def _detach(target: str) -> None:
    os.setsid()


def _reserve(target: str) -> None:
    """Map `target` bytes of address space (nothing is touched: no memory is used)."""
    mmap.mmap(-1, int(target)).close()


def _spawn(target: str) -> None:
    """A child that names itself `target` (seen in /proc/*/comm from outside) and spins forever."""
    if os.fork() == 0:
        prctl(PR_SET_NAME, ctypes.c_char_p(target.encode()[:15]))
        while True:
            pass


def _wait(target: str) -> None:
    time.sleep(float(target))


ATTEMPTS = {"write": _write, "read": _read, "env": _env, "tcp": _tcp, "exec": _exec, "detach": _detach,
            "reserve": _reserve, "spawn": _spawn, "wait": _wait}


def attempt(what: str, target: str) -> str:
    try:
        ATTEMPTS[what](target)
    except Exception as e:  # the point: any failure is a refusal
        return f"refused: {type(e).__name__}: {e}"
    return "ok"


def attempts(tries: list[tuple[str, str]]) -> list[str]:
    return [attempt(what, target) for what, target in tries]
