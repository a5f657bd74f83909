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
  dropped the bundle and the cluster view. The sha256 still names the evidence as captured;
- 3: xz (``lzma``, preset 6: about half zlib's size on evidence JSON) of four texts: the
  bundle with its long process tail summarised (``bot.store.summarizing``), the view, the
  diagnosis, and the process tail (JSON with its own ``schema_version``; '' when nothing was
  left out). The sha256 covers the four texts as stored.
"""

from __future__ import annotations

import lzma
import zlib

TEXT, ZLIB, SUMMARY, XZ_SUMMARISED = 0, 1, 2, 3
#: zlib level: 6 is the library's default, within 10% of 9's size at a third of its time
LEVEL = 6


def _joined(parts: tuple[str, ...]) -> bytes:
    raw = bytearray()
    for part in parts:
        data = part.encode("utf-8")
        raw += len(data).to_bytes(8, "big")
        raw += data
    return bytes(raw)


def _split(raw: bytes, count: int) -> list[str]:
    parts: list[str] = []
    at = 0
    for _ in range(count):
        size = int.from_bytes(raw[at : at + 8], "big")
        parts.append(raw[at + 8 : at + 8 + size].decode("utf-8"))
        at += 8 + size
    if at != len(raw):
        raise ValueError("a packed evidence snapshot has trailing bytes; the row is damaged")
    return parts


def pack(bundle: str, view: str, diagnosis: str) -> bytes:
    """Format 1 (and 2, with empty bundle and view)."""
    return zlib.compress(_joined((bundle, view, diagnosis)), LEVEL)


def pack_summarised(bundle: str, view: str, diagnosis: str, tail: str) -> bytes:
    """Format 3."""
    return lzma.compress(_joined((bundle, view, diagnosis, tail)), preset=6)


def unpack(packed: bytes, fmt: int = ZLIB) -> tuple[str, str, str, str]:
    """Bundle, view, diagnosis and process tail ('' before format 3) of a packed row."""
    if fmt == XZ_SUMMARISED:
        b, v, d, t = _split(lzma.decompress(packed), 4)
        return b, v, d, t
    if fmt in (ZLIB, SUMMARY):
        b, v, d = _split(zlib.decompress(packed), 3)
        return b, v, d, ""
    raise ValueError(
        f"evidence snapshot format {fmt} is newer than this gpunode knows; upgrade gpunode"
    )
