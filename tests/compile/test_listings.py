"""SASS for the HTML report, paid for only by a page: the worker keeps each cubin packed
(bounded, and a packed cubin unpacks only to what it was), `disassemble` turns cubins into the
normalised listing, and `listings` keeps what it disassembled in the store so the next page
disassembles nothing; a page whose SASS cannot be had gets none and a reason."""

from __future__ import annotations

import base64
import zlib

import pytest

from helpers import DATA
from ptxdiff.compile import disassemble, listings
from ptxdiff.compile.disassemble import Listing, pack, unpack
from ptxdiff.errors import SandboxError
from ptxdiff.metrics.sass import normalise_sass

PTX = DATA / "ptx"


def cubin(tag: str) -> bytes:
    return (PTX / f"{tag}.cubin").read_bytes()


def test_a_packed_cubin_is_a_third_of_its_size_and_unpacks_to_itself():
    raw = cubin("add")
    packed = pack(raw)
    assert packed is not None and len(packed) < len(raw) / 2 and unpack(packed) == raw


def test_a_cubin_too_large_packed_is_not_kept(monkeypatch):
    monkeypatch.setattr(disassemble, "CUBIN_MAX", 100)
    assert pack(cubin("add")) is None


@pytest.mark.parametrize("bad", [
    "not base64 at all!",
    base64.b64encode(b"not zlib").decode(),
    base64.b64encode(zlib.compress(bytes(range(256)) * 4)[:20]).decode(),      # cut short
])
def test_what_is_not_a_packed_cubin_does_not_unpack(bad):
    with pytest.raises(ValueError, match="not a packed cubin"):
        unpack(bad)


def test_unpacking_stops_at_the_bound(monkeypatch):
    monkeypatch.setattr(disassemble, "UNPACKED_MAX", 1000)
    with pytest.raises(ValueError, match="larger than a cubin can be"):
        unpack(base64.b64encode(zlib.compress(b"\0" * 100_000)).decode())


@pytest.mark.integration
def test_disassemble_gives_the_normalised_listing_of_each_cubin_in_order():
    got = disassemble.disassemble([pack(cubin("fma")), pack(cubin("add")), "garbage!"], jobs=2)
    assert got[0].error is None and got[0].text.startswith("axpy_kernel:\n") and "FFMA" in got[0].text
    assert got[1] == Listing(normalise_sass((PTX / "add.nvdisasm").read_text()))
    assert got[2].text is None and "not a packed cubin" in got[2].error


@pytest.fixture
def counted(monkeypatch):
    """listings' disassembly in this process, each cubin it was asked for counted."""
    asked: list[str] = []

    def run(todo: list[str], jobs: int, unsandboxed: bool) -> list[Listing]:
        asked.extend(todo)
        return disassemble.disassemble(todo, jobs)
    monkeypatch.setattr(listings, "_run", run)
    return asked


@pytest.mark.integration
def test_a_listing_is_disassembled_once_and_read_from_the_store_after(tmp_path, counted):
    add, mul = pack(cubin("add")), pack(cubin("fma"))
    said: list[str] = []
    first = listings.listings([add, mul, add], tmp_path, 2, progress=said.append)
    assert counted == [add, mul] and first.disassembled == 2 and first.error is None
    assert said == ["disassembling 2 cubins for the page's SASS (stored after)"]
    assert first.texts[add] == normalise_sass((PTX / "add.nvdisasm").read_text())
    again = listings.listings([mul, add], tmp_path, 2, progress=said.append)
    assert counted == [add, mul] and again.disassembled == 0 and again.texts == first.texts and len(said) == 1
    assert len(list((tmp_path / "sass").glob("*/*.sass.gz"))) == 2


@pytest.mark.integration
def test_without_a_store_nothing_is_kept(tmp_path, counted):
    add = pack(cubin("add"))
    listings.listings([add], None, 1)
    listings.listings([add], None, 1)
    assert counted == [add, add]


@pytest.mark.integration
def test_a_failed_listing_is_not_stored_and_says_why(tmp_path, counted):
    found = listings.listings(["garbage!", pack(cubin("add"))], tmp_path, 1)
    assert list(found.texts) == [pack(cubin("add"))] and "not a packed cubin" in found.error
    listings.listings(["garbage!"], tmp_path, 1)
    assert counted.count("garbage!") == 2


def test_no_nvdisasm_no_sass_and_the_reason(tmp_path, monkeypatch, counted):
    monkeypatch.setenv("PTXDIFF_NVDISASM", str(tmp_path / "absent"))
    found = listings.listings([pack(cubin("add"))], tmp_path, 1)
    assert found.texts == {} and found.error.startswith("nvdisasm not found") and counted == []


def test_a_sandbox_that_cannot_be_had_gives_no_sass_and_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(listings.probe, "unavailable", lambda: "no Landlock here")
    found = listings.listings([pack(cubin("add"))], tmp_path, 1, unsandboxed=False)
    assert found.texts == {} and found.error == "cannot sandbox nvdisasm: no Landlock here"


@pytest.mark.integration
def test_a_sandbox_turned_off_by_the_user_disassembles_here(tmp_path, monkeypatch):
    def sealed(*args, **kwargs):
        raise SandboxError("not this way")
    monkeypatch.setattr("ptxdiff.compile.pool.sandboxed_call", sealed)
    found = listings.listings([pack(cubin("add"))], tmp_path, 1, unsandboxed=True)
    assert found.error is None and found.texts[pack(cubin("add"))].startswith("add_kernel:\n")


@pytest.mark.integration
def test_the_store_is_cleared_with_the_cache(tmp_path, counted):
    from ptxdiff.compare.cache import Cache

    listings.listings([pack(cubin("add"))], tmp_path, 1)
    assert Cache(tmp_path).clear().failed == ()
    assert not list((tmp_path / "sass").glob("*/*.sass.gz"))
