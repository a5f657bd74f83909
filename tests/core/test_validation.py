"""One wording for pydantic validation errors, whoever validated what."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from bot.core.model.validation import validation_message


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size: int


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    items: list[Inner]


def _error(data: object) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        Outer.model_validate(data)
    return info.value


BAD = {"name": 3, "items": [{"size": "x"}, {"size": 1, "extra": "secret-token"}]}


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            {},
            "name: Input should be a valid string; "
            "items.0.size: Input should be a valid integer, unable to parse string as an "
            "integer; items.1.extra: Extra inputs are not permitted",
        ),
        ({"limit": 1}, "name: Input should be a valid string"),
        (
            {"limit": 2, "count_rest": True},
            "name: Input should be a valid string; items.0.size: Input should be a valid "
            "integer, unable to parse string as an integer (and 1 more)",
        ),
        (
            {"limit": 1, "where": lambda loc: "/".join(map(str, loc)).upper()},
            "NAME: Input should be a valid string",
        ),
        (
            {"limit": 1, "line_of": lambda loc: 7, "message": lambda err: "bad"},
            "line 7: name: bad",
        ),
    ],
)
def test_a_validation_error_reads_as_key_paths_and_problems(
    kwargs: dict[str, object], expected: str
) -> None:
    assert validation_message(_error(BAD), **kwargs) == expected  # type: ignore[arg-type]


def test_the_input_value_is_never_echoed() -> None:
    assert "secret-token" not in validation_message(_error(BAD))


@pytest.mark.parametrize(
    ("top", "expected"),
    [
        ("", ": Input should be a valid dictionary or instance of Outer"),
        ("(top level)", "(top level): Input should be a valid dictionary or instance of Outer"),
        (None, "Input should be a valid dictionary or instance of Outer"),
    ],
)
def test_an_error_at_the_top_level_is_named_as_the_caller_says(
    top: str | None, expected: str
) -> None:
    assert validation_message(_error([1]), top=top) == expected
