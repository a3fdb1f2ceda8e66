"""Fetching one file with pooch's HTTP downloader: per-read timeout, size limit, deadline and retries, each
failure in the course's words; an address's user name and password are used, never shown (``redact``)."""
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

import requests

from helpers.core.arguments import ArgumentError, as_path, check_flag, check_integer, check_seconds
from helpers.core.progress import bar, say
from helpers.data.edgelist import other_format

with warnings.catch_warnings():      # pooch imports tqdm.auto, which warns into a notebook without ipywidgets
    warnings.filterwarnings("ignore", message="IProgress not found")
    import pooch

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
    """(start, end past the '@') of an address's user name and password, or None. A password holding an
    unescaped '/', '?' or '#' ends the host part early: they then run on to the '@' before the next '/'."""
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
    """The address without the user name and password it may carry."""
    url = str(url)
    span = _userinfo(url)
    return url if span is None else url[:span[0]] + url[span[1]:]


def scrub(text, url: str = "") -> str:
    """``text`` without the userinfo of any address in it, nor that of ``url`` where it stands alone."""
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
    """One attempt, shared by pooch's downloader in its thread and the caller watching it: the response hook
    (every answer, redirects included) and the file-like target the body is written to."""

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
        if isinstance(item, BaseException) and not any(item is s for s in seen):
            seen.append(item)
            todo += [getattr(item, "reason", None), item.__cause__, item.__context__, *item.args]
    return seen


def _has(causes, *kinds) -> bool:
    """Whether one of ``causes`` is an instance of one of the classes, or of a class of one of the names."""
    classes = tuple(k for k in kinds if isinstance(k, type))
    return any(isinstance(c, classes) or type(c).__name__ in kinds for c in causes)


PLAIN_HTTP = ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG", "UNKNOWN_PROTOCOL",
              "HTTP_REQUEST", "UNEXPECTED_RECORD", "wrong version number", "record layer failure",
              "packet length too long")                       # TLS spoken to plain HTTP: reasons and words
LOST = (((socket.gaierror, "NameResolutionError"),
         "the host name could not be resolved (no network, or a wrong address)"),
        ((ConnectionRefusedError,), "the connection was refused (nothing listens at that address)"),
        ((ConnectionResetError,), "the connection was reset"),
        (("RemoteDisconnected", "IncompleteRead"), "the server closed the connection"),
        (("InvalidChunkLength",), "a chunk of the body did not start with its length"),
        (("ChunkedEncodingError",), "the body ended before its last chunk"))


def _tls_problem(causes) -> str:
    """Why a TLS handshake failed, in words that say what to check."""
    refused = next((c for c in causes if isinstance(c, ssl.SSLCertVerificationError)), None)
    if refused is not None:
        return (f"the server's TLS certificate was refused ({refused.verify_message or refused.reason}); "
                f"the address may not be the server it claims to be")
    tls = [c for c in causes if isinstance(c, ssl.SSLError)]
    said = " ".join(f"{c} {getattr(c, 'reason', '')}" for c in tls).lower()
    if any(word.lower() in said for word in PLAIN_HTTP):
        return ("the server does not speak TLS: it answered an https:// request in plain HTTP; check the "
                "scheme of the address (a plain-HTTP mirror needs http://)")
    reason = next((c.reason for c in tls if getattr(c, "reason", None)), None)
    return f"the TLS connection failed ({reason or 'handshake error'})"


def _connection_problem(causes) -> str:
    """A short, library-free description of why a connection could not be made or was lost."""
    system = next((c.strerror for c in causes if isinstance(c, OSError) and c.strerror), None)
    return next((text for kinds, text in LOST if _has(causes, *kinds)), system or type(causes[-1]).__name__)


