"""The content-addressed store on a tmp folder: what `put` wrote is read back, anything else is
a miss; pruning keeps the most recently read; clearing deletes only files of ours."""

from __future__ import annotations

import gzip
import json
import os

import pytest

from ptxdiff.store import Cleared, Store

KEY = "ab" + "0" * 38


def store(tmp_path, fan_out: bool = True, format: int = 2) -> Store:
    return Store(tmp_path / "s", ".json.gz", lambda v: isinstance(v, dict) and "n" in v, format, fan_out)


@pytest.mark.parametrize("fan_out, where", [(True, f"ab/{KEY}.json.gz"), (False, f"{KEY}.json.gz")])
def test_put_then_get(tmp_path, fan_out, where):
    s = store(tmp_path, fan_out)
    assert s.get(KEY) is None
    s.put(KEY, {"n": 1})
    assert s.path(KEY) == tmp_path / "s" / where and s.path(KEY).is_file()
    assert s.get(KEY) == {"n": 1}


def test_the_same_value_gives_the_same_bytes(tmp_path):
    s = store(tmp_path)
    assert s.encode(KEY, {"n": 1}) == s.encode(KEY, {"n": 1}) != s.encode(KEY, {"n": 2})
    assert json.loads(gzip.decompress(s.encode(KEY, {"n": 1}))) == {"format": 2, "key": KEY, "value": {"n": 1}}


def entry(s: Store, **changes: object) -> bytes:
    return gzip.compress(json.dumps({"format": s.format, "key": KEY, "value": {"n": 1}, **changes}).encode())


@pytest.mark.parametrize("damage", ["truncated", "not gzip", "not json", "other key", "older format",
                                    "fails the check", "no value", "not an envelope"])
def test_an_entry_that_cannot_be_trusted_is_a_miss(tmp_path, damage):
    s = store(tmp_path)
    data = {"truncated": s.encode(KEY, {"n": 1})[:-9], "not gzip": b"{}", "not json": gzip.compress(b"{"),
            "other key": entry(s, key="cd" + "0" * 38), "older format": entry(s, format=1),
            "fails the check": entry(s, value={"m": 1}), "no value": gzip.compress(b'{"format": 2, "key": "%s"}'
                                                                                   % KEY.encode()),
            "not an envelope": gzip.compress(b"[1, 2]")}[damage]
    s.write(KEY, data)
    assert s.path(KEY).read_bytes() == data
    assert s.get(KEY) is None


def test_a_store_that_cannot_be_written_is_quiet(tmp_path):
    (tmp_path / "s").write_text("a file where the folder should be")
    s = store(tmp_path)
    s.put(KEY, {"n": 1})
    assert s.get(KEY) is None


def keys(n: int) -> list[str]:
    return [f"{i:02x}" + "0" * 38 for i in range(n)]


def test_prune_deletes_the_least_recently_read_first(tmp_path):
    s = store(tmp_path)
    for age, key in enumerate(keys(4)):
        s.put(key, {"n": 1})
        os.utime(s.path(key), (1000 + age, 1000 + age))
    assert s.get(keys(4)[0]) == {"n": 1}    # read now: the newest
    size = {k: s.path(k).stat().st_size for k in keys(4)}
    assert s.prune(max_entries=2) == (2, size[keys(4)[3]] + size[keys(4)[0]])
    assert [s.get(k) is not None for k in keys(4)] == [True, False, False, True]
    os.utime(s.path(keys(4)[3]), (2000, 2000))    # [3] now the older of the two
    assert s.prune(max_bytes=size[keys(4)[0]]) == (1, size[keys(4)[0]])
    assert s.prune() == (0, size[keys(4)[0]])
    assert [p.name for _, _, p in s.entries()] == [s.path(keys(4)[0]).name]


def test_clear_deletes_only_ours(tmp_path):
    s = store(tmp_path)
    for key in keys(3):
        s.put(key, {"n": 1})
    (tmp_path / "s" / "00" / f"{keys(1)[0]}.json.gz.123-4.tmp").write_bytes(b"x")   # a stray temp file of ours
    (tmp_path / "s" / "01" / "notes.txt").write_text("not ours")
    (tmp_path / "s" / "other").mkdir()
    assert s.clear() == Cleared(3, ())
    assert sorted(str(p.relative_to(tmp_path / "s")) for p in (tmp_path / "s").rglob("*")) == \
        ["01", "01/notes.txt", "other"]


def test_clear_of_a_flat_store_keeps_its_folder(tmp_path):
    s = store(tmp_path, fan_out=False)
    s.put(KEY, {"n": 1})
    (tmp_path / "s" / "README").write_text("not ours")
    assert s.clear() == Cleared(1, ())
    assert [p.name for p in (tmp_path / "s").iterdir()] == ["README"]
    assert store(tmp_path / "none", fan_out=False).clear() == Cleared(0, ())


def test_clear_says_what_it_could_not_delete(tmp_path):
    s = store(tmp_path)
    s.put(KEY, {"n": 1})
    stuck = s.root / "00" / f"{'0' * 40}.json.gz"
    (stuck / "inside").mkdir(parents=True)   # named as an entry, but a folder: unlink fails (even as root)
    cleared = s.clear()
    assert cleared.removed == 1 and [path for path, _ in cleared.failed] == [str(stuck)]
    assert stuck.is_dir() and s.get(KEY) is None


@pytest.mark.parametrize("max_bytes, max_entries, kept", [
    (None, None, 4), (None, 4, 4), (None, 0, 0), (3, None, 3), (3, 2, 2), (1, 3, 1), (0, None, 0),
])
def test_prune_fits_both_bounds_given_oldest_first(tmp_path, max_bytes, max_entries, kept):
    """Four entries of 100 bytes each, oldest first: max_bytes is counted here in entries."""
    s, size = store(tmp_path), 100
    for age, key in enumerate(keys(4)):
        s.write(key, b"x" * size)
        os.utime(s.path(key), (1000 + age, 1000 + age))
    got = s.prune(None if max_bytes is None else max_bytes * size, max_entries)
    assert got == (4 - kept, kept * size)
    assert [s.path(k).exists() for k in keys(4)] == [False] * (4 - kept) + [True] * kept
