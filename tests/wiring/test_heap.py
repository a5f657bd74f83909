import gc

from bot.wiring.heap import YOUNG_THRESHOLD, settle_heap


def test_a_settled_heap_collects_the_young_generation_every_fifty_thousand_allocations() -> None:
    before = gc.get_threshold()
    try:
        settle_heap()
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10) == (50_000, 10, 10)
        assert gc.get_freeze_count() > 0  # start-up's objects are out of the collections
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