def _classify(error: BaseException, transfer: _Transfer, timeout: float, url: str) -> BaseException:
    """What requests raised as _Retry (worth another attempt) or the course's own errors; a library's own
    text is quoted only scrubbed of the address's password."""
    if isinstance(error, (_Retry, DownloadError, IntegrityError)):
        return error
    causes = _causes(error)
    if _has(causes, ssl.SSLError) and not transfer.answered:
        if _has(causes, ssl.SSLEOFError):
            return _Retry("the server closed the connection during the TLS handshake")
        return DownloadError(_tls_problem(causes))
    status = getattr(getattr(error, "response", None), "status_code", None)
    if isinstance(error, requests.HTTPError) and status is not None:
        reason = _printable(error.response.reason)
        answer = f"the server answered HTTP {status}" + (f" ({reason})" if reason else "")
        return _Retry(answer) if status >= 500 or status in (408, 429) else DownloadError(answer)
    if _has(causes, "ContentDecodingError", "DecodeError"):
        coding = _printable(getattr(transfer.response, "headers", {}).get("Content-Encoding"))
        return DownloadError(f"the server's answer could not be decompressed (Content-Encoding: {coding})")
    if _has(causes, "InvalidHeader", "HeaderParsingError"):
        headers = scrub(error, url)[:100]
        return DownloadError(f"the server's answer is not valid HTTP (its headers: {headers})")
    short = [c.partial for c in causes if type(c).__name__ == "IncompleteRead" and isinstance(c.partial, int)]
    received = max([transfer.received, *short])        # urllib3's count includes a chunk it dropped
    got = f"{received:,}" + (f" of {transfer.total:,}" if transfer.total is not None else "")
    if isinstance(error, requests.exceptions.ConnectTimeout):
        return _Retry(f"could not connect: no answer within {timeout:g} s")
    if _has(causes, requests.exceptions.ReadTimeout, TimeoutError, "ReadTimeoutError"):
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
        problem = _connection_problem(causes)        # a name that does not resolve will not seconds later
        return (DownloadError if problem == LOST[0][1] else _Retry)(f"could not connect: {problem}")
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
    transfer, shown = _Transfer(out, max_bytes), None
    downloader = pooch.HTTPDownloader(progressbar=False, chunk_size=CHUNK, timeout=timeout, headers=HEADERS,
                                      hooks={"response": transfer.hook})

    def work():
        try:
            downloader(url, transfer, None)
        except BaseException as error:      # noqa: BLE001: reported by the caller's thread
            transfer.error = error

    def show():
        nonlocal shown
        if shown is None and transfer.answered:            # the server answered: notes, size, progress bar
            for note in transfer.notes:
                say(f"WARNING: {label}: {note}")
            clock["size"] = transfer.total or clock["size"]
            shown = bar(transfer.total, label, unit="B", unit_scale=True, unit_divisor=1024, enabled=progress)
        if shown is not None:
            shown.update(transfer.received - shown.n)

    worker = threading.Thread(target=work, daemon=True, name=f"download of {label}")
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


def check_limits(retries=3, timeout=60.0, deadline=None, progress=True, verbose=True) -> dict:
    """A download's limits and flags as ``fetch`` and ``datasets.load`` take them, checked (ArgumentError)."""
    return {"retries": check_integer(retries, "retries", minimum=1),
            "timeout": check_seconds(timeout, "timeout", maximum=MAX_TIMEOUT),
            "deadline": None if deadline is None else check_seconds(deadline, "deadline"),
            "progress": check_flag(progress, "progress"), "verbose": check_flag(verbose, "verbose")}


def fetch(url: str, dest: Path, *, name: str, size_guess: int, max_bytes: int, retries: int = 3,
          timeout: float = 60.0, deadline: float | None = None, progress: bool = True,
          verbose: bool = True) -> None:
    """Download ``url`` into ``dest``, retrying what retrying can cure, within ``deadline`` (default: 120 s
    plus the size at 10 kB/s); DownloadError, or IntegrityError for a body over ``max_bytes``."""
    if not isinstance(url, str) or not isinstance(name, str):
        raise ArgumentError(f"url and name must be strings, got {type(url).__name__} and "
                            f"{type(name).__name__}")
    dest = as_path(dest, "dest")
    size_guess = check_integer(size_guess, "size_guess", minimum=0)
    max_bytes = check_integer(max_bytes, "max_bytes", minimum=1)
    limits = check_limits(retries, timeout, deadline, progress, verbose)
    clock = {"start": time.monotonic(), "deadline": limits["deadline"], "size": size_guess}
    retries, last, shown = limits["retries"], None, redact(url)
    for attempt in range(1, retries + 1):
        part = dest.with_name(f"{dest.name}.part{attempt}")   # a late write of an abandoned attempt cannot
        try:                                                  # reach the next attempt's file
            _attempt(url, part, clock, max_bytes=max_bytes, timeout=limits["timeout"],
                     progress=limits["progress"])
            return _keep(part, dest)
        except _Retry as retry:
            last = scrub(retry, url)
        except IntegrityError as error:
            raise IntegrityError(scrub(f"{name}: {shown}: {error}", url)) from None
        except DownloadError as error:
            raise DownloadError(scrub(f"{shown}: {error}", url)) from None
        pause = RETRY_PAUSE * min(2.0 ** (attempt - 1), 8.0)
        if attempt == retries or time.monotonic() + pause > _deadline(clock):
            break
        if limits["verbose"]:
            say(f"{name}: attempt {attempt} of {retries} failed ({last}); trying again in {pause:g} s")
        time.sleep(pause)
    raise DownloadError(f"{shown}: {last}" + (f" ({attempt} attempts)" if attempt > 1 else ""))


def _keep(part: Path, dest: Path) -> None:
    """Move a whole download into place; DownloadError for a web page in place of the file (a Wi-Fi login,
    an error page: the course falls back to its stand-in) or where it cannot be moved (its folder is gone)."""
    try:
        with open(part, "rb") as arrived:
            page = other_format(arrived.read(256)) == "an HTML page"
        if page:
            part.unlink(missing_ok=True)
            raise DownloadError("the server sent a web page (a Wi-Fi login or an error page?), not the file")
        os.replace(part, dest)
    except OSError as error:
        raise DownloadError(f"the download could not be kept ({error.strerror or type(error).__name__}: "
                            f"{part.name})") from None
