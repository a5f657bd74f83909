"""A worker's messages: a large ``bytes`` argument or answer crosses the pipe as it is, after
the pickle of its call (not inside it), and arrives unchanged and in order with the rest."""

from __future__ import annotations

import io
import os
import zlib

from bot.working import _FRAME, RAW_BYTES, WorkerProcess, _read_message, _write_message

WAIT_S = 120  # starting a process on a busy machine takes seconds; nothing is timed


def test_a_large_bytes_argument_is_framed_after_its_pickle_not_in_it() -> None:
    body = os.urandom(RAW_BYTES * 3)
    stream = io.BytesIO()
    _write_message(stream, (zlib.crc32, body))
    size, raw_size = _FRAME.unpack(stream.getvalue()[: _FRAME.size])
    assert raw_size == len(body)
    assert size < 1024  # the call alone
    stream.seek(0)
    fn, arg = _read_message(stream)
    assert fn is zlib.crc32
    assert arg == body


def test_small_arguments_and_other_messages_are_pickled_whole() -> None:
    stream = io.BytesIO()
    for message in [(len, b"x" * (RAW_BYTES - 1)), (str, "raw"), (True, [1, 2]), "plain"]:
        _write_message(stream, message)
    stream.seek(0)
    got = [_read_message(stream) for _ in range(4)]
    assert got == [(len, b"x" * (RAW_BYTES - 1)), (str, "raw"), (True, [1, 2]), "plain"]
    stream.seek(0)
    assert _FRAME.unpack(stream.read(_FRAME.size))[1] == 0


def test_large_arguments_and_answers_cross_a_real_worker_unchanged_and_in_order() -> None:
    worker = WorkerProcess("bot.working", name="frames")
    try:
        bodies = [os.urandom(RAW_BYTES * k + k) for k in (1, 5, 0)] + [b"", b"small"]
        sums = [worker.submit(zlib.crc32, body) for body in bodies]
        # an answer of 64 KiB or more comes back framed the same way
        echoes = [worker.submit(bytes, body) for body in bodies]
        assert [f.result(timeout=WAIT_S) for f in sums] == [zlib.crc32(b) for b in bodies]
        assert [f.result(timeout=WAIT_S) for f in echoes] == bodies
    finally:
        worker.close()
