"""`ptxdiff ci` on a fixture pull request, as the GitHub Action runs it: a fake pull_request event
at GITHUB_EVENT_PATH, GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files; the comment read by GitHub's
own renderer (one table of blocking rows, one inside <details>, notes as a list, links to the
head's lines), the merge base compared with the head, the gate's exit status, the sticky comment
updated (not duplicated) on a second push, GitLab's variables, and the action's YAML."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import ROOT, body_rows, commit, git, head, html, isolate, make_repo, run_main, scale_kernel
from ptxdiff.cli.commands.ci import Change, change_from, def_line, github_change, github_lines, gitlab_change
from ptxdiff.report.comment import MARKER

pytestmark = [pytest.mark.integration, pytest.mark.module_env]   # one repo, compiled once, for every test

BOT = "github-actions[bot]"
FORGE_ENV = ("GITHUB_EVENT_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_SERVER_URL", "GITHUB_REPOSITORY",
             "GITLAB_CI", "CI_MERGE_REQUEST_DIFF_BASE_SHA", "CI_COMMIT_SHA", "CI_MERGE_REQUEST_IID", "CI_SERVER_URL",
             "CI_PROJECT_PATH", "GITHUB_RUN_ID", "CI_JOB_URL", "CI_PROJECT_DIR")


@dataclass(frozen=True)
class PR:
    repo: Path
    base: str          # main's tip: it moved on after the branch was made
    merge_base: str
    head: str


@pytest.fixture(scope="module")
def pr(tmp_path_factory) -> PR:
    """main with three kernels; the PR changes a (structural) and b (constants only); main then
    changes c, which the PR never touched: only the merge base tells that c is no change."""
    mp = pytest.MonkeyPatch()
    tmp = tmp_path_factory.mktemp("ci")
    isolate(tmp, mp)
    repo = make_repo(tmp, {"ops/a.py": scale_kernel("x * 2.0", name="a_kernel"),
                           "ops/b.py": scale_kernel("x * 3.0", name="b_kernel"),
                           "ops/c.py": scale_kernel("x * 2.0", name="c_kernel")})
    merge_base = head(repo)
    git(repo, "checkout", "-q", "-b", "pr")
    pr_head = commit(repo, "a adds one, b scales by 5", {"ops/a.py": scale_kernel("x * 2.0 + 1.0", name="a_kernel"),
                                                          "ops/b.py": scale_kernel("x * 5.0", name="b_kernel")})
    git(repo, "checkout", "-q", "main")
    base = commit(repo, "c on main", {"ops/c.py": scale_kernel("x - 1.0", name="c_kernel")})
    git(repo, "checkout", "-q", "pr")
    yield PR(repo, base, merge_base, pr_head)
    mp.undo()


@dataclass(frozen=True)
class Run:
    rc: int
    out: str
    err: str
    body: str
    outputs: dict[str, str]
    summary: str
    report: dict


def run_ci(pr: PR, tmp_path: Path, monkeypatch, capsys, head_sha: str | None = None, args: tuple[str, ...] = (),
           event: dict | None = None) -> Run:
    """`ptxdiff ci` as the action runs it, on a pull_request event for `head_sha` (default the PR's)."""
    for var in FORGE_ENV:
        monkeypatch.delenv(var, raising=False)
    event = event if event is not None else {
        "action": "synchronize", "number": 7,
        "pull_request": {"number": 7, "base": {"sha": pr.base, "ref": "main"}, "head": {"sha": head_sha or pr.head}},
        "repository": {"full_name": "octo/kernels"}}
    (tmp_path / "event.json").write_text(json.dumps(event))
    for name in ("output", "summary"):
        (tmp_path / name).write_text("")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(tmp_path / "event.json"))
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary"))
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    monkeypatch.setenv("GITHUB_REPOSITORY", "octo/kernels")
    rc, out, err = run_main(["-C", str(pr.repo), "ci", "-q", "--target", "sm_90",
                             "--comment-file", str(tmp_path / "comment.md"),
                             "--json-file", str(tmp_path / "report.json"), *args], capsys)
    if rc not in (0, 1):
        return Run(rc, out, err, "", {}, "", {})
    outputs = dict(line.split("=", 1) for line in (tmp_path / "output").read_text().splitlines())
    return Run(rc, out, err, (tmp_path / "comment.md").read_text(), outputs, (tmp_path / "summary").read_text(),
               json.loads((tmp_path / "report.json").read_text()))


