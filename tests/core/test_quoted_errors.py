"""An error quoted in a gap is written as flat params (a key, then each param under a dotted
name) and read back as it was, so a presenter can word it; an error a gap cannot hold is
left to its English text."""

from __future__ import annotations

from bot.core.model.quoted_errors import error_of, flat_error

PARAMS: dict[str, object] = {
    "doing": "read dcgm-exporter on gpu-node-01",
    "doing_key": "read_dcgm",
    "doing_params": {"node": "gpu-node-01"},
    "status": 503,
    "error_params": {"doing_params": {"namespace": "ml", "name": "a"}},
}


def test_a_keyed_errors_params_are_flat_single_values_and_read_back_as_they_were() -> None:
    flat = flat_error("error", "kube_unavailable", PARAMS)

    assert flat["error_key"] == "kube_unavailable"
    assert flat["error.doing_params.node"] == "gpu-node-01"
    assert all(isinstance(v, str | int) for v in flat.values())
    assert error_of("error", {"error": "the English text", **flat}) == ("kube_unavailable", PARAMS)


def test_a_flag_is_kept_as_a_count_and_a_whole_float_as_an_integer() -> None:
    flat = flat_error("e", "k", {"write": True, "waited_s": 10.0})
    assert error_of("e", flat) == ("k", {"write": 1, "waited_s": 10})


def test_an_error_without_a_key_or_with_a_value_no_gap_holds_is_left_to_its_english_text() -> None:
    assert flat_error("error", "", PARAMS) == {}
    for value in (2.5, None, ["a", "b"]):
        assert flat_error("error", "k", {"x": value}) == {}
    assert error_of("error", {"error": "the English text"}) == ("", {})


def test_other_params_of_the_gap_are_not_read_as_the_errors() -> None:
    flat = flat_error("error", "k", {"a": "1"})
    gap = {**flat, "errors": 3, "error_count": 2, "url": "http://x"}
    assert error_of("error", gap) == ("k", {"a": "1"})
