"""Cut git's own patch output into per-file pieces, and say which file pair each piece is.

The driver re-runs the invoking git command twice (three times for log/show):
- P, exactly as the user asked plus `--no-ext-diff`: the bytes to print;
- T, the same plus `--full-index --src-prefix=<token A>/ --dst-prefix=<token B>/`: the same lines
  (prefixes and abbreviations change text inside a line, never the number of lines), where each
  file's header carries a random token no file content can contain, and full blob ids;
- T2 (log/show only), T plus `--no-graph --format=tformat:<token C> %H %P`: one marker line per
  commit, so each piece knows its commit and where it ends.
A piece is the lines from its `diff --git` header up to the next header, commit, combined diff,
or the end. Its identity (names, blob ids, modes) is read from its header lines in T.

Pure functions over bytes; only cheap imports (the driver's first call runs this), so plain
classes rather than dataclasses.
"""

from __future__ import annotations


def handled(path: bytes) -> bool:
    """A file git hands to the driver (`*.py`, `*.toml`, `*.jsonl diff=ptxdiff`): Python files and
    those that may hold launch values; kernel lines go under the one that changed a kernel."""
    return path.endswith((b".py", b".toml", b".jsonl"))


UNKNOWN = "*"   # a blob id or mode the header does not show (a pure rename, a mode change)
MISSING = "."   # the side git passes as /dev/null (a new or deleted file)


class Piece:
    """One file's part of git's patch output: its first line (in T and P), its number of lines,
    its names, blob ids and modes as git hands them to a driver, and the commit it belongs to
    (log/show: an index into the sections). A file that became a symlink (or back) is two
    pieces, a deletion and a creation, and git calls the driver for each."""

    __slots__ = ("start", "length", "old_path", "new_path", "section", "old_hex", "new_hex", "old_mode",
                 "new_mode")

    def __init__(self, start: int, length: int, old_path: bytes, new_path: bytes, section: int = 0):
        self.start, self.length, self.old_path, self.new_path, self.section = start, length, old_path, new_path, section
        self.old_hex = self.new_hex = self.old_mode = self.new_mode = UNKNOWN

    def __repr__(self) -> str:
        return f"Piece({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"

    @property
    def renamed(self) -> bool:
        return self.old_path != self.new_path


class Commit:
    """One commit's diff in log/show output: the commit, its parents, and which parent it is
    compared with (-m shows a merge once per parent, in order)."""

    __slots__ = ("commit", "parents", "parent_index")

    def __init__(self, commit: str, parents: tuple[str, ...], parent_index: int):
        self.commit, self.parents, self.parent_index = commit, parents, parent_index


def lines_of(data: bytes) -> list[bytes]:
    """Lines split on \\n only (a \\r inside a line is content), each keeping its \\n."""
    parts = data.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def strip_ansi(line: bytes) -> bytes:
    if b"\x1b" not in line:
        return line
    out = bytearray()
    i = 0
    while i < len(line):
        if line[i] == 0x1B and line[i + 1:i + 2] == b"[":
            j = i + 2
            while j < len(line) and (48 <= line[j] <= 57 or line[j] == 59):  # digits and ';'
                j += 1
            if j < len(line):
                i = j + 1  # the final byte (m, K, ...)
                continue
        out.append(line[i])
        i += 1
    return bytes(out)


_ESCAPES = {ord("a"): 7, ord("b"): 8, ord("t"): 9, ord("n"): 10, ord("v"): 11, ord("f"): 12, ord("r"): 13,
            ord('"'): 34, ord("\\"): 92}


