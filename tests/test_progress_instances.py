"""The progress exploration's instances and data-decided byte counts (round 5): what it explores
and what it leaves unknown."""

from pathlib import Path

from tkcheck.checks import protocol
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of

from conftest import ROOT

PROGRESS = ROOT / "fixtures" / "progress"


def _explore(path: Path, text: str | None = None):
    text = path.read_text() if text is None else text
    ms = models_of(str(path), text=text)
    return [protocol.explore(Analysis(m)) for m in ms]


def test_sizes_apart_get_a_solved_instance():
    """No one value of every size gives both loops an iteration and the ring two wraps: the
    instance is solved per size and checked by evaluation (every loop runs, one runs long)."""
    (ex,) = _explore(PROGRESS / "trip_sizes_apart_good.cu")
    assert ex.status == "explored" and ex.deadlock is None, ex.reason
    p = ex.params
    tasks = min(p["batches"], p["A.batch()"] - p["blockIdx.y"] * p["batches"]) * p["A.depth()"]
    rows = min(8, p["A.rows()"] // 16 - p["blockIdx.x"] * 8)
    assert tasks >= 1 and rows >= 1 and max(tasks, rows) >= 5  # two wraps of a two-stage ring


def test_one_thread_block_is_explored():
    (ex,) = _explore(PROGRESS / "one_thread_block_good.cu")
    assert ex.status == "explored" and ex.deadlock is None, ex.reason
    assert [sorted(r.threads) for r in ex.roles] == [[0]]


def test_data_bytes_paired_on_one_role_explore_and_find_the_missing_sentinel():
    (good,) = _explore(PROGRESS / "data_stream_sentinel_good.cu")
    assert good.status == "explored" and good.deadlock is None, good.reason
    loads = [e for r in good.roles for e in r.events if e.kind in ("expect", "load")]
    assert loads and all("lens" in e.sym for e in loads)
    (bad,) = _explore(PROGRESS / "data_stream_sentinel_bad.cu")
    assert bad.deadlock is not None
    assert [protocol.event_text(e) for _, e in bad.deadlock.blocked] == ["wait(full[1], 0)"]


def test_a_known_expect_beside_a_data_copy_stays_unknown():
    """`MAXLEN * 4` expected, `len * 4` copied: the counts are not multiples of one data count,
    so nothing is explored (no finding from a guess about the data)."""
    path = PROGRESS / "data_stream_sentinel_good.cu"
    text = path.read_text()
    assert "bar_arrive_tx(&full[s], len * 4);" in text
    text = text.replace("bar_arrive_tx(&full[s], len * 4);", "bar_arrive_tx(&full[s], MAXLEN * 4);")
    (ex,) = _explore(path, text)
    assert ex.status == "unknown" and "bytes not known" in ex.reason
