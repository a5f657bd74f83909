"""Quantity parsing and canonical text, against apimachinery's own oracles."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.model.quantity import Quantity, QuantityError, canonical, parse_quantity

# (input, canonical) pairs from apimachinery quantity_test.go TestQuantityParse/String and §1.5
CANONICAL = [
    ("0", "0"),
    ("0n", "0"),
    ("0Ki", "0"),
    ("1", "1"),
    ("1.5", "1500m"),
    ("2000", "2k"),
    ("1500", "1500"),
    ("1G", "1G"),
    ("1.5Gi", "1536Mi"),
    ("1024Mi", "1Gi"),
    (".001Ki", "1024m"),
    ("1073741825", "1073741825"),
    ("100m", "100m"),
    ("0.1", "100m"),
    ("1n", "1n"),
    ("0.0000000001", "1n"),
    ("1.0000000001", "1000000001n"),
    ("12Gi", "12Gi"),
    ("1E", "1E"),
    ("1Ki", "1Ki"),
    ("1023", "1023"),
    ("1024", "1024"),
    ("1025Ki", "1025Ki"),
    ("1e3", "1e3"),
    ("1E6", "1e6"),
    ("1e-3", "1e-3"),
    ("0.5", "500m"),
    ("-1.5Gi", "-1536Mi"),
    ("5e1", "50"),
    ("1000000k", "1G"),
    ("1001m", "1001m"),
    ("1.001", "1001m"),
    ("0.0001Ki", "102400u"),
    ("1.5Ki", "1536"),
    ("3Mi", "3Mi"),
    ("+1", "1"),
    ("1.", "1"),
]


@pytest.mark.parametrize(("text", "expected"), CANONICAL)
def test_canonical_text_matches_apimachinery(text: str, expected: str) -> None:
    assert canonical(text) == expected


@pytest.mark.parametrize("text", ["", ".", "1Kb", "abc", "1.2.3", "1 Gi", "Gi", "1e", "--1"])
def test_malformed_quantities_are_rejected(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_binary_values_below_one_become_decimal_at_parse_time() -> None:
    assert parse_quantity("0.0001Ki").format == "DecimalSI"
    assert parse_quantity("512Mi").format == "BinarySI"


def test_add_keeps_receiver_format_unless_receiver_is_zero() -> None:
    gi, dec = parse_quantity("1Gi"), parse_quantity("1000M")
    assert gi.add(dec).format == "BinarySI"
    assert dec.add(gi).format == "DecimalSI"
    assert Quantity().add(gi).canonical() == "1Gi"


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("1.5", 2, 1500),
        ("100m", 1, 100),
        ("1n", 1, 1),
        ("1Gi", 2**30, 2**30 * 1000),
        ("0", 0, 0),
    ],
)
def test_value_and_milli_value_take_the_ceiling(text: str, value: int, milli: int) -> None:
    q = parse_quantity(text)
    assert (q.value(), q.milli_value()) == (value, milli)


def test_json_numbers_are_accepted() -> None:
    assert canonical(2) == "2"
    assert canonical(0.5) == "500m"


decimal_suffix = st.sampled_from(["n", "u", "m", "", "k", "M", "G", "T", "P"])
binary_suffix = st.sampled_from(["Ki", "Mi", "Gi", "Ti", "Pi"])


@given(st.integers(0, 10**9), decimal_suffix)
def test_canonical_text_parses_back_to_the_same_value_and_text(n: int, suffix: str) -> None:
    q = parse_quantity(f"{n}{suffix}")
    again = parse_quantity(q.canonical())
    assert again.nanos == q.nanos
    assert again.canonical() == q.canonical()


@given(st.integers(1, 2**20), binary_suffix)
def test_binary_round_trip_keeps_value_and_text(n: int, suffix: str) -> None:
    q = parse_quantity(f"{n}{suffix}")
    assert q.canonical().endswith(("i", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"))
    again = parse_quantity(q.canonical())
    assert (again.nanos, again.canonical()) == (q.nanos, q.canonical())


@given(st.integers(1, 10**5), decimal_suffix)
def test_decimal_canonical_form_has_no_trailing_zero_groups(n: int, suffix: str) -> None:
    """Oracle: the mantissa never ends in 000 and the value is preserved exactly."""
    text = canonical(f"{n}{suffix}")
    mantissa = text.rstrip("numkMGTPE")
    assert not mantissa.endswith("000")
    assert parse_quantity(text).nanos == parse_quantity(f"{n}{suffix}").nanos


@given(st.integers(1024, 2**50))
def test_binary_integers_print_with_the_largest_exact_suffix(n: int) -> None:
    text = Quantity(n * 10**9, "BinarySI").canonical()
    mantissa, power = n, 0
    while mantissa % 1024 == 0:
        mantissa //= 1024
        power += 1
    assert text == f"{mantissa}{['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi'][power]}"


@given(st.decimals(min_value=Decimal("0.000000001"), max_value=Decimal(10**6), places=9))
def test_sum_of_parts_equals_parse_of_total(d: Decimal) -> None:
    whole = parse_quantity(str(d))
    assert whole.nanos == int(d * 10**9)
    assert whole.add(whole).nanos == 2 * whole.nanos


def test_values_beyond_the_largest_suffix_keep_the_largest_suffix() -> None:
    """Documented deviation: apimachinery has no suffix past E (its text is meaningless)."""
    assert canonical("1000E") == "1000E"
    assert parse_quantity("1000E").nanos == 10**21 * 10**9


@pytest.mark.parametrize("text", ["9" * 900_000, "1e99999999", "1E-99999999", "1" * 1001 + "Gi"])
def test_untrusted_quantities_too_long_or_too_large_to_compute_are_refused(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_a_large_but_finite_exponent_still_parses() -> None:
    assert parse_quantity("1e100").value() == 10**100
