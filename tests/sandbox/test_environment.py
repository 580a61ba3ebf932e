"""The compile workers' environment is an allow-list: tools' variables pass, credentials do not."""

from __future__ import annotations

from ptxdiff.sandbox.environment import allowed, foreign_names, scrubbed


def test_the_allow_list_keeps_what_the_toolchain_needs_and_nothing_else():
    env = {"PATH": "/usr/bin", "LANG": "C.UTF-8", "TRITON_PTXAS_PATH": "/x/ptxas", "TRITON_HOME": "/h",
           "GITHUB_TOKEN": "ghp_x", "AWS_SECRET_ACCESS_KEY": "k", "SSH_AUTH_SOCK": "/tmp/agent",
           "HOME": "/home/me", "PYTHONPATH": "/evil", "LD_PRELOAD": "/evil.so", "TRITON_API_TOKEN": "t"}
    out = scrubbed(env, "/private")
    assert out == {"PATH": "/usr/bin", "LANG": "C.UTF-8", "TRITON_PTXAS_PATH": "/x/ptxas", "TRITON_HOME": "/h",
                   "HOME": "/private", "TMPDIR": "/private", "TEMP": "/private", "TMP": "/private"}


def test_a_name_that_looks_like_a_credential_is_never_allowed():
    assert allowed("TRITON_CACHE_DIR") and not allowed("TRITON_AUTH_HEADER") and not allowed("CUDA_PASSWORD")


def test_foreign_names_reads_a_raw_environment_block():
    block = b"PATH=/bin\0HOME=/p\0CI_JOB_TOKEN=abc\0COLUMNS=80\0"
    assert foreign_names(block) == ["CI_JOB_TOKEN", "COLUMNS"]
    assert foreign_names(b"PATH=/bin\0TMPDIR=/p\0") == []