def test_the_comment_renders_as_one_table_plus_details_with_links_to_the_head(pr, tmp_path, monkeypatch, capsys):
    run = run_ci(pr, tmp_path, monkeypatch, capsys)
    assert run.rc == 1, run.err                                        # a structural change blocks
    assert run.body.startswith(MARKER + "\n**ptxdiff**: 2 kernels changed: 1 structural, 1 constants-only; "
                                        "**blocked** by 1 kernel")
    out = html(run.body)
    before, _, rest = out.partition("<details>")
    inside, _, after = rest.partition("</details>")
    assert before.count("<table>") == 1 and inside.count("<table>") == 1 and "<table>" not in after
    (blocking,) = body_rows(before)
    assert "ops/a.py::a_kernel" in blocking and "structural ✗" in blocking
    assert [("a_kernel" in r, "b_kernel" in r) for r in body_rows(inside)] == [(True, False), (False, True)]
    assert "c_kernel" not in run.body                                  # main's change is not the PR's
    notes = re.findall(r"<li>(.*?)</li>", after, re.S)
    assert any("a_kernel [sm_90 BLOCK=128 w4 s3] structural: " in n for n in notes)
    assert not any("structural: " in td for td in re.findall(r"<td>(.*?)</td>", out, re.S))   # notes are no rows
    hrefs = set(re.findall(r'href="([^"]+)"', out))
    assert hrefs == {f"https://github.com/octo/kernels/blob/{pr.head}/ops/a.py#L6",
                     f"https://github.com/octo/kernels/blob/{pr.head}/ops/b.py#L6"}
    assert f"Merge base `{pr.merge_base[:10]}` → head `{pr.head[:10]}`" in run.body


def test_the_outputs_the_summary_and_the_json_artifact(pr, tmp_path, monkeypatch, capsys):
    run = run_ci(pr, tmp_path, monkeypatch, capsys)
    assert run.outputs == {"blocking": "true", "comment-file": str(tmp_path / "comment.md"),
                           "json-file": str(tmp_path / "report.json"), "kernels": "2", "rows": "2",
                           "blocking-rows": "1", "verdicts": '{"structural": 1, "constants-only": 1}',
                           "base": pr.merge_base, "head": pr.head, "number": "7", "html-file": str(tmp_path / "report.html")}
    assert run.summary == run.body
    assert (run.report["base"], run.report["head"]) == (pr.merge_base, pr.head)
    assert {k["kernel"]: k["verdict"] for k in run.report["kernels"]} == {"ops/a.py::a_kernel": "structural",
                                                                          "ops/b.py::b_kernel": "constants-only"}
    assert "ops/a.py::a_kernel" in run.out and "structural ✗" in run.out      # the log gets the table
    assert run_ci(pr, tmp_path, monkeypatch, capsys, args=("--no-fail",)).rc == 0


def test_the_html_report_beside_the_json_and_the_comment_says_where(pr, tmp_path, monkeypatch, capsys):
    run = run_ci(pr, tmp_path, monkeypatch, capsys)
    assert run.body.endswith("_The HTML report, each row's PTX side by side: `report.html` beside the JSON report._\n")
    page = (tmp_path / "report.html").read_text()
    assert page.count('<details class="row"') == 2 and "ops/a.py::a_kernel" in page
    # each side's PTX lines point into the kernel's file as it was there, read from git
    assert "x * 2.0 + 1.0" in page and '"path":"ops/a.py"' in page


class Forge:
    """A pull request's comments as GitHub keeps them, changed only the way action.yml does:
    the action `ptxdiff ci --sticky-from` names (create, or update ID; unchanged: nothing)."""

    def __init__(self) -> None:
        self.comments = [{"id": 100, "user": {"login": "alice"}, "body": "Looks good, but see the registers"},
                         {"id": 101, "user": {"login": "mallory"}, "body": f"{MARKER}\nnot written by the bot"}]

    def push(self, body_file: Path, tmp_path: Path, capsys) -> str:
        saved = tmp_path / "comments.json"   # as `gh api --paginate` saves it: one array per page
        saved.write_text("".join(json.dumps(self.comments[i:i + 2]) for i in range(0, len(self.comments), 2)))
        rc, out, err = run_main(["ci", "--sticky-from", str(saved), "--comment-file", str(body_file),
                                 "--author", BOT], capsys)
        assert rc == 0, err
        action = out.strip()
        body = body_file.read_text()
        if action == "create":
            self.comments.append({"id": 200 + len(self.comments), "user": {"login": BOT}, "body": body})
        elif action.startswith("update "):
            (c,) = [c for c in self.comments if str(c["id"]) == action.split()[1]]
            c["body"] = body
        return action