def unquote(text: bytes) -> tuple[bytes, bytes]:
    """git's C-style quoted name at the start of `text` -> (name, rest after the closing quote)."""
    assert text[:1] == b'"'
    out = bytearray()
    i = 1
    while i < len(text):
        c = text[i]
        if c == 34:  # "
            return bytes(out), text[i + 1:]
        if c == 92 and i + 1 < len(text):  # backslash
            n = text[i + 1]
            if 48 <= n <= 51 and i + 3 < len(text):  # \ooo
                out.append(int(text[i + 1:i + 4], 8))
                i += 4
                continue
            out.append(_ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    raise ValueError("unterminated quoted name")


def _strip(name: bytes, tokens: tuple[bytes, bytes]) -> bytes | None:
    for tok in tokens:
        if name.startswith(tok):
            return name[len(tok):]
    return None


def parse_header(line: bytes, tok_a: bytes, tok_b: bytes) -> tuple[bytes, bytes] | None:
    """`diff --git <A><old> <B><new>` (either may be quoted; -R swaps A and B) -> (old, new)."""
    line = strip_ansi(line)
    i = line.find(b"diff --git ")
    if i < 0:
        return None
    body = line[i + len(b"diff --git "):].rstrip(b"\n")
    try:
        if body.startswith(b'"'):
            first, rest = unquote(body)
            if not rest.startswith(b" "):
                return None
            second = rest[1:]
        else:
            # the second name starts at the other token (plain or quoted); tokens occur nowhere else
            cut = -1
            for tok in (tok_b, tok_a):
                for form in (b" " + tok, b' "' + tok):
                    cut = body.find(form, 1)
                    if cut > 0:
                        break
                if cut > 0:
                    break
            if cut < 0:
                return None
            first, second = body[:cut], body[cut + 1:]
        if second.startswith(b'"'):
            second = unquote(second)[0]
    except ValueError:
        return None
    old, new = _strip(first, (tok_a, tok_b)), _strip(second, (tok_a, tok_b))
    if old is None or new is None:
        return None
    return old, new


def _identity(piece: Piece, header_lines: list[bytes]) -> None:
    """Fill modes and blob ids from a piece's extended header lines (ANSI-stripped)."""
    for raw in header_lines[1:]:
        ln = raw.rstrip(b"\n")
        if ln.startswith((b"--- ", b"+++ ", b"@@", b"Binary files ", b"GIT binary patch")):
            break
        word = ln.split(b" ")
        if ln.startswith(b"new file mode "):
            piece.old_hex, piece.old_mode, piece.new_mode = MISSING, MISSING, word[-1].decode()
        elif ln.startswith(b"deleted file mode "):
            piece.new_hex, piece.new_mode, piece.old_mode = MISSING, MISSING, word[-1].decode()
        elif ln.startswith(b"old mode "):
            piece.old_mode = word[-1].decode()
        elif ln.startswith(b"new mode "):
            piece.new_mode = word[-1].decode()
        elif ln.startswith(b"index ") and b".." in word[1]:
            old, _, new = word[1].partition(b"..")
            if piece.old_hex != MISSING:
                piece.old_hex = old.decode()
            if piece.new_hex != MISSING:
                piece.new_hex = new.decode()
            if len(word) > 2:
                piece.old_mode = piece.new_mode = word[2].decode()


def split(t_lines: list[bytes], tok_a: bytes, tok_b: bytes, t2_lines: list[bytes] | None = None,
          tok_c: bytes = b"") -> tuple[list[Piece], list[Commit]]:
    """Pieces of T (and, for log/show, the commits from T2) in output order."""
    def is_header(line: bytes) -> bool:
        return b"diff --git " in line and (tok_a in line or tok_b in line)

    def is_end(line: bytes) -> bool:
        plain = strip_ansi(line)
        return (is_header(line) or plain.startswith((b"diff --cc ", b"diff --combined ", b"* Unmerged path "))
                or (bool(tok_c) and tok_c in line))

    # extents and sections, from T2 when there is one (its commit markers end the last piece of
    # each commit), else from T itself
    source = t2_lines if t2_lines is not None else t_lines
    lengths: list[tuple[int, int]] = []  # (length, section) per piece, in order
    sections: list[Commit] = []
    i = 0
    while i < len(source):
        line = source[i]
        if tok_c and tok_c in line:
            words = strip_ansi(line).split(tok_c, 1)[1].split()
            commit = words[0].decode() if words else ""
            parents = tuple(w.decode() for w in words[1:])
            repeat = sections[-1].parent_index + 1 if sections and sections[-1].commit == commit else 0
            sections.append(Commit(commit, parents, repeat))
            i += 1
            continue
        if is_header(line):
            j = i + 1
            while j < len(source) and not is_end(source[j]):
                j += 1
            lengths.append((j - i, len(sections) - 1))
            i = j
            continue
        i += 1
    starts = [n for n, line in enumerate(t_lines) if is_header(line)]
    if len(starts) != len(lengths):
        raise ValueError(f"{len(starts)} file headers in one re-run, {len(lengths)} in the other")
    pieces: list[Piece] = []
    for start, (length, section) in zip(starts, lengths):
        head = [strip_ansi(ln) for ln in t_lines[start:start + min(length, 16)]]
        names = parse_header(head[0], tok_a, tok_b)
        if names is None:
            raise ValueError(f"unreadable file header: {head[0][:200]!r}")
        piece = Piece(start, length, names[0], names[1], max(section, 0))
        _identity(piece, head)
        pieces.append(piece)
    return pieces, sections


def piece_bytes(p_lines: list[bytes], piece: Piece) -> bytes:
    return b"".join(p_lines[piece.start:piece.start + piece.length])


def matches(piece: Piece, args: list[bytes]) -> bool:
    """Whether git's driver arguments (path old-file old-hex old-mode new-file new-hex new-mode
    [new-path header]) name this piece. A work-tree side comes with an all-zero id."""
    if len(args) not in (7, 9):
        return False
    new_path = args[7] if len(args) == 9 else args[0]
    if args[0] != piece.old_path or new_path != piece.new_path:
        return False
    old_hex, old_mode, new_hex, new_mode = (a.decode("ascii", "replace") for a in (args[2], args[3], args[5], args[6]))
    for got, want in ((old_hex, piece.old_hex), (new_hex, piece.new_hex), (old_mode, piece.old_mode),
                      (new_mode, piece.new_mode)):
        if want != UNKNOWN and got != want and not (want != MISSING and got and set(got) == {"0"}):
            return False
    return True
