"""Limits on student code: a runaway function is stopped with a message, sys.exit() and KeyboardInterrupt
raised by the code are reported (a real Ctrl-C still stops the checker), printing is capped, and a wrong
return value is described; every signal handler, timer and stream is restored afterwards. The child
process that runs the code: a crash or an exit of it is reported, what it returns crosses as plain data
only (no object of the student's is rebuilt in the checker), and where no child can be forked the calls
run in the checker's process under a SIGALRM timer."""
import signal
import sys
import threading
import time

import numpy as np
import pytest

import os
import pickle

from helpers import checks
from helpers.checks import isolation, limits


@pytest.fixture(autouse=True)
def handlers_restored():
    before = signal.getsignal(signal.SIGALRM), signal.getsignal(signal.SIGINT), sys.stdout, sys.stderr
    yield
    assert (signal.getsignal(signal.SIGALRM), signal.getsignal(signal.SIGINT), sys.stdout,
            sys.stderr) == before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_runaway_function_is_stopped_within_the_limit():
    def forever(graph, ranks, damping):
        while True:
            pass
    start = time.monotonic()
    report = checks.check_pagerank_step(forever, quiet=True, time_limit=2)
    assert time.monotonic() - start < 6
    assert report.stopped and len(report.failures) == 1
    assert "did not return within the time limit (2 s)" in report.failures[0].cause
    assert "still running after 2 s" in str(report)


def test_a_function_that_swallows_the_first_stop_gets_another():
    def stubborn(graph, ranks, damping):
        try:
            while True:
                pass
        except BaseException:          # what a bare except does
            pass
        while True:
            pass
    start = time.monotonic()
    report = checks.check_pagerank_step(stubborn, quiet=True, time_limit=1)
    assert time.monotonic() - start < 5 and "time limit" in report.failures[0].cause


def test_sys_exit_in_student_code_is_reported():
    def leaves(graph, ranks, damping):
        sys.exit(3)
    report = checks.check_pagerank_step(leaves, quiet=True)
    assert not report.ok and len(report.failures) == 10
    assert "called sys.exit(3)" in report.failures[0].detail
    assert "end the whole program" in report.failures[0].cause


def test_keyboard_interrupt_raised_by_student_code_is_reported():
    def interrupts(graph, ranks, damping):
        raise KeyboardInterrupt
    report = checks.check_pagerank_step(interrupts, quiet=True)
    assert "raised KeyboardInterrupt" in report.failures[0].detail
    assert "nobody pressed Ctrl-C" in report.failures[0].cause


