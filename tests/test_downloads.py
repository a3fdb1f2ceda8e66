"""Downloads against hostile servers and bad settings, every case bounded in time: each ends in the
project's DownloadError or IntegrityError with a message that names the cause, in a correct graph, or in
the announced stand-in. Deadlines and stall windows are shortened through load's own parameters."""
import shutil
import socket
import ssl
import subprocess
import threading
import time

import numpy as np
import pytest

from helpers.data import datasets, download
from helpers.core.arguments import ArgumentError
from helpers.core.generators import rmat_graph
from snapserver import cached_files, serving, snap_bytes

GRAPH = rmat_graph(2_000, 12_000, seed=21, name="download test graph")
SMALL = datasets.Dataset("test-dl", "test-dl.txt.gz", True, GRAPH.num_vertices, GRAPH.num_edges)
NOISE = ("Traceback", "urllib3", "HTTPConnectionPool", "HTTPSConnectionPool", "Max retries",
         "requests.exceptions")


@pytest.fixture
def server(tmp_path, monkeypatch):
    with serving(monkeypatch, tmp_path, SMALL, snap_bytes(GRAPH, id_space=9_000)) as srv:
        yield srv



def load(**kwargs):
    return datasets.load(SMALL, **{"progress": False, "retries": 1, **kwargs})


def same_graph(graph):
    return (graph.num_vertices == GRAPH.num_vertices and np.array_equal(graph.out_targets, GRAPH.out_targets)
            and np.array_equal(graph.in_sources, GRAPH.in_sources))


def timed(call):
    start = time.monotonic()
    try:
        return call(), time.monotonic() - start
    except Exception as error:          # returned, not raised: the caller asserts on it and on the time
        return error, time.monotonic() - start


# --- connections that break -------------------------------------------------------------------------

