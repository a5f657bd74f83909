"""A validation error, keyed for a presenter: each problem keeps where it is, pydantic's
error type and context (or a validator's own key and params), never the input value, and
the English text ``validation_message`` shows beside it."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bot.core.model.validation import KeyedValueError, problems, validation_message

SECRET = "xoxb-pasted-secret-4f1e"


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid")

    port: int = Field(3000, ge=1, le=65535)
    mode: Literal["job", "daemonset", "agent"] = "job"
    name: str = "a"

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if value != value.lower():
            raise KeyedValueError(
                "names are lowercase", key="name_case", params={"suggestion": value.lower()}
            )
        return value


def _error(data: dict[str, object]) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        _Group.model_validate(data)
    return caught.value


def test_each_problem_keeps_its_place_type_and_context_but_not_the_input() -> None:
    exc = _error({"port": SECRET, "mode": "pod", SECRET: 1})
    found = problems(exc)

    assert [(p["at"], p["type"]) for p in found] == [
        ("port", "int_parsing"),
        ("mode", "literal_error"),
        (SECRET, "extra_forbidden"),  # a key is the caller's to hide (``where``)
    ]
    assert found[1]["choices"] == ["'job'", "'daemonset'", "'agent'"]
    assert SECRET not in str([{k: v for k, v in p.items() if k != "at"} for p in found])
    assert "; ".join(f"{p['at']}: {p['msg']}" for p in found) == validation_message(exc)


def test_a_bound_keeps_its_limit_in_the_context() -> None:
    (found,) = problems(_error({"port": 70000}))

    assert found["type"] == "less_than_equal" and found["ctx"] == {"le": 65535}


def test_a_validators_keyed_complaint_is_its_key_and_params() -> None:
    (found,) = problems(_error({"name": "Prod"}), line_of=lambda loc: 7)

    assert found["type"] == "name_case" and found["ctx"] == {"suggestion": "prod"}
    assert found["msg"] == "Value error, names are lowercase" and found["line"] == 7


@pytest.mark.parametrize(
    "expected", ["'job'", "'job' or 'agent'", "'job', 'daemonset' or 'agent'", "1, 2 or 3"]
)
def test_the_choices_joined_back_are_pydantics_own_text(expected: str) -> None:
    from bot.core.model.validation import _choices

    choices = _choices(expected)
    joined = ", ".join(choices[:-1]) + " or " + choices[-1] if len(choices) > 1 else choices[0]
    assert joined == expected
