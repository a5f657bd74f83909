"""Evidence snapshots packed: the three JSON texts (bundle, cluster view, diagnosis) in one
compressed value with a format number, so readers never care how a row was written.

Formats (the ``format`` column, schema step 7):

- 0: the texts in the ``bundle``, ``cluster_view`` and ``diagnosis`` columns, as written
  before step 7 (still read as they are);
- 1: zlib (level 6) of the three texts, each length-prefixed, in ``packed``; the text columns
  hold ''. Evidence JSON compresses 10-18x (issue #25: 277 KiB raw per snapshot). zstd would
  do a little better, but no zstd module is among the dependencies and zlib is in the
  standard library;
- 2: as 1, with only the diagnosis kept: the evidence retention (``store.evidence_days``)
  dropped the bundle and the cluster view. The sha256 still names the evidence as captured.
"""

from __future__ import annotations

import zlib

TEXT, ZLIB, SUMMARY = 0, 1, 2
#: zlib level: 6 is the library's default, within 10% of 9's size at a third of its time
LEVEL = 6


def pack(bundle: str, view: str, diagnosis: str) -> bytes:
    raw = bytearray()
    for part in (bundle, view, diagnosis):
        data = part.encode("utf-8")
        raw += len(data).to_bytes(8, "big")
        raw += data
    return zlib.compress(bytes(raw), LEVEL)


def unpack(packed: bytes) -> tuple[str, str, str]:
    raw = zlib.decompress(packed)
    parts: list[str] = []
    at = 0
    for _ in range(3):
        size = int.from_bytes(raw[at : at + 8], "big")
        parts.append(raw[at + 8 : at + 8 + size].decode("utf-8"))
        at += 8 + size
    if at != len(raw):
        raise ValueError("a packed evidence snapshot has trailing bytes; the row is damaged")
    return parts[0], parts[1], parts[2]
