"""Fetching one file over http(s) through pooch's HTTP downloader (requests underneath): a per-read timeout,
redirects kept within http(s), a size limit, an overall deadline and retries of what retrying can cure, every
failure told in the project's own words (DownloadError, IntegrityError) without the libraries' noise.
An address may carry a user name and password (https://user:password@host/...): the request uses them, and
no message, error or record ever shows them (``redact``, ``scrub``).
"""
from __future__ import annotations

import http.client
import os
import re
import socket
import ssl
import threading
import time
import warnings
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pooch
import requests

from helpers.core.arguments import ArgumentError, as_path, check_flag, check_integer, check_seconds
from helpers.core.progress import bar, say
from helpers.data.graphfiles import other_format

MIN_RATE = 10_000          # bytes/s: the default deadline allows the file's size at this rate ...
DEADLINE_SLACK = 120.0     # ... plus this many seconds
RETRY_PAUSE = 1.0          # seconds before the second attempt, doubled for each further one (at most 8x)
MAX_REDIRECTS = 10
MAX_TIMEOUT = 24 * 3600.0  # seconds: the longest per-read timeout (a larger one overflows the socket's clock)
CHUNK = 1 << 16
HEADERS = {"Accept-Encoding": "identity", "Connection": "close", "User-Agent": "pagerank-on-the-gpu"}


class DownloadError(RuntimeError):
    """The file could not be fetched (network, host, HTTP status, deadline, timeout); nothing was cached."""


class IntegrityError(RuntimeError):
    """The file arrived but is not what the registry describes; nothing was cached."""


_AUTHORITY = re.compile(r"(\s*(?:[A-Za-z][A-Za-z0-9+.-]*:)?//)?([^/?#]*)")
_HOST_PORT = re.compile(r"(\[[^\]]*\]|[^:/?#@\[\]]*)(:[0-9]*)?")     # what may stand before a path
_USERINFO_IN_TEXT = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s]*@")


def _userinfo(url: str) -> tuple[int, int] | None:
    """Where an address's user name and password lie: (start, end just past their '@'), or None. They run
    to the last '@' of the host part; a password holding an unescaped '/', '?' or '#' ends that part early
    (leaving no host[:port] before a '/', or an '@' before any '/'), and then they run on to its '@'."""
    found = _AUTHORITY.match(url)
    start, authority, rest = found.start(2), found.group(2), url[found.end():]
    if "@" in authority:
        return start, start + authority.rindex("@") + 1
    first = rest.find("@")
    if first < 0 or ("/" in rest[:first] and _HOST_PORT.fullmatch(authority)):
        return None                           # an '@' in the path ('.../a@b'): no user name
    slash = rest.find("/", first)
    return start, found.end() + rest.rindex("@", 0, len(rest) if slash < 0 else slash) + 1


def redact(url) -> str:
    """The address without the user name and password it may carry (``_userinfo``), for whatever leaves
    the process: a message, an error, a record in the cache."""
    url = str(url)
    span = _userinfo(url)
    return url if span is None else url[:span[0]] + url[span[1]:]


def scrub(text, url: str = "") -> str:
    """``text`` (a message, a library's error) without the userinfo of any address written in it, nor that
    of ``url`` where it appears on its own (a library may print a host part without its scheme)."""
    text = _USERINFO_IN_TEXT.sub(r"\1", str(text))
    span = _userinfo(url) if url else None
    if span is not None:
        userinfo = url[span[0]:span[1] - 1]
        for secret in {userinfo, unquote(userinfo)} - {""}:
            text = text.replace(secret + "@", "")
    return text


class _Retry(Exception):
    """A failure another attempt may cure (connection, reset, timeout, HTTP 5xx); says what happened."""


