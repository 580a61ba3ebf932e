#!/usr/bin/env bash
# Set up ptxdiff on a fresh machine: a .venv beside this file with ptxdiff, triton, a CPU torch
# and the test tools. Idempotent: running it again only checks what is there.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${PTXDIFF_VENV:-$here/.venv}"
python="${PYTHON:-python3}"

say() { echo "install.sh: $*" >&2; }
if [ ! -x "$venv/bin/python" ]; then
    say "making $venv"
    "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
# torch first and pinned: an unpinned torch would pull a multi-GB CUDA build; 2.13.0 is the CPU
# build. On a machine that already has a torch in the venv, keep it.
if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
    say "installing torch ${PTXDIFF_TORCH:-2.13.0} (CPU build, a ~190 MB download: the longest step on a cold machine)"
    "${pip[@]}" "torch==${PTXDIFF_TORCH:-2.13.0}"
fi
if "$venv/bin/python" -c "import triton, pygit2, tabulate, pytest" 2>/dev/null; then
    say "checking ptxdiff and its dependencies (pip install -e '.[compile,run,test]'; triton is there: nothing large to download)"
else
    say "installing ptxdiff with triton and the test tools (pip install -e '.[compile,run,test]'; triton is a ~290 MB download, ~1 GB unpacked)"
fi
"${pip[@]}" -e "$here[compile,run,test]"
"$venv/bin/python" -c "import ptxdiff, triton, pygit2, tabulate; print('ptxdiff', ptxdiff.__version__, '| triton', triton.__version__, '| pygit2', pygit2.__version__)"
echo "ready: $venv/bin/ptxdiff"