def test_a_second_push_updates_the_sticky_comment_instead_of_adding_one(pr, tmp_path, monkeypatch, capsys):
    forge = Forge()
    first = run_ci(pr, tmp_path, monkeypatch, capsys)
    assert forge.push(tmp_path / "comment.md", tmp_path, capsys) == "create"
    (created,) = [c for c in forge.comments if c["user"]["login"] == BOT]
    git(pr.repo, "checkout", "-q", "-b", "pr-second-push", "pr")
    try:
        second_head = commit(pr.repo, "a second push: the notes", {"NOTES.md": "why a adds one\n"})
        second = run_ci(pr, tmp_path, monkeypatch, capsys, head_sha=second_head)
    finally:
        git(pr.repo, "checkout", "-q", "pr")
    assert second.body != first.body and f"/blob/{second_head}/ops/a.py#L6" in second.body
    assert forge.push(tmp_path / "comment.md", tmp_path, capsys) == f"update {created['id']}"
    assert forge.push(tmp_path / "comment.md", tmp_path, capsys) == f"unchanged {created['id']}"
    ours = [c for c in forge.comments if c["body"].startswith(MARKER) and c["user"]["login"] == BOT]
    assert len(ours) == 1 and ours[0]["body"] == second.body                     # one comment, the newest report
    assert forge.comments[1]["body"] == f"{MARKER}\nnot written by the bot"      # another's marker is left alone


