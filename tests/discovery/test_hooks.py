"""Launch hooks and autotune settings read from a kernel's decorators (discovery/hooks.py): each
setting as written with what it reads, compared as a change of the kernel; a config list
reordered is none."""

from __future__ import annotations

from ptxdiff.discovery import hooks
from ptxdiff.discovery.kernels import discover

HEAD = "import triton\nimport triton.language as tl\n\n"
CONFIGS = 'CONFIGS = [triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 256}, num_warps=8)]\n\n'
BODY = '''@triton.jit
def k(x_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(c_ptr + offs % 16, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
'''


class Files:
    def __init__(self, files: dict[str, str]):
        self.files = {p: t.encode() for p, t in files.items()}
        self.paths = frozenset(self.files)

    def read(self, path: str) -> bytes:
        return self.files[path]

    def __contains__(self, path: str) -> bool:
        return path in self.files


def hooks_of(source: str, **more: str) -> hooks.Hooks:
    return discover(Files({"ops/k.py": source, **more})).kernels["ops/k.py::k"].hooks


def tuned(args: str, top: str = "") -> str:
    return HEAD + CONFIGS + top + f"@triton.autotune({args})\n" + BODY


def test_every_setting_is_read_by_name_and_by_place():
    got = hooks_of(tuned('configs=CONFIGS, key=["n"], reset_to_zero=["c_ptr"], restore_value=["x_ptr"], '
                         'warmup=5, rep=20, use_cuda_graph=True, cache_results=True, '
                         'prune_configs_by={"early_config_prune": None}, do_not_specialize=["n"]'))
    assert {s for s, _, _ in got} == {f"autotune {s}" for s in (
        "key", "reset_to_zero", "restore_value", "warmup", "rep", "use_cuda_graph", "cache_results",
        "prune_configs_by", "do_not_specialize")}
    positional = hooks_of(tuned('CONFIGS, ["n"], None, ["c_ptr"]'))
    assert {s: t for s, t, _ in positional} == {"autotune key": "['n']", "autotune prune_configs_by": "None",
                                                      "autotune reset_to_zero": "['c_ptr']"}
    jit = hooks_of(HEAD + BODY.replace("@triton.jit", '@triton.jit(do_not_specialize=["n"], '
                                                    'do_not_specialize_on_alignment=["x_ptr"])'))
    assert {s for s, _, _ in jit} == {"jit do_not_specialize", "jit do_not_specialize_on_alignment"}


def test_a_removed_reset_to_zero_is_named():
    old, new = hooks_of(tuned('configs=CONFIGS, key=["n"], reset_to_zero=["c_ptr"]')), \
        hooks_of(tuned('configs=CONFIGS, key=["n"]'))
    assert hooks.changes(old, new) == ["autotune reset_to_zero ['c_ptr'] -> (none)"]


def test_a_hook_whose_code_changed_is_named_though_its_text_is_the_same():
    hook = 'def zero_c(nargs):\n    nargs["c_ptr"].{}\n\n\n'
    old = hooks_of(tuned("configs=CONFIGS, key=['n'], pre_hook=zero_c", hook.format("zero_()")))
    new = hooks_of(tuned("configs=CONFIGS, key=['n'], pre_hook=zero_c", hook.format("fill_(1)")))
    assert hooks.changes(old, new) == ["autotune pre_hook zero_c (the code it reads changed)"]
    # through an import, too
    imported = "from ops.hooks import zero_c\n\n"
    old = hooks_of(tuned("configs=CONFIGS, key=['n'], post_hook=zero_c", imported),
                   **{"ops/hooks.py": hook.format("zero_()")})
    new = hooks_of(tuned("configs=CONFIGS, key=['n'], post_hook=zero_c", imported),
                   **{"ops/hooks.py": hook.format("fill_(1)")})
    assert hooks.changes(old, new) == ["autotune post_hook zero_c (the code it reads changed)"]


def test_config_pre_hooks_are_a_set_and_reordering_configs_changes_nothing():
    def with_configs(configs: str) -> str:
        return HEAD + f"CONFIGS = [{configs}]\n\n" + '@triton.autotune(configs=CONFIGS, key=["n"])\n' + BODY
    a = 'triton.Config({"BLOCK": 128}, num_warps=4, pre_hook=lambda nargs: nargs["c_ptr"].zero_())'
    b = 'triton.Config({"BLOCK": 256}, num_warps=8)'
    assert hooks.changes(hooks_of(with_configs(f"{a}, {b}")), hooks_of(with_configs(f"{b}, {a}"))) == []
    gone = hooks.changes(hooks_of(with_configs(f"{a}, {b}")), hooks_of(with_configs(b)))
    assert gone == ["Config pre_hook lambda nargs: nargs['c_ptr'].zero_() -> (none)"]


def test_no_settings_no_hooks_and_a_repository_decorator_with_configs_counts():
    assert hooks_of(HEAD + BODY) == ()
    own = HEAD + CONFIGS + "from ops.tune import my_autotune\n\n" + \
        '@my_autotune(configs=CONFIGS, key=["n"], reset_to_zero=["c_ptr"])\n' + BODY
    assert "autotune reset_to_zero" in {s for s, _, _ in hooks_of(own, **{"ops/tune.py": "my_autotune = None\n"})}


def test_dropping_autotune_drops_its_tuning_silently_and_its_hooks_loudly():
    plain = hooks_of(HEAD + BODY)
    assert hooks.changes(hooks_of(tuned('configs=CONFIGS, key=["n"], warmup=5')), plain) == []
    assert hooks.changes(hooks_of(tuned('configs=CONFIGS, key=["n"], reset_to_zero=["c_ptr"]')), plain) == [
        "autotune reset_to_zero ['c_ptr'] -> (none)"]