@pytest.fixture
def ctrl_c_raises():
    """Ctrl-C as a terminal delivers it: a process started in the background (a CI runner, ``cmd &``)
    begins with SIGINT ignored, and Python then installs no handler; the test restores what was there."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_real_ctrl_c_still_stops_the_checker(ctrl_c_raises):
    def slow(graph, ranks, damping):
        while True:
            time.sleep(0.01)
    main = threading.main_thread().ident
    threading.Timer(0.5, lambda: signal.pthread_kill(main, signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt):
        checks.check_pagerank_step(slow, quiet=True, time_limit=10)


def test_a_real_ctrl_c_swallowed_by_student_code_still_stops_the_checker(ctrl_c_raises):
    def swallows(graph, ranks, damping):
        try:
            time.sleep(5)
        except KeyboardInterrupt:
            pass
        return ranks
    main = threading.main_thread().ident
    threading.Timer(0.3, lambda: signal.pthread_kill(main, signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt):
        checks.check_pagerank_step(swallows, quiet=True, time_limit=10)


def test_printing_is_capped(capsys):
    def chatty(graph, ranks, damping):
        for i in range(20_000):
            print(f"line {i}")
        return ranks
    report = checks.check_pagerank_step(chatty, quiet=False)
    shown = capsys.readouterr().out
    assert len(report.printed) == limits.OUTPUT_LIMIT and report.not_shown > 100_000
    assert "line 0" in shown and "line 19999" not in shown
    assert f"({report.not_shown:,} more characters not shown)" in shown
    assert len(shown) < 3 * limits.OUTPUT_LIMIT + 2_000


@pytest.mark.parametrize("checker, value, said", [
    ("check_transpose", None, "returned None (is the return statement missing?)"),
    ("check_transpose", (np.zeros(3, int),), "returned a tuple of 1 item"),
    ("check_power_iteration", [np.ones(3)] * 3, "returned a list of 3 items"),
    ("check_power_iteration", 0.5, "returned a single float (0.5)"),
    ("check_top_k", None, "the returned indices is None"),
    ("check_pagerank_step", "ranks", "the returned ranks is a str ('ranks')"),
    ("check_pagerank_step", {"ranks": 1}, "the returned ranks is a builtins.dict"),
])
def test_a_wrong_return_value_is_described(checker, value, said):
    def returns(*args, **kwargs):
        return value
    report = getattr(checks, checker)(returns, quiet=True)
    assert not report.ok and said in report.failures[0].detail, str(report)
    assert "raised" not in report.failures[0].detail and "your code raised" not in report.failures[0].cause


def test_off_the_main_thread_the_child_is_still_stopped_at_the_limit():
    found = []

    def forever(ranks, k):
        while True:
            pass
    thread = threading.Thread(target=lambda: found.append(checks.check_top_k(forever, quiet=True,
                                                                             time_limit=1)))
    start = time.monotonic()
    thread.start()
    thread.join(20)
    assert time.monotonic() - start < 8 and found[0].stopped
    assert "time limit (1 s)" in found[0].failures[0].cause


def test_in_this_process_off_the_main_thread_the_report_says_there_is_no_time_limit(monkeypatch):
    monkeypatch.setattr(isolation, "CAN_FORK", False)
    found = []
    thread = threading.Thread(target=lambda: found.append(checks.check_top_k(
        lambda r, k: np.argsort(-r, kind="stable")[:k], quiet=True)))
    thread.start()
    thread.join()
    assert found[0].ok and any("without a time limit" in note for note in found[0].notes), str(found[0])


def test_a_function_that_ends_its_process_is_reported():
    def leaves(ranks, k):
        os._exit(7)
    report = checks.check_top_k(leaves, quiet=True)
    assert report.stopped and "exit status 7" in report.failures[0].detail
    assert "ended the process running it" in report.failures[0].cause


def test_a_function_that_crashes_its_process_is_reported():
    import signal as signals

    def crashes(ranks, k):
        os.kill(os.getpid(), signals.SIGSEGV)
    report = checks.check_top_k(crashes, quiet=True)
    assert report.stopped and "killed by SIGSEGV" in report.failures[0].detail
    assert "crashed the process running it" in report.failures[0].cause


class Reduces:
    """Would run code wherever it is unpickled."""

    def __reduce__(self):
        return (os.makedirs, (os.environ["REDUCED_MARK"],))


def test_nothing_a_function_returns_is_rebuilt_in_the_checker(tmp_path, monkeypatch):
    mark = tmp_path / "reduced"
    monkeypatch.setenv("REDUCED_MARK", str(mark))
    report = checks.check_top_k(lambda ranks, k: Reduces(), quiet=True)
    assert not report.ok
    assert "the returned indices is a test_checks_limits.Reduces" in report.failures[0].detail
    assert not mark.exists()
    payload = pickle.dumps(("results", [Reduces()]))
    with pytest.raises(pickle.UnpicklingError, match="only plain data may cross"):
        isolation.PlainUnpickler(__import__("io").BytesIO(payload)).load()
    assert not mark.exists()


def test_plain_data_crosses_and_comes_back_as_it_went():
    value = (np.arange(5, dtype=np.int16), [1, 2.5, None, True, "text"], np.float32(0.25), 3 + 4j,
             np.zeros((2, 3)), (x for x in ()), {1: 2})
    back = isolation.decode(isolation.encode(value))
    assert back[0].dtype == np.int16 and back[0].tolist() == [0, 1, 2, 3, 4]
    assert back[1] == [1, 2.5, None, True, "text"] and back[2] == np.float32(0.25) and back[3] == 3 + 4j
    assert back[4].shape == (2, 3)
    assert back[5].description.startswith("a generator") and back[6].description == "a builtins.dict"


def test_a_stopped_kernel_wait_raises_kernel_hung():
    class Event:
        ptr = 1

        def __init__(self, **kwargs):
            pass

        def record(self):
            pass

    class Runtime:
        @staticmethod
        def eventQuery(ptr):
            return 600                  # cudaErrorNotReady, for ever

    class Cuda:
        runtime = Runtime

        @staticmethod
        def Event(**kwargs):
            return Event()

    class FakeCupy:
        cuda = Cuda

    start = time.monotonic()
    with pytest.raises(limits.KernelHung, match="did not finish within 0.3 s"):
        limits.wait(FakeCupy, 0.3)
    assert time.monotonic() - start < 2


def test_what_cannot_be_checked_at_all_is_said():
    report = checks.check_pagerank_step(None, quiet=True)
    assert report.stopped and "pass your function itself" in report.failures[0].cause
    assert "got None" in str(report)
    report = checks.check_pull_list(lambda: None, quiet=True)
    assert report.stopped and "pass the kernel's source, a string" in report.failures[0].cause


def test_cuda_in_a_cpu_exercise_is_named_as_such():
    def on_the_gpu(ranks, k):
        raise RuntimeError("cudaErrorInitializationError: initialization error")
    report = checks.check_top_k(on_the_gpu, quiet=True)
    assert "cudaErrorInitializationError" in report.failures[0].detail
    assert "cannot run in the child process" in report.failures[0].cause


def test_a_process_that_may_not_fork_runs_the_calls_here_and_says_so(monkeypatch):
    import multiprocessing

    class Refuses:
        def __init__(self, *args, **kwargs):
            pass

        def start(self):
            raise AssertionError("daemonic processes are not allowed to have children")

    context = multiprocessing.get_context("fork")
    monkeypatch.setattr(context, "Process", Refuses)
    report = checks.check_top_k(lambda ranks, k: np.argsort(-np.asarray(ranks), kind="stable")[:k],
                                quiet=True)
    assert report.ok and "runs inside the checker's process" in report.notes[0]


def test_the_calls_before_one_that_hangs_are_checked_as_they_returned():
    def hangs_at_37(ranks, k):
        while k == 37:
            pass
        return np.argsort(-np.asarray(ranks), kind="stable")[:k]
    report = checks.check_top_k(hangs_at_37, quiet=True, time_limit=1)
    assert report.stopped and len(report.passed) == 3 and "k = 37" in report.failures[0].case, str(report)
    assert "time limit (1 s)" in report.failures[0].cause


def test_what_the_checker_cannot_read_back_stops_it_with_a_message(monkeypatch):
    monkeypatch.setattr(isolation, "encode", lambda value, depth=0: ("array", "|O", [1], b"12345678"))
    report = checks.check_top_k(lambda ranks, k: np.arange(k), quiet=True)
    assert report.stopped and "cannot read" in report.failures[0].detail
    assert "could not read what your function's process sent back" in report.failures[0].cause


# --- a GPU checker's own process (gpu.in_own_context, checks.gpu.own_context) ---------------------------

def added(a, b):
    return a + b


def raises_value_error():
    raise ValueError("bad input 7")


class TwoArguments(Exception):
    def __init__(self, a, b):
        super().__init__(f"{a} and {b}")


def raises_what_cannot_cross():
    raise TwoArguments(1, 2)


def exits_at_once():
    os._exit(3)


def sleeps():
    time.sleep(60)


def test_a_function_in_its_own_process_returns_and_raises_as_here():
    from helpers.measure import gpu

    assert gpu.in_own_context(added, np.arange(3), 1).tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="bad input 7"):
        gpu.in_own_context(raises_value_error)
    with pytest.raises(RuntimeError, match="TwoArguments: 1 and 2"):
        gpu.in_own_context(raises_what_cannot_cross)


def test_a_process_that_dies_or_hangs_is_named_and_ended():
    from helpers.measure import gpu

    with pytest.raises(gpu.ChildDiedError, match="exit code 3"):
        gpu.in_own_context(exits_at_once)
    start = time.monotonic()
    with pytest.raises(gpu.ChildDiedError, match="no answer within 1 s"):
        gpu.in_own_context(sleeps, time_limit=1)
    assert time.monotonic() - start < 8


def test_the_child_is_kept_between_calls_and_replaced_after_it_dies():
    from helpers.measure import gpu

    first = gpu.in_own_context(os.getpid)
    assert first != os.getpid() and gpu.in_own_context(os.getpid) == first
    with pytest.raises(gpu.ChildDiedError):
        gpu.in_own_context(exits_at_once)
    assert gpu.in_own_context(os.getpid) not in (first, os.getpid())


def loses_its_context(status):
    """Stand in for a kernel that left the child's CUDA context broken (an exception from every query)
    or busy (a status of 600, not ready, for ever): a fake CuPy the child's soundness check consults."""
    import sys
    from types import SimpleNamespace

    def query(pointer):
        if status == "broken":
            raise RuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")
        return 600

    sys.modules["cupy"] = SimpleNamespace(
        get_default_memory_pool=lambda: SimpleNamespace(free_all_blocks=lambda: None),
        cuda=SimpleNamespace(Event=lambda **kwargs: SimpleNamespace(record=lambda: None, ptr=1),
                             runtime=SimpleNamespace(eventQuery=query)))
    return os.getpid()


@pytest.mark.parametrize("status", ["broken", "busy"])
def test_a_child_whose_context_is_broken_or_busy_is_replaced(status):
    from helpers.measure import gpu

    first = gpu.in_own_context(loses_its_context, status)        # answers, then ends
    assert gpu.in_own_context(os.getpid) not in (first, os.getpid())


def test_a_gpu_checker_whose_process_dies_reports_it_and_stops(monkeypatch):
    from helpers.measure import gpu
    from helpers.checks import gpu as checker_gpu

    def died(*args, **kwargs):
        raise gpu.ChildDiedError("check_pull_warp's process ended without an answer (exit code -11)")

    monkeypatch.setattr(checker_gpu, "APART", True)
    monkeypatch.setattr(gpu, "has_gpu", lambda: True)
    monkeypatch.setattr(gpu, "in_own_context", died)
    report = checks.check_pull_warp('extern "C" __global__ void pull_warp() {}', seed=5, quiet=True)
    assert report.stopped and not report.ok and report.seed == 5
    assert "exit code -11" in str(report) and "unharmed" in report.failures[0].cause