def test_two_runs_on_one_head_write_the_same_comment_and_leave_it_unchanged(pr, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PTXDIFF_CACHE_DIR", str(tmp_path / "fresh-cache"))   # the first run compiles ...
    forge = Forge()
    first = run_ci(pr, tmp_path, monkeypatch, capsys)
    assert forge.push(tmp_path / "comment.md", tmp_path, capsys) == "create"
    second = run_ci(pr, tmp_path, monkeypatch, capsys)                       # ... the second reads the cache
    assert "compiled" in first.out and "from the local cache" in second.out  # the log says where rows came from
    assert second.body == first.body and "rows:" not in first.body          # the comment does not
    (ours,) = [c for c in forge.comments if c["user"]["login"] == BOT]
    assert forge.push(tmp_path / "comment.md", tmp_path, capsys) == f"unchanged {ours['id']}"


def test_an_approval_in_the_pull_request_passes_the_gate_as_at_push(pr, tmp_path, monkeypatch, capsys):
    git(pr.repo, "checkout", "-q", "-b", "pr-approved", "pr")
    try:
        approved = commit(pr.repo, "approve\n\nPtx-Approved: a_kernel")
        run = run_ci(pr, tmp_path, monkeypatch, capsys, head_sha=approved)
    finally:
        git(pr.repo, "checkout", "-q", "pr")
    assert run.rc == 0 and run.outputs["blocking"] == "false"
    assert "; passes" in run.body.splitlines()[1]
    assert f"ops/a.py::a_kernel (structural) passes, approved by {approved[:7]} (Ptx-Approved: a_kernel)" in run.body


def test_the_markdown_format_keeps_its_notes_out_of_the_table(pr, tmp_path, monkeypatch, capsys):
    """`ptxdiff diff --format markdown` pasted into a comment: one table, the notes paragraphs."""
    rc, out, err = run_main(["-C", str(pr.repo), "diff", "-q", "--target", "sm_90", "--format", "markdown",
                             f"{pr.base}...{pr.head}"], capsys)
    assert rc == 0, err
    page = html(out)
    assert page.count("<table>") == 1 and len(body_rows(page)) == 2
    after = page.split("</table>")[1]
    assert re.search(r"<p>ops/a.py::a_kernel \[sm_90 BLOCK=128 w4 s3\] structural: [^<]+</p>", after)
    assert not any("structural: " in td for td in re.findall(r"<td>(.*?)</td>", page, re.S))


def test_gitlab_variables_and_flags_say_what_to_compare(pr, tmp_path, monkeypatch, capsys):
    for var in FORGE_ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GITLAB_CI", "true")
    monkeypatch.setenv("CI_MERGE_REQUEST_DIFF_BASE_SHA", pr.merge_base)
    monkeypatch.setenv("CI_COMMIT_SHA", pr.head)
    monkeypatch.setenv("CI_SERVER_URL", "https://gitlab.example.com")
    monkeypatch.setenv("CI_PROJECT_PATH", "group/kernels")
    rc, _, err = run_main(["-C", str(pr.repo), "ci", "-q", "--target", "sm_90", "--comment-file",
                           str(tmp_path / "c.md"), "--json-file", str(tmp_path / "r.json")], capsys)
    assert rc == 1, err
    assert f"https://gitlab.example.com/group/kernels/-/blob/{pr.head}/ops/b.py#L6" in (tmp_path / "c.md").read_text()
    monkeypatch.delenv("GITLAB_CI")
    monkeypatch.delenv("CI_MERGE_REQUEST_DIFF_BASE_SHA")
    rc, _, err = run_main(["-C", str(pr.repo), "ci", "-q", "--comment-file", str(tmp_path / "c.md")], capsys)
    assert rc == 2 and "nothing to compare" in err and "--base REV" in err
    rc, _, err = run_main(["-C", str(pr.repo), "ci", "-q", "--base", "nope"], capsys)
    assert rc == 2 and "unknown revision 'nope'" in err


# ---------------------------------------------------------------------------------------------
# the pieces, without a repository

def test_events_say_base_head_and_where_the_files_are_shown():
    env = {"GITHUB_SERVER_URL": "https://ghe.example.com/", "GITHUB_REPOSITORY": "o/r"}
    event = {"number": 3, "pull_request": {"base": {"sha": "b" * 40}, "head": {"sha": "h" * 40}}}
    assert github_change(event, env) == Change("b" * 40, "h" * 40, "3", "https://ghe.example.com/o/r",
                                               source="the pull_request event")
    push = github_change({"before": "1" * 40, "after": "2" * 40, "repository": {"full_name": "o/x"}}, {})
    assert (push.base, push.head, push.root) == ("1" * 40, "2" * 40, "https://github.com/o/x")
    assert github_change({"before": "0" * 40, "after": "2" * 40}, {}).base is None     # a new branch: no base
    lab = gitlab_change({"CI_MERGE_REQUEST_DIFF_BASE_SHA": "b", "CI_COMMIT_SHA": "h", "CI_MERGE_REQUEST_IID": "5",
                         "CI_SERVER_URL": "https://gl.example", "CI_PROJECT_PATH": "g/p"})
    assert (lab.base, lab.head, lab.number, lab.root, lab.blob) == ("b", "h", "5", "https://gl.example/g/p", "-/blob")


def test_flags_win_over_the_environment_and_the_head_defaults_to_HEAD():
    assert change_from("main", None, {}).head == "HEAD"
    got = change_from("main", "feature", {"GITLAB_CI": "true", "CI_MERGE_REQUEST_DIFF_BASE_SHA": "x", "CI_COMMIT_SHA": "y"})
    assert (got.base, got.head, got.source) == ("main", "feature", "--base/--head")


def test_def_line_and_output_lines():
    src = b"import triton\n\n@triton.jit\ndef k(x):\n    pass\n\nasync def k2():\n    pass\n"
    assert (def_line(src, "k"), def_line(src, "k2"), def_line(src, "nope")) == (4, 7, None)
    assert github_lines({"a": "1", "b": "two\nlines"}) == "a=1\nb<<ptxdiff_EOF\ntwo\nlines\nptxdiff_EOF\n"


def test_the_action_runs_ptxdiff_ci_and_posts_by_the_sticky_rule():
    """action.yml, the workflow and the GitLab job docs/ci.md shows parse, run on pull_request
    (never _target), and leave every decision to `ptxdiff ci`."""
    yaml = pytest.importorskip("yaml")
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert re.search(r'"\$PTXDIFF" ci "\$\{opts\[@\]\}"', runs) and '"$PTXDIFF" ci --sticky-from' in runs
    assert any(s.get("uses", "").startswith("actions/upload-artifact@") for s in steps)
    assert any(s.get("env", {}).get("PTXDIFF_REMOTE_CACHE") == "${{ inputs.remote-cache }}" for s in steps)
    assert steps[-1]["run"].rstrip().endswith('exit "$STATUS"')         # the check is ptxdiff ci's status
    readme = (ROOT / "docs" / "ci.md").read_text()
    workflow = re.search(r"```yaml\n(# \.github/workflows/ptxdiff\.yml\n.*?)```", readme, re.S)
    assert workflow, "docs/ci.md: the workflow to paste"
    flow = yaml.safe_load(workflow.group(1))
    assert flow[True] == "pull_request"                 # the one trigger (PyYAML reads the key `on` as True)
    assert flow["permissions"]["pull-requests"] == "write"
    job = yaml.safe_load((ROOT / "docs" / "gitlab-ci.yml").read_text())
    assert "ptxdiff ci || status=$?" in "\n".join(job["ptxdiff"]["script"])
    shown = re.search(r"```yaml\n(ptxdiff:\n.*?)```", readme, re.S)
    assert shown and yaml.safe_load(shown.group(1)) == job                 # docs/ci.md shows docs/gitlab-ci.yml


def test_the_ci_recipes_cache_the_install_and_the_compiles_and_leave_the_job_python_alone():
    """action.yml: ptxdiff's own venv (setup-python without touching the job's PATH), kept by the
    versions it holds; the compile cache one entry per pull request, never one per push. The
    GitLab job: a pip cache, a cache per branch falling back to the default branch's, and the
    token's own user as the sticky note's author."""
    yaml = pytest.importorskip("yaml")
    steps = yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]
    (setup,) = [s for s in steps if s.get("uses", "").startswith("actions/setup-python@")]
    assert setup["with"]["update-environment"] is False                     # the job's python stays the job's
    runs = "\n".join(s.get("run", "") for s in steps)
    assert not re.search(r"(^|[\s(|;])python3?\s", runs, re.M)               # no bare `python`: the venv's own
    (install,) = [s for s in steps if s.get("id") == "installed"]
    key = install["with"]["key"]
    assert install["uses"].startswith("actions/cache/restore@") and install["with"]["path"] == "${{ steps.meta.outputs.venv }}"
    (kept,) = [s for s in steps if s.get("name") == "Save the install"]       # saved before the gate can fail the job
    assert kept["uses"].startswith("actions/cache/save@") and "steps.installed.outputs.cache-hit != 'true'" in kept["if"]
    assert steps.index(kept) < [s.get("id") for s in steps].index("ci")
    for part in ("steps.python.outputs.python-version", "steps.meta.outputs.version", "inputs.triton-version"):
        assert part in key
    (restore,) = [s for s in steps if s.get("id") == "compiled"]
    (save,) = [s for s in steps if s.get("name") == "Save the compile cache"]
    compile_keys = restore["with"]["key"] + restore["with"]["restore-keys"] + save["with"]["key"]
    assert not re.search(r"sha|run_id|run_number", key + compile_keys)       # nothing that changes per push
    assert "pull_request.number" in restore["with"]["key"] and "github.base_ref" in restore["with"]["restore-keys"]
    assert "steps.compiled.outputs.cache-hit != 'true'" in save["if"]          # saved once, then read
    assert save["with"]["key"] == "${{ steps.compiled.outputs.cache-primary-key }}"
    assert steps.index(restore) < [s.get("id") for s in steps].index("ci") < steps.index(save)

    job = yaml.safe_load((ROOT / "docs" / "gitlab-ci.yml").read_text())["ptxdiff"]
    caches = {c["paths"][0]: c for c in job["cache"]}
    assert job["variables"]["PIP_CACHE_DIR"] == "$CI_PROJECT_DIR/.pip-cache" and ".pip-cache/" in caches
    compiled = caches[".ptxdiff-cache/"]
    assert "$CI_COMMIT_REF_SLUG" in compiled["key"] and compiled["fallback_keys"] == ["ptxdiff-compile-$CI_DEFAULT_BRANCH"]
    script = "\n".join(job["script"])
    assert '"$CI_API_V4_URL/user"' in script and 'ptxdiff ci --sticky-from notes.json --author "$author"' in script
