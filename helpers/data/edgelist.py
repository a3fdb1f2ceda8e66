"""Reading edge lists as SNAP writes them ('#' comments, two integer ids per line, optionally gzipped), with
one definition of a line for every pass (``_blocks``); only regular files are opened, a FIFO is refused."""
from __future__ import annotations

import contextlib
import errno
import gzip
import io
import os
import re
import stat
import warnings
import zlib
from pathlib import Path

import numpy as np

from helpers.core.arguments import GraphFormatError, as_path, check_integer
from helpers.core.graph import INT64_LIMIT, PARSE_BYTES_PER_LINE, check_host_memory

UTF8_BOM = b"\xef\xbb\xbf"


class NotRegularFileError(OSError):
    """A FIFO, device, socket or folder where a file was expected: refused unread (reading could block)."""

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


READ_ERRORS = (EOFError, OSError, zlib.error)
_INTEGER = re.compile(r"[+-]?[0-9]+")
_LINE = re.compile(r"[ \t]*[+-]?[0-9]+[ \t]+[+-]?[0-9]+[ \t]*")   # an edge line without comment or end
_COMMENT = re.compile(rb"#[^\n]*")
_BODY_BYTES = b"0123456789+- \t\n"       # all an edge list holds outside its comments, its line ends as \n
MAX_LINE_BYTES = 1 << 20     # an edge line is two ids; a longer line is refused before it is read whole
BLOCK_BYTES = 1 << 22        # the first pass reads this much at a time
LINE_BLOCK_BYTES = 1 << 16   # the line-by-line passes (the header, the exact check) read this much at a time


class EdgeListNotFound(GraphFormatError, FileNotFoundError):
    """No edge-list file at the path given (a GraphFormatError and a FileNotFoundError)."""


def file_kind(mode: int) -> str:
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
            else "a device or socket")


def open_regular(path):
    """``path`` opened for binary reading if a regular file, else NotRegularFileError (checked unread)."""
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as error:                  # a socket cannot be opened at all (ENXIO): say what it is
        if error.errno != errno.ENXIO:
            raise
        raise _not_regular(path, os.stat(path).st_mode) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _not_regular(path, mode: int) -> NotRegularFileError:
    return NotRegularFileError(errno.EINVAL, f"it is {file_kind(mode)}, not a regular file", os.fspath(path))


GZIP_MAGIC = b"\x1f\x8b"
OTHER_FORMATS = {b"BZh": "a bzip2 file", b"PK\x03\x04": "a zip archive", b"\xfd7zXZ\x00": "an xz file",
                 b"\x28\xb5\x2f\xfd": "a zstd file", b"7z\xbc\xaf\x27\x1c": "a 7-Zip archive",
                 b"<!doctype html": "an HTML page", b"<html": "an HTML page"}


def other_format(start: bytes) -> str | None:
    """What a file starting with these bytes is, where no edge list ('an HTML page', ...); else None."""
    return next((what for magic, what in OTHER_FORMATS.items()
                 if start.startswith(magic) or start.lstrip().lower().startswith(magic)), None)


@contextlib.contextmanager
def opened(path: Path):
    """The file's bytes, decompressed when they start as gzip does (whatever the name); GraphFormatError for
    another compression format or an HTML page (a server's error or login page)."""
    with open_regular(path) as raw:
        start = raw.read(64)
        raw.seek(0)
        if start.startswith(GZIP_MAGIC):
            with gzip.GzipFile(fileobj=raw, mode="rb") as unzipped:
                yield unzipped
            return
        what = other_format(start)
        if what is not None:
            raise GraphFormatError(f"{path}: it is {what}, not an edge list (plain text, or gzip-compressed)")
        yield raw


def _too_long(path: Path, number: int) -> GraphFormatError:
    return GraphFormatError(f"{path}: line {number:,} is longer than {MAX_LINE_BYTES:,} bytes, which no "
                            f"edge list holds (two ids per line): the file is not an edge list, or it is "
                            f"damaged")


