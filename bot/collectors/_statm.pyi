"""bot/collectors/_statm.c: the collector's statm loop in C (``procfs.rank_by_statm``)."""

def rank(base: bytes, page_size: int, /) -> tuple[list[tuple[int, int]], list[int], list[bytes]]:
    """Every ``statm`` under ``base``: (resident bytes, pid) pairs, refused pids, and the
    non-ASCII names left to the caller."""