class _Transfer:
    """One attempt, shared by the thread that runs pooch's downloader and the caller that watches it: the
    response hook (every answer, redirects included) and the file-like target the body is written to."""

    def __init__(self, file, limit: int):
        self.file, self.limit = file, limit
        self.received, self.total, self.hops = 0, None, 0
        self.response, self.error, self.answered, self.cancelled = None, None, False, False
        self.notes = []                    # warnings for the caller to print (a redirect to plain http)

    def hook(self, response, *args, **kwargs):
        location = response.headers.get("Location", "").strip()
        if response.is_redirect and location:          # requests follows a Location that is not blank
            self.hops += 1
            target = urljoin(response.url, location)
            scheme = urlsplit(target).scheme.lower()
            if scheme not in ("http", "https"):
                raise DownloadError(f"the server redirected to {redact(target)[:200]!r}, which is not an "
                                    f"http(s):// address")
            if self.hops > MAX_REDIRECTS:
                raise DownloadError(f"more than {MAX_REDIRECTS} redirects")
            if scheme == "http" and urlsplit(response.url).scheme.lower() == "https":
                self.notes.append(f"redirected from https:// to plain http:// ({redact(target)[:200]}): "
                                  f"the transfer is not authenticated")
            return response
        self.response = response
        status, reason = response.status_code, _printable(response.reason)
        if 400 <= status < 600:                # named (and 5xx retried) by the caller's thread
            return response
        if status != 200:
            what = "a redirect without a Location" if status in (301, 302, 303, 307, 308) else "not the file"
            raise DownloadError(f"the server answered HTTP {status}" + (f" ({reason})" if reason else "") +
                                f", {what}")
        said = {v.strip() for v in response.headers.get("Content-Length", "").split(",")} - {""}
        if len(said) > 1 or not all(v.isascii() and v.isdigit() and len(v) <= 20 for v in said):
            raise DownloadError(f"the server's answer is not valid HTTP: a Content-Length of "
                                f"{', '.join(sorted(said))[:60]!r} is not one number of bytes")
        self.total = int(said.pop()) if said else None
        if self.total is not None and self.total > self.limit:
            raise IntegrityError(f"the server announces {self.total:,} bytes, more than an edge list of "
                                 f"this size can take ({self.limit:,}); it is not the dataset")
        self.answered = True
        return response

    def write(self, data: bytes) -> None:
        if self.cancelled:
            raise DownloadError("cancelled")
        self.received += len(data)
        if self.received > self.limit:
            raise IntegrityError(f"the server sent more than {self.limit:,} bytes, more than an edge list "
                                 f"of this size can take; it is not the dataset")
        try:
            self.file.write(data)
        except OSError as error:
            raise DownloadError(f"could not write the download: {error.strerror or error}") from None

    def flush(self) -> None:
        pass

    def cancel(self) -> None:
        """Stop the other thread: no more writes, and a read that waits on the socket wakes up."""
        self.cancelled = True
        connection = getattr(getattr(self.response, "raw", None), "connection", None)
        sock = getattr(connection, "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _printable(text) -> str:
    return "".join(c for c in str(text or "")[:60] if c.isprintable())


def _causes(error: BaseException) -> list[BaseException]:
    """The error and everything it wraps (causes, contexts, urllib3's reasons, exceptions in args)."""
    seen, todo = [], [error]
    while todo:
        item = todo.pop(0)
        if not isinstance(item, BaseException) or any(item is s for s in seen):
            continue
        seen.append(item)
        todo += [getattr(item, "reason", None), item.__cause__, item.__context__, *getattr(item, "args", ())]
    return seen


PLAIN_HTTP_REASONS = {"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG",
                      "UNKNOWN_PROTOCOL", "HTTP_REQUEST", "UNEXPECTED_RECORD"}   # TLS spoken to plain HTTP


def _tls_problem(causes) -> str:
    """Why a TLS handshake failed, in words that say what to check."""
    certificate = next((c for c in causes if isinstance(c, ssl.SSLCertVerificationError)), None)
    if certificate is not None:
        why = certificate.verify_message or certificate.reason
        return (f"the server's TLS certificate was refused ({why}); the address may not be the server it "
                f"claims to be")
    tls = [c for c in causes if isinstance(c, ssl.SSLError)]
    text = " ".join(str(c) for c in tls).lower()
    said = ("wrong version number", "record layer failure", "packet length too long")
    if any(getattr(c, "reason", None) in PLAIN_HTTP_REASONS for c in tls) or any(w in text for w in said):
        return ("the server does not speak TLS: it answered an https:// request in plain HTTP; check the "
                "scheme of the address (a plain-HTTP mirror needs http://)")
    reason = next((c.reason for c in tls if getattr(c, "reason", None)), None)
    return f"the TLS connection failed ({reason or 'handshake error'})"


def _connection_problem(causes) -> str:
    """A short, library-free description of why a connection could not be made or was lost."""
    if any(isinstance(c, socket.gaierror) or type(c).__name__ == "NameResolutionError" for c in causes):
        return "the host name could not be resolved (no network, or a wrong address)"
    if any(isinstance(c, ConnectionRefusedError) for c in causes):
        return "the connection was refused (nothing listens at that address)"
    if any(isinstance(c, ConnectionResetError) for c in causes):
        return "the connection was reset"
    if any(type(c).__name__ in ("RemoteDisconnected", "IncompleteRead") for c in causes):
        return "the server closed the connection"
    if any(type(c).__name__ == "InvalidChunkLength" for c in causes):
        return "a chunk of the body did not start with its length"
    if any(type(c).__name__ == "ChunkedEncodingError" for c in causes):
        return "the body ended before its last chunk"
    system = next((c for c in causes if isinstance(c, OSError) and c.strerror), None)
    return system.strerror if system is not None else type(causes[-1]).__name__


def _classify(error: BaseException, transfer: _Transfer, timeout: float, url: str) -> BaseException:
    """Turn whatever requests raised into _Retry (worth another attempt) or the project's own errors; a
    library's own text is quoted only without the address's password (scrubbed before it is shortened)."""

    if isinstance(error, (_Retry, DownloadError, IntegrityError)):
        return error
    causes = _causes(error)
    if any(isinstance(c, ssl.SSLError) for c in causes) and not transfer.answered:
        if any(isinstance(c, ssl.SSLEOFError) for c in causes):
            return _Retry("the server closed the connection during the TLS handshake")
        return DownloadError(_tls_problem(causes))
    status = getattr(getattr(error, "response", None), "status_code", None)
    if isinstance(error, requests.HTTPError) and status is not None:
        reason = _printable(error.response.reason)
        answer = f"the server answered HTTP {status}" + (f" ({reason})" if reason else "")
        return _Retry(answer) if status >= 500 or status in (408, 429) else DownloadError(answer)
    if any(type(c).__name__ in ("ContentDecodingError", "DecodeError") for c in causes):
        coding = _printable(getattr(transfer.response, "headers", {}).get("Content-Encoding"))
        return DownloadError(f"the server's answer could not be decompressed (Content-Encoding: {coding})")
    if any(type(c).__name__ in ("InvalidHeader", "HeaderParsingError") for c in causes):
        return DownloadError(f"the server's answer is not valid HTTP (its headers: {scrub(error, url)[:100]})")
    short = next((c for c in causes if type(c).__name__ == "IncompleteRead" and isinstance(c.partial, int)),
                 None)                                       # urllib3's count includes a chunk it dropped
    received = max(transfer.received, short.partial if short else 0)
    got = f"{received:,}" + (f" of {transfer.total:,}" if transfer.total is not None else "")
    if isinstance(error, requests.exceptions.ConnectTimeout):
        return _Retry(f"could not connect: no answer within {timeout:g} s")
    if any(isinstance(c, (requests.exceptions.ReadTimeout, socket.timeout, TimeoutError)) or
           type(c).__name__ == "ReadTimeoutError" for c in causes):
        where = f"in the middle of the body ({got} bytes written)" if transfer.answered else \
            "(no answer to the request)"
        return _Retry(f"the server sent nothing for {timeout:g} s {where}")
    if transfer.answered:
        return _Retry(f"the connection was lost after {got} bytes ({_connection_problem(causes)})")
    odd = next((c for c in causes if isinstance(c, http.client.HTTPException)
                and not isinstance(c, ConnectionError) and type(c).__name__ != "IncompleteRead"), None)
    if odd is not None:
        return DownloadError(f"the server's answer is not valid HTTP ({type(odd).__name__})")
    if isinstance(error, (requests.exceptions.ConnectionError, ConnectionError)):
        problem = _connection_problem(causes)
        if problem.startswith("the host name could not be resolved"):   # it will not resolve seconds later
            return DownloadError(f"could not connect: {problem}")         # either: say so at once
        return _Retry(f"could not connect: {problem}")
    if isinstance(error, (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema,
                          requests.exceptions.MissingSchema, ValueError, UnicodeError)):
        return DownloadError(f"the address cannot be used ({type(error).__name__})")
    return DownloadError(f"unexpected {type(error).__name__}: {scrub(error, url)[:200]}")


def _attempt(url: str, part: Path, clock: dict, *, max_bytes: int, timeout: float, progress: bool) -> None:
    """One attempt: pooch's downloader in a worker thread, watched from this one for the deadline (which a
    server sending a byte a second never meets through the per-read timeout), drawing the progress bar."""

    label = part.name.rsplit(".part", 1)[0]
    try:
        out = open(part, "wb")
    except OSError as error:
        raise DownloadError(f"could not write the download to {part.parent}: "
                            f"{error.strerror or error}") from None
    transfer = _Transfer(out, max_bytes)
    downloader = _pooch().HTTPDownloader(progressbar=False, chunk_size=CHUNK, timeout=timeout,
                                      headers=HEADERS, hooks={"response": transfer.hook})

    def work():
        try:
            downloader(url, transfer, None)
        except BaseException as error:      # noqa: BLE001: reported by the caller's thread
            transfer.error = error

    worker = threading.Thread(target=work, daemon=True, name=f"download of {label}")
    shown = None

    def show():
        nonlocal shown
        if shown is None and transfer.answered:            # the server answered: notes, size, progress bar
            for note in transfer.notes:
                say(f"WARNING: {label}: {note}")
            clock["size"] = transfer.total or clock["size"]
            shown = bar(transfer.total, label, unit="B", unit_scale=True, unit_divisor=1024,
                        enabled=progress)
        if shown is not None:
            shown.update(transfer.received - shown.n)

    try:
        worker.start()
        while worker.is_alive():
            worker.join(0.1)
            show()
            end = _deadline(clock)
            if time.monotonic() > end and worker.is_alive():
                got = f"{transfer.received:,}" + (f" of {transfer.total:,}" if transfer.total else "")
                raise DownloadError(f"the download did not finish within its deadline of "
                                    f"{end - clock['start']:.0f} s ({got} bytes arrived); pass deadline= "
                                    f"for more time")
        show()                       # a transfer that ended before the first look still gets its lines
        if transfer.error is not None:
            raise _classify(transfer.error, transfer, timeout, url)
    finally:
        transfer.cancel()                                  # before the file closes: no late write reaches it
        out.close()
        if shown is not None:
            shown.close()


def _deadline(clock: dict) -> float:
    """When the download must have finished: the given deadline, else 120 s plus its size at MIN_RATE."""
    return clock["start"] + (clock["deadline"] or DEADLINE_SLACK + clock["size"] / MIN_RATE)


def fetch(url: str, dest: Path, *, name: str, size_guess: int, max_bytes: int, retries: int = 3,
          timeout: float = 60.0, deadline: float | None = None, progress: bool = True,
          verbose: bool = True) -> None:
    """Download ``url`` into ``dest`` (renamed into place once whole), retrying what retrying can cure,
    within one overall deadline: ``deadline`` seconds, else 120 s plus the size at 10 kB/s (``size_guess``
    until the server says). ``name`` labels the messages. Raises DownloadError, or IntegrityError for a body
    over ``max_bytes``; a progress bar named after the file shows the transfer. Arguments of the wrong type or
    out of range raise ArgumentError."""
    if not isinstance(url, str) or not isinstance(name, str):
        raise ArgumentError(f"url and name must be strings, got {type(url).__name__} and "
                            f"{type(name).__name__}")
    dest = as_path(dest, "dest")
    size_guess = check_integer(size_guess, "size_guess", minimum=0)
    max_bytes = check_integer(max_bytes, "max_bytes", minimum=1)
    retries = check_integer(retries, "retries", minimum=1)
    timeout = check_seconds(timeout, "timeout", maximum=MAX_TIMEOUT)
    deadline = None if deadline is None else check_seconds(deadline, "deadline")
    progress, verbose = check_flag(progress, "progress"), check_flag(verbose, "verbose")
    clock = {"start": time.monotonic(), "deadline": deadline, "size": size_guess}
    last, shown = None, redact(url)
    for attempt in range(1, retries + 1):
        part = dest.with_name(f"{dest.name}.part{attempt}")   # a late write of an abandoned attempt cannot
        try:                                                  # reach the next attempt's file
            _attempt(url, part, clock, max_bytes=max_bytes, timeout=timeout, progress=progress)
            _keep(part, dest)
            return
        except _Retry as retry:
            last = scrub(retry, url)
        except IntegrityError as error:
            raise IntegrityError(scrub(f"{name}: {shown}: {error}", url)) from None
        except DownloadError as error:
            raise DownloadError(scrub(f"{shown}: {error}", url)) from None
        pause = RETRY_PAUSE * min(2.0 ** (attempt - 1), 8.0)
        if attempt == retries or time.monotonic() + pause > _deadline(clock):
            break
        if verbose:
            say(f"{name}: attempt {attempt} of {retries} failed ({last}); trying again in {pause:g} s")
        time.sleep(pause)
    tries = f" ({attempt} attempts)" if attempt > 1 else ""
    raise DownloadError(f"{shown}: {last}{tries}")


def _keep(part: Path, dest: Path) -> None:
    """Move a whole download into place, unless it is a web page; DownloadError where the file or its folder
    is gone (another process deleting the cache) or cannot be moved."""
    try:
        _refuse_a_page(part)
        os.replace(part, dest)
    except OSError as error:
        raise DownloadError(f"the download could not be kept ({error.strerror or type(error).__name__}: "
                            f"{part.name})") from None


def _refuse_a_page(part: Path) -> None:
    """A web page answered with 200 in place of the file (a Wi-Fi login, a proxy's or a site's error page) is
    a download that failed, not a damaged file: DownloadError, so the course falls back to its stand-in."""
    with open(part, "rb") as arrived:
        start = arrived.read(256)
    if other_format(start) == "an HTML page":
        part.unlink(missing_ok=True)
        raise DownloadError("the server sent a web page (a Wi-Fi login or an error page?), not the file")


def _pooch():
    """pooch, imported when a download starts: its downloader module imports tqdm.auto, which prints a
    TqdmWarning (with a path of the machine) into every notebook that merely imports the datasets module."""

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
    return pooch