def _blocks(raw, path: Path, size: int = BLOCK_BYTES):
    """THE definition of a line: blocks of whole lines (lines before, lines in it, block), every line end as
    \\n; a UTF-8 mark is skipped, a line over MAX_LINE_BYTES raises GraphFormatError."""
    lines, carry = 0, raw.read(len(UTF8_BOM))
    carry = b"" if carry == UTF8_BOM else carry
    while True:
        chunk = raw.read(size)
        data, held = carry + chunk, b""
        if chunk and data.endswith(b"\r"):          # maybe the first half of \r\n: decided with the next read
            data, held = data[:-1], b"\r"
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if not chunk and data and not data.endswith(b"\n"):
            data += b"\n"
        cut = data.rfind(b"\n") + 1
        block, carry = data[:cut], data[cut:]
        if block:
            ends = np.flatnonzero(np.frombuffer(block, np.uint8) == 10)
            long = np.flatnonzero(np.diff(ends, prepend=-1) > MAX_LINE_BYTES + 1)
            if long.size:
                raise _too_long(path, lines + int(long[0]) + 1)
            yield lines, ends.size, block
            lines += ends.size
        if len(carry) > MAX_LINE_BYTES:
            raise _too_long(path, lines + 1)
        carry += held
        if not chunk:
            return


def lines_of(raw, path: Path):
    """(number, text) of each line as ``_blocks`` ends it, without its end, read as latin-1."""
    for before, _, block in _blocks(raw, path, LINE_BLOCK_BYTES):
        yield from enumerate(block.decode("latin-1").split("\n")[:-1], before + 1)


def edge_text(line: str) -> str | None:
    """What a line holds before any '#' comment; None where only spaces and tabs (skipped by every pass)."""
    text = line.split("#", 1)[0]
    return text if text.strip(" \t") else None


def damaged(path: Path, error) -> GraphFormatError:
    what = ("the compressed file is damaged or truncated" if isinstance(error, (EOFError, zlib.error,
                                                                               gzip.BadGzipFile))
            else "the file cannot be read")
    return GraphFormatError(f"{path}: {what} ({type(error).__name__}: {error})")


def _shown(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _scan(path: Path, max_lines: int | None) -> int | None:
    """First pass: the number of edge lines, None for a byte that breaks the format; with ``max_lines``,
    GraphFormatError past that many edge lines (or blank and comment lines beyond one per edge line)."""
    edges = 0
    with opened(path) as raw:
        for before, lines, block in _blocks(raw, path):
            body = _COMMENT.sub(b"", block) if b"#" in block else block
            if body.translate(None, _BODY_BYTES):     # a byte that is not ours
                return None
            squeezed = body.translate(None, b" \t")
            blank = 0
            if squeezed.startswith(b"\n") or b"\n\n" in squeezed:
                newline = np.frombuffer(squeezed, np.uint8) == 10
                blank = int(newline[0]) + int((newline[1:] & newline[:-1]).sum())
            edges += lines - blank
            lines += before
            if max_lines is not None and max(edges, lines - 2 * edges) > max_lines:
                what = ("edge lines" if edges > max_lines else
                        "blank or comment lines beyond one per edge line")
                raise GraphFormatError(f"{path}: more than {max_lines:,} {what}")
    return edges


def _first_bad_line(path: Path, num_vertices: int | None) -> str | None:
    """Slow, exact pass: the first line that breaks the format, described; None if every line is fine."""
    with opened(path) as raw:
        for number, line in lines_of(raw, path):
            text = edge_text(line)
            if text is None:
                continue
            tokens = text.split()
            if not tokens:               # a form feed, vertical tab, NBSP...: not blank, not an edge
                return (f"line {number}: a line without ids may hold only spaces and tabs (and a '#' "
                        f"comment), found {_shown(text)}")
            if len(tokens) != 2:
                return (f"line {number}: expected two vertex ids (source target), "
                        f"found {len(tokens)} column(s): {_shown(text.strip())}")
            for token in tokens:
                if not _INTEGER.fullmatch(token):
                    return f"line {number}: {_shown(token)} is not an integer vertex id"
                if len(token) > 100:                  # before int(), which refuses 4,300 digits and more
                    return (f"line {number}: vertex id {_shown(token)} has {len(token):,} characters and "
                            f"does not fit in 64 bits (ids must lie below 2**63)")
                value = int(token)
                if value < 0:
                    return f"line {number}: negative vertex id {value}"
                if value >= INT64_LIMIT:
                    return (f"line {number}: vertex id {value} does not fit in 64 bits (ids must lie below "
                            f"2**63)")
                if num_vertices is not None and value >= num_vertices:
                    return (f"line {number}: vertex id {value} is beyond the declared vertex count "
                            f"{num_vertices} (ids run 0..{num_vertices - 1})")
            if not _LINE.fullmatch(text):
                return f"line {number}: ids must be separated by spaces or tabs, found {_shown(text)}"
    return None


def existing(path) -> Path:
    path = as_path(path)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        raise EdgeListNotFound(f"no edge-list file at {path}") from None
    if not stat.S_ISREG(mode):
        raise EdgeListNotFound(f"no edge-list file at {path}: it is {file_kind(mode)}, not a regular file")
    return path


_NUMPY_OPENS = {".gz": True, ".bz2": None, ".xz": None, ".lzma": None}   # np.loadtxt decompresses by name


def _parse(path: Path, count: int, spare: int = 1) -> np.ndarray | None:
    """NumPy's reader over a file the first pass found clean, ``count`` rows and at most ``spare`` more (so
    that rows the first pass did not count show); None where it refuses a line."""
    check_host_memory(count * PARSE_BYTES_PER_LINE, f"reading {count:,} edge lines of {path.name}",
                      f"{PARSE_BYTES_PER_LINE} bytes per line", "read a smaller file")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)          # "... not counted towards max_rows": known
        warnings.simplefilter("error", DeprecationWarning)    # NumPy < 2.1 reads '1.5' as 1, with a warning
        try:
            with opened(path) as raw:
                bom = raw.read(len(UTF8_BOM)) == UTF8_BOM
                if not bom and _NUMPY_OPENS.get(path.suffix, False) == isinstance(raw, gzip.GzipFile):
                    stream = path          # NumPy opens it as the first pass did: its own, faster reader
                else:                      # rare: the stream the first pass read, the mark skipped
                    raw.seek(len(UTF8_BOM) if bom else 0)
                    stream = io.TextIOWrapper(raw, encoding="latin-1", newline=None)
                return np.loadtxt(stream, dtype=np.int64, comments="#", ndmin=2, encoding="latin-1",
                                  max_rows=count + spare)
        except (ValueError, DeprecationWarning):
            return None