def test_a_connection_dropped_mid_body_is_retried(server, capsys):
    server.plan(SMALL.filename, server.drop_after(len(server.body) // 3))
    graph = load(retries=2)
    assert same_graph(graph)
    out = capsys.readouterr().out
    assert f"attempt 1 of 2 failed (the connection was lost after {len(server.body) // 3:,} of " \
           f"{len(server.body):,} bytes" in out
    assert len(server.requests) == 2 and not any(noise in out for noise in NOISE)


def test_a_connection_dropped_every_time_is_a_download_error_and_falls_back(server, capsys):
    server.plan(SMALL.filename, *[server.drop_after(1000)] * 2)
    graph = datasets.load_or_standin(SMALL, retries=2, progress=False)
    out = capsys.readouterr().out
    assert "Could not download test-dl" in out and "the connection was lost after 1,000 of" in out
    assert "(2 attempts)" in out and "stand-in" in out and graph.name.startswith("stand-in for test-dl")
    assert not any(noise in out for noise in NOISE)
    assert cached_files(SMALL) == []


def test_a_server_that_drips_a_byte_a_second_ends_at_the_deadline(server):
    """Each read gets a byte before the per-read timeout: only the overall deadline can end it."""
    server.plan(SMALL.filename, server.trickle(interval=1.0))
    error, seconds = timed(lambda: load(timeout=5, deadline=1.5))
    assert isinstance(error, datasets.DownloadError)
    assert "did not finish within its deadline of 2 s (" in str(error)
    assert "pass deadline= for more time" in str(error)
    assert 1.4 < seconds < 6
    assert cached_files(SMALL) == []


def test_headers_that_never_end_are_stopped_by_the_deadline_too(server):
    server.plan(SMALL.filename, server.slow_headers(interval=0.1))
    error, seconds = timed(lambda: load(timeout=5, deadline=0.8))
    assert isinstance(error, datasets.DownloadError) and "did not finish within its deadline" in str(error)
    assert "(0 bytes arrived)" in str(error) and seconds < 6


def test_a_server_that_stalls_mid_body_times_out_per_read(server):
    server.plan(SMALL.filename, server.stall_after(1000))
    error, seconds = timed(lambda: load(timeout=0.4))
    assert isinstance(error, datasets.DownloadError)
    assert f"the server sent nothing for 0.4 s in the middle of the body (0 of {len(server.body):,} bytes " \
           f"written)" in str(error)                # pooch reads 64 KiB at a time: the 1,000 are not written
    assert seconds < 6 and cached_files(SMALL) == []


def test_a_server_that_never_answers_times_out(server):
    server.plan(SMALL.filename, server.silent())
    error, seconds = timed(lambda: load(timeout=0.3))
    assert isinstance(error, datasets.DownloadError)
    assert "the server sent nothing for 0.3 s (no answer to the request)" in str(error)
    assert seconds < 6


def test_the_overall_deadline_holds_even_for_a_steady_slow_server(server):
    server.plan(SMALL.filename, server.trickle(interval=0.05, step=1_000))
    error, seconds = timed(lambda: load(deadline=0.6, retries=3))
    assert isinstance(error, datasets.DownloadError)
    assert "did not finish within its deadline of 1 s" in str(error) and "pass deadline=" in str(error)
    assert 0.55 < seconds < 6 and len(server.requests) == 1   # the deadline is not retried


def test_a_default_deadline_follows_from_the_announced_size(server, monkeypatch):
    monkeypatch.setattr(download, "DEADLINE_SLACK", 0.2)      # 0.2 s + size / MIN_RATE = 0.7 s
    monkeypatch.setattr(download, "MIN_RATE", 2 * len(server.body))
    server.plan(SMALL.filename, server.trickle(interval=0.05, step=len(server.body) // 100))   # ~5 s in all
    error, seconds = timed(lambda: load())
    assert isinstance(error, datasets.DownloadError)
    assert "did not finish within its deadline of 1 s" in str(error) and 0.65 < seconds < 6


def test_a_server_that_is_not_http(server):
    server.plan(SMALL.filename, server.garbage())
    error, _ = timed(lambda: load(retries=3))
    assert isinstance(error, datasets.DownloadError)
    assert str(error) == (f"{server.url}{SMALL.filename}: the server's answer is not valid HTTP "
                          f"(BadStatusLine)")
    assert len(server.requests) == 1


# --- what the server says ---------------------------------------------------------------------------

@pytest.mark.parametrize("status, tries", [(404, 1), (403, 1), (500, 3), (503, 3), (429, 3)])
def test_http_statuses_are_named_and_only_server_errors_retried(server, status, tries):
    server.statuses["/" + SMALL.filename] = status
    with pytest.raises(datasets.DownloadError, match=rf"the server answered HTTP {status}"):
        load(retries=3)
    assert len(server.requests) == tries
    assert cached_files(SMALL) == []


def test_redirects_are_followed_within_http_and_https(server):
    server.serve("elsewhere/" + SMALL.filename, server.body)
    server.plan(SMALL.filename, server.redirect("/elsewhere/" + SMALL.filename, 301))
    assert same_graph(load())
    assert server.requests == ["/" + SMALL.filename, "/elsewhere/" + SMALL.filename]


@pytest.mark.parametrize("location", ["ftp://127.0.0.1/file.gz", "file:///etc/passwd", "gopher://x/"])
def test_a_redirect_to_another_scheme_is_refused(server, location):
    server.plan(SMALL.filename, server.redirect(location))
    with pytest.raises(datasets.DownloadError,
                       match=rf"redirected to '{location}', which is not an http\(s\)://"):
        load(retries=3)
    assert len(server.requests) == 1


def test_a_redirect_loop_ends(server):
    server.plan(SMALL.filename, *[server.redirect("/" + SMALL.filename)] * 20)
    with pytest.raises(datasets.DownloadError, match="more than 10 redirects"):
        load()


def test_a_body_beyond_any_edge_list_of_that_size_is_refused(server):
    tiny = datasets.Dataset("tiny-dl", "tiny-dl.txt.gz", True, 10, 10)   # at most 1 MiB + 64 bytes per edge
    server.serve(tiny.filename, b"x")
    server.plan(tiny.filename, server.without_length(b"\0" * 65536, repeat=40))
    with pytest.raises(datasets.IntegrityError, match=r"the server sent more than 1,049,216 bytes"):
        datasets.load(tiny, progress=False, retries=1)
    server.plan(tiny.filename, server.announce(10**12))
    with pytest.raises(datasets.IntegrityError, match=r"the server announces 1,000,000,000,000 bytes"):
        datasets.load_or_standin(tiny, progress=False, retries=1)    # an IntegrityError never falls back
    assert cached_files(tiny) == []


def test_a_never_ending_body_is_refused_at_the_size_limit_without_keeping_it(server):
    import tracemalloc

    big = datasets.Dataset("test-endless", "test-endless.txt.gz", True, 10, 1_000_000)   # a 65 MB limit
    limit = (1 << 20) + datasets.MAX_BYTES_PER_EDGE * big.listed_edges
    server.serve(big.filename, b"")
    server.plan(big.filename, server.endless())
    tracemalloc.start()
    error, seconds = timed(lambda: datasets.load(big, retries=3, progress=False))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert isinstance(error, datasets.IntegrityError)
    assert f"test-endless: {server.url}{big.filename}: the server sent more than {limit:,} bytes" \
        in str(error)
    assert seconds < 30 and peak < limit / 8 and len(server.requests) == 1   # streamed to disk, not retried
    assert cached_files(big) == []


def test_a_body_without_a_length_is_accepted_when_it_checks_out(server, capsys):
    server.plan(SMALL.filename, server.without_length())
    assert same_graph(load(progress=True))
    out = capsys.readouterr().out
    assert SMALL.filename in out and "100%" not in out       # bytes counted, no total to show a share of


# --- the address ------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, problem", [
    ("file:///srv/mirror/", "its scheme is file://"),
    ("ftp://mirror.example/data/", "its scheme is ftp://"),
    ("snap.stanford.edu/data/", "it has no http(s):// scheme"),
    ("mirror.example:8080/data", "it has no http(s):// scheme"),
    ("https:///data/", "it names no host"),
    ("https://host:99999/", "it is not a valid address"),
    ("https://exa mple.org/", "it contains spaces"),
])
def test_only_http_and_https_addresses_are_accepted(server, monkeypatch, value, problem):
    monkeypatch.setenv(datasets.BASE_URL_VARIABLE, value)
    with pytest.raises(datasets.URLSettingError) as caught:
        load()
    message = str(caught.value)
    assert f"$PAGERANK_DATA_URL={value!r} cannot be used: {problem}" in message
    assert "only https:// addresses (or, with a warning, http://) can be used" in message
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, datasets.DownloadError)
    assert server.requests == []


def test_a_bad_address_falls_back_to_the_standin_naming_the_variable(server, monkeypatch, capsys):
    monkeypatch.setenv(datasets.BASE_URL_VARIABLE, "ftp://mirror.example/")
    tiny = datasets.Dataset("tiny-addr", "tiny-addr.txt.gz", True, 300, 1_000)
    graph = datasets.load_or_standin(tiny, progress=False)
    out = capsys.readouterr().out
    assert "Could not download tiny-addr: $PAGERANK_DATA_URL='ftp://mirror.example/' cannot be used" in out
    assert graph.name.startswith("stand-in for tiny-addr")


def test_an_empty_setting_means_snap(monkeypatch):
    monkeypatch.setenv(datasets.BASE_URL_VARIABLE, "  ")
    assert datasets.base_url() == datasets.DEFAULT_BASE_URL
    monkeypatch.setenv(datasets.BASE_URL_VARIABLE, "HTTPS://Mirror.Example/snap")
    assert datasets.base_url() == "HTTPS://Mirror.Example/snap"


def test_plain_http_is_accepted_with_a_warning(server, capsys):
    assert same_graph(load())
    out = capsys.readouterr().out
    assert (f"WARNING: test-dl: {server.url}{SMALL.filename} is plain http://: the transfer is not "
            f"authenticated") in out


def test_https_to_a_plain_http_server_says_so_not_certificate(server, monkeypatch):
    monkeypatch.setenv(datasets.BASE_URL_VARIABLE, server.url.replace("http://", "https://"))
    error, seconds = timed(lambda: load(retries=3))
    assert isinstance(error, datasets.DownloadError)
    message = str(error)
    assert "the server does not speak TLS" in message and "check the scheme" in message
    assert "certificate" not in message and seconds < 6        # not retried: retrying cannot help


@pytest.fixture
def tls_server(tmp_path):
    """A TLS server on loopback with a self-signed certificate, which no client should trust."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a self-signed certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True,
                   timeout=60)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve():
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            try:
                with context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1024)
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{listener.getsockname()[1]}/"
    stop.set()
    listener.close()


def test_a_certificate_that_cannot_be_trusted_is_named(tls_server, monkeypatch, tmp_path):
    monkeypatch.setenv(datasets.BASE_URL_VARIABLE, tls_server)
    monkeypatch.setenv("PAGERANK_DATA_DIR", str(tmp_path / "data"))
    with pytest.raises(datasets.DownloadError,
                       match=r"the server's TLS certificate was refused \(self.signed"):
        load(retries=2)


# --- a refused connection and the announced fallback ---------------------------------------------------

def test_a_refused_connection_is_short_and_free_of_library_noise(server, monkeypatch, capsys):
    server.close()
    monkeypatch.setenv(datasets.BASE_URL_VARIABLE, server.url)
    graph = datasets.load_or_standin(SMALL, retries=2, progress=False)
    out = capsys.readouterr().out
    assert "could not connect: the connection was refused" in out and "(2 attempts)" in out
    assert not any(noise in out for noise in NOISE)
    assert graph.name.startswith("stand-in")
    paragraph = out[out.index("Could not download"):]
    assert paragraph.count("\n") <= 3 and len(paragraph) < 600


@pytest.mark.parametrize("kwargs, message", [
    (dict(retries=0), "retries must be at least 1"), (dict(retries=2.5), "retries must be an integer"),
    (dict(timeout=0), "timeout must be positive"),
    (dict(deadline=float("inf")), "deadline must be positive and finite"),
    (dict(deadline=-1), "deadline must be positive"), (dict(timeout="30"), "timeout must be a number"),
    (dict(progress="no"), "progress must be True or False"),
    (dict(timeout=10**400), "timeout must be positive and finite"),        # not a TypeError from NumPy
    (dict(timeout=1e308), r"timeout must be at most 86,400 s"),            # not an OverflowError mid-download
])
def test_load_checks_its_parameters(server, kwargs, message):
    with pytest.raises(datasets.ArgumentError, match=message):
        datasets.load(SMALL, **kwargs)
    assert server.requests == []


@pytest.mark.parametrize("kwargs, message", [
    (dict(retries=0), "retries must be at least 1"), (dict(retries=True), "retries must be an integer"),
    (dict(timeout=-1), "timeout must be positive and finite"), (dict(timeout=float("nan")), "timeout must"),
    (dict(deadline=-5), "deadline must be positive"), (dict(max_bytes=-1), "max_bytes must be at least 1"),
    (dict(size_guess="big"), "size_guess must be an integer"), (dict(name=None), "url and name must be"),
    (dict(dest=None), "dest must be a file path"), (dict(progress=1), "progress must be True or False"),
])
def test_fetch_checks_its_parameters(server, tmp_path, kwargs, message):
    arguments = dict(url=server.url + SMALL.filename, dest=tmp_path / "f.gz", name="f", size_guess=10,
                     max_bytes=10**6, progress=False)
    with pytest.raises(ArgumentError, match=message):       # was UnboundLocalError, AttributeError, or
        download.fetch(**{**arguments, **kwargs})           # "the address cannot be used (ValueError)"
    assert server.requests == [] and list(tmp_path.iterdir()) == []


# --- answers that are not the file, and HTTP that is not valid (the red team of the data path) ----------

def answer(head: bytes, body: bytes = b"") -> bytes:
    return b"HTTP/1.1 " + head + b"\r\nConnection: close\r\n\r\n" + body


@pytest.mark.parametrize("reply, message", [
    (answer(b"206 Partial Content\r\nContent-Range: bytes 0-9/99\r\nContent-Length: 10", b"0123456789"),
     r"HTTP 206 \(Partial Content\), not the file"),
    (answer(b"204 No Content"), r"HTTP 204 \(No Content\), not the file"),
    (answer(b"304 Not Modified"), r"HTTP 304 \(Not Modified\), not the file"),
    (answer(b"302 Found\r\nContent-Length: 3", b"0 1"), r"HTTP 302 \(Found\), a redirect without a Location"),
    (answer(b"301 Moved\r\nLocation: \r\nContent-Length: 0"), r"HTTP 301 \(Moved\), a redirect without a"),
    (answer(b"299 Odd\r\nContent-Length: 0"), r"HTTP 299 \(Odd\), not the file"),
], ids=["206", "204", "304", "302 without Location", "301 blank Location", "299"])
def test_an_answer_other_than_200_is_never_taken_for_the_file(server, reply, message):
    server.plan(SMALL.filename, server.garbage(reply))
    with pytest.raises(datasets.DownloadError, match=message):     # was IntegrityError: "no edges found"
        load(retries=3)
    assert len(server.requests) == 1 and cached_files(SMALL) == []


@pytest.mark.parametrize("header, message", [
    (b"Content-Length: many", r"not valid HTTP: a Content-Length of 'many' is not one number of bytes"),
    (b"Content-Length: -5", r"not valid HTTP: a Content-Length of '-5' is not one number of bytes"),
    (b"Content-Length: 10\r\nContent-Length: 12", r"not valid HTTP \(its headers: Content-Length"),
    (b"Content-Encoding: deflate", r"could not be decompressed \(Content-Encoding: deflate\)"),
], ids=["words", "negative", "two lengths", "undecodable"])
def test_invalid_framing_is_named_and_not_retried(server, header, message):
    server.plan(SMALL.filename, server.garbage(answer(b"200 OK\r\n" + header, server.body)))
    with pytest.raises(datasets.DownloadError, match=message):     # was "connection lost (ValueError)"
        load(retries=3)
    assert len(server.requests) == 1 and cached_files(SMALL) == []


def test_a_broken_chunk_is_named_and_retried(server):
    broken = answer(b"200 OK\r\nTransfer-Encoding: chunked", b"10\r\n" + server.body[:16] + b"\r\nZZ\r\n")
    server.plan(SMALL.filename, server.garbage(broken), server.garbage(broken))
    with pytest.raises(datasets.DownloadError, match=r"\(a chunk of the body did not start with its length\) "
                                                     r"\(2 attempts\)"):
        load(retries=2)
    assert len(server.requests) == 2 and cached_files(SMALL) == []


def test_a_server_that_undoes_the_gzip_of_a_gz_file_still_gives_the_graph(server):
    reply = answer(b"200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d" % len(server.body), server.body)
    server.plan(SMALL.filename, server.garbage(reply))         # requests decompresses: the .gz holds text
    assert same_graph(load())


def test_a_web_page_instead_of_the_file_is_a_failed_download_and_falls_back(server, capsys):
    page = b"<!DOCTYPE html>\n<html><body>Please sign in to use this network</body></html>\n"
    server.plan(SMALL.filename, server.garbage(answer(b"200 OK\r\nContent-Length: %d" % len(page), page)))
    with pytest.raises(datasets.DownloadError, match="the server sent a web page .* not the file$"):
        load()
    assert cached_files(SMALL) == [] and len(server.requests) == 1          # not retried: it would be again
    server.plan(SMALL.filename, server.garbage(answer(b"200 OK\r\nContent-Length: %d" % len(page), page)))
    graph = datasets.load_or_standin(SMALL, retries=1, progress=False)      # a Wi-Fi login: the stand-in
    assert graph.name.startswith("stand-in for test-dl") and "Could not download" in capsys.readouterr().out


# --- a user name and password in the address: used, never shown, never kept -------------------------------

USER, PASSWORD = "alice", "s3cret-Pa55"


def with_password(url: str, user: str = USER, password: str = PASSWORD) -> str:
    return url.replace("://", f"://{user}:{password}@", 1)


def test_a_password_in_the_address_is_sent_but_never_printed_or_kept(server, monkeypatch, capfd):
    import base64
    import json

    monkeypatch.setenv(datasets.BASE_URL_VARIABLE, with_password(server.url))
    assert same_graph(datasets.load(SMALL, retries=1))                  # verbose, with its progress lines
    assert server.authorizations == ["Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()]
    captured = capfd.readouterr()
    shown = captured.out + captured.err
    assert f"WARNING: test-dl: {server.url}{SMALL.filename} is plain http://" in shown
    assert f"test-dl: downloading {server.url}{SMALL.filename}\n" in shown
    assert PASSWORD not in shown and f"{USER}:" not in shown
    folder = datasets.cache_dir(SMALL)
    assert json.loads((folder / "info.json").read_text(encoding="utf-8"))["url"] == server.url + SMALL.filename
    assert datasets.cached_info(SMALL)["url"] == server.url + SMALL.filename
    (folder / "info.json").unlink()                         # rebuilt from the file kept: recorded as ds.url
    assert same_graph(datasets.load(SMALL, progress=False))
    assert datasets.cached_info(SMALL)["url"] == server.url + SMALL.filename
    assert SMALL.url == server.url + SMALL.filename
    assert not any(PASSWORD.encode() in path.read_bytes() for path in folder.rglob("*") if path.is_file())


def test_a_password_recorded_by_an_older_version_is_not_returned(server, monkeypatch):
    import json

    load()
    info = datasets.cache_dir(SMALL) / "info.json"
    record = json.loads(info.read_text(encoding="utf-8"))
    info.write_text(json.dumps({**record, "url": with_password(server.url) + SMALL.filename}))
    assert datasets.cached_info(SMALL)["url"] == server.url + SMALL.filename


class _Failing:
    """pooch's downloader, failing with a library's error whose text holds the address, whole and in part."""

    def __init__(self, **kwargs):
        pass

    def __call__(self, url, output, pooch):
        from urllib.parse import urlsplit

        padding = "x" * (200 - len("http://alice:"))            # the message is cut at 200 characters:
        raise RuntimeError(f"{padding}{url} (netloc={urlsplit(url).netloc})")   # in the middle of the password


def _serve_status(status):
    def arrange(server, monkeypatch):
        server.statuses["/" + SMALL.filename] = status
    return arrange


def _redirect_with_its_own_password(server, monkeypatch):
    server.plan(SMALL.filename, *[server.redirect(with_password("ftp://127.0.0.1/x.gz", "bob", PASSWORD))] * 2)


def _bad_setting(value):
    def arrange(server, monkeypatch):
        monkeypatch.setenv(datasets.BASE_URL_VARIABLE, with_password(value))
    return arrange


def _closed(server, monkeypatch):
    server.close()


def _library_error(server, monkeypatch):
    import types

    monkeypatch.setattr(download, "pooch", types.SimpleNamespace(HTTPDownloader=_Failing))


def _too_big(server, monkeypatch):
    server.plan(SMALL.filename, server.announce(10**12))


@pytest.mark.parametrize("arrange", [
    _serve_status(404), _serve_status(500), _redirect_with_its_own_password, _bad_setting("ftp://mirror/"),
    _bad_setting("https://mirror:99999/"), _bad_setting("https://mir ror/"), _closed, _library_error,
    _too_big,
], ids=["HTTP 404", "HTTP 500, retried", "a redirect", "another scheme", "a bad port", "a space", "refused",
        "a library's error", "too big"])
def test_no_failure_shows_the_password(server, monkeypatch, capfd, arrange):
    """Every message and error of a failed download: printed, raised, and in the stand-in's announcement."""
    monkeypatch.setenv(datasets.BASE_URL_VARIABLE, with_password(server.url))
    arrange(server, monkeypatch)
    error, _ = timed(lambda: load(retries=2))
    assert isinstance(error, (datasets.DownloadError, datasets.IntegrityError)), error
    if isinstance(error, datasets.DownloadError):
        graph = datasets.load_or_standin(SMALL, retries=2, progress=False)
        assert graph.name.startswith("stand-in for test-dl")
    captured = capfd.readouterr()
    for text in (str(error), captured.out, captured.err):
        assert PASSWORD not in text and f"{USER}:" not in text and "bob:" not in text, text


@pytest.mark.parametrize("url, shown", [
    ("https://alice:pw@mirror.example/data/", "https://mirror.example/data/"),
    ("http://alice:p%40ss@127.0.0.1:8080/x.gz", "http://127.0.0.1:8080/x.gz"),
    ("https://alice:p@ss@mirror.example/x", "https://mirror.example/x"),        # an '@' left unescaped
    ("https://alice:p w@mirror.example/x", "https://mirror.example/x"),         # a space
    ("  ftp://alice:pw@mirror.example/", "  ftp://mirror.example/"),             # as set, spaces and all
    ("alice:pw@mirror.example/data", "mirror.example/data"),                    # no scheme
    ("https://@mirror.example/", "https://mirror.example/"),
    ("https://mirror.example/a@b?c=d@e", "https://mirror.example/a@b?c=d@e"),   # '@' after the host: kept
    ("https://snap.stanford.edu/data/", "https://snap.stanford.edu/data/"),
    ("http://alice:pa/ss@127.0.0.1:8080/x", "http://127.0.0.1:8080/x"),      # a '/', '?' or '#' left
    ("https://alice:123#ss@mirror.example/x", "https://mirror.example/x"),   # unescaped in the password
    ("https://alice:pa?ss@mirror.example/", "https://mirror.example/"),
    ("https://alice:p/s@s@mirror.example/a@b", "https://mirror.example/a@b"),
    ("https://[::1]:8080/a@b", "https://[::1]:8080/a@b"),
])
def test_redact_drops_the_user_name_and_password(url, shown):
    assert download.redact(url) == shown


@pytest.mark.parametrize("password", ["pa/ss-s3cret", "123#s3cret", "pa?s3cret"])
def test_a_password_with_an_unescaped_slash_hash_or_question_mark_is_never_shown(server, monkeypatch, capfd,
                                                                               password):
    """Was: such a password ends the host part early, and the whole address was shown as set, password and
    all: in the refusal of the setting, or (digits before a '#' read as a port) in every download line."""
    user = "localhost"                      # where digits before a '#' are read as a port: refused at once
    monkeypatch.setenv(datasets.BASE_URL_VARIABLE, with_password(server.url, user, password))
    error, _ = timed(lambda: load(retries=1))
    assert isinstance(error, datasets.DownloadError), error
    graph = datasets.load_or_standin(SMALL, retries=1, progress=False)
    assert graph.name.startswith("stand-in for test-dl")
    captured = capfd.readouterr()
    for text in (str(error), repr(error), captured.out, captured.err):
        assert "s3cret" not in text and f"{user}:" not in text, text
    assert server.url.split("://")[1] in captured.out + str(error)           # the host is still named


def test_scrub_drops_every_password_in_a_text():
    url = "http://alice:p%40ss@127.0.0.1:8080/x.gz"
    text = (f"Max retries exceeded with url {url}; auth alice:p@ss@127.0.0.1:8080; "
            f"also https://bob:hunter2@elsewhere/ and a mail user@example.org")
    scrubbed = download.scrub(text, url)
    assert "p%40ss" not in scrubbed and "p@ss" not in scrubbed and "hunter2" not in scrubbed
    assert "http://127.0.0.1:8080/x.gz" in scrubbed and "https://elsewhere/" in scrubbed
    assert "user@example.org" in scrubbed                          # not an address's userinfo: left alone