def _parting_line(path: Path, pairs: np.ndarray | None, count: int) -> str:
    """Where the passes part on a file the exact pass accepts (a defect of ours): the first line after the
    last one both read alike; where NumPy refused the file, its first rows are found by bisecting."""
    if pairs is None:
        good, bad = 0, count + 1
        while bad - good > 1:
            middle = (good + bad) // 2
            good, bad = (middle, bad) if _parse(path, middle, 0) is not None else (good, middle)
        pairs = _parse(path, good, 0) if good else np.empty((0, 2), np.int64)
    rows, agreed, after = pairs.tolist(), 0, None
    with opened(path) as raw:
        for number, line in lines_of(raw, path):
            after = after or (number, line)
            text = edge_text(line)
            if text is None:
                continue
            if agreed >= min(len(rows), count) or rows[agreed] != [int(token) for token in text.split()]:
                break
            agreed, after = agreed + 1, None
    number, line = after or (number, line)
    return (f"line {number}: the passes over the file read its lines differently from here on "
            f"({_shown(line)}); refused rather than read one way or the other (a defect of this reader: "
            f"please report it, with the file)")


def read_edge_pairs(path, num_vertices: int | None = None, *, max_lines: int | None = None) -> np.ndarray:
    """The (k, 2) int64 array of id pairs of an edge list, one row per edge line, checked (integers, two a
    line, none negative, below ``num_vertices``); with ``max_lines``, a longer file is refused early."""
    path = existing(path)
    if num_vertices is not None:
        num_vertices = check_integer(num_vertices, "num_vertices", minimum=1)
    if max_lines is not None:
        max_lines = check_integer(max_lines, "max_lines", minimum=1)
    try:
        count = _scan(path, max_lines)
        if count == 0:
            raise GraphFormatError(f"{path}: no edges found (the file is empty or holds only comments)")
        pairs = None if count is None else _parse(path, count)
        if (pairs is None or pairs.shape != (count, 2) or (pairs < 0).any()
                or (num_vertices is not None and (pairs >= num_vertices).any())):
            detail = _first_bad_line(path, num_vertices)
            if detail is None and count is not None:
                detail = _parting_line(path, pairs, count)
            raise GraphFormatError(f"{path}: {detail or 'expected two vertex ids per line'}")
    except READ_ERRORS as error:
        raise damaged(path, error) from None
    return pairs
