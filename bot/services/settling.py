"""A write that got no answer: re-read its object and record what really happened.

The executor (``executing.run_steps``) hands every ``WriteUnknownError`` here. The object is
read again (``KubePort.read_target``) and ``bot.core.remedies.landing`` says whether the write is in
it. Then:

- it landed: the step counts as done, recorded with the ``before`` captured just before the
  write was sent, so the action offers the same undo as for a write that answered;
- it did not land: the step failed, and nothing was changed by it;
- the re-read failed too: nobody knows; the step's outcome is ``unknown`` and the run stops,
  asking a person to look at the object before anything else.

Each case is kept in ``Settled.as_json()`` (the action's result, ``unanswered``), which the
thread, the audit row and the timeline word as "the cluster did not answer within 10 s; a
re-read shows the memory limit landed".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.core.model.actions import Step
from bot.core.model.changes import Change
from bot.core.remedies.landing import Landing, landing
from bot.errors import GpunodeError, KubeUnavailableError, WriteUnknownError
from bot.services.ports import KubePort


@dataclass(frozen=True)
class Settled:
    """What the re-read after ``error`` found for ``step``."""

    step: Step
    error: WriteUnknownError
    found: Landing | None  # None: the re-read failed too
    reread_error: str = ""
    #: the re-read's error key and raw params (``GpunodeError.key``/``params``), for its words
    reread_key: str = ""
    reread_params: Mapping[str, object] = field(default_factory=dict)

    @property
    def landed(self) -> bool | None:
        return None if self.found is None else self.found.landed

    @property
    def change(self) -> Change | None:
        """The change as recorded for a write that answered: only when it landed and the
        state before it was captured (a change without its ``before`` cannot be undone)."""
        pending = self.error.pending
        if self.found is None or not self.found.landed or not pending or "before" not in pending:
            return None
        return Change.model_validate({**pending, "dry_run": False, "after": self.found.after})

    def failure(self) -> GpunodeError:
        """The error to record when the step did not (or may not have) land(ed): keyed, with
        the unanswered write's own error quoted as ``reason`` (its key and params beside it,
        so each reader reads both in their language)."""
        what = self.error.message
        cause: dict[str, object] = {
            "reason": what,
            "reason_key": self.error.key,
            "reason_params": self.error.params,
        }
        if self.landed is None:
            return KubeUnavailableError(
                f"{what}; the re-read failed too ({self.reread_error}), so whether it landed is "
                f"unknown: look at {self.step.kind} {self.step.name} before doing anything else",
                code="unknown",
                key="write_unknown_reread_failed",
                params={
                    **cause,
                    "error": self.reread_error,
                    "error_key": self.reread_key,
                    "error_params": dict(self.reread_params),
                    "kind": self.step.kind,
                    "name": self.step.name,
                },
            )
        if self.landed:
            return KubeUnavailableError(
                f"{what}; a re-read shows it landed, but the state before it was not captured, "
                "so it cannot be undone from here",
                code="no_answer",
                key="write_landed_not_undoable",
                params=cause,
            )
        return KubeUnavailableError(
            f"{what}; a re-read shows it did not land, so this step changed nothing: apply "
            "again once the API server answers",
            code="no_answer",
            key="write_did_not_land",
            params=cause,
        )

    def as_json(self) -> dict[str, Any]:
        found = self.found
        return {
            "step": self.step.model_dump(mode="json"),
            "waited_s": self.error.waited_s,
            "landed": self.landed,
            "seen": found.seen if found else None,
            "fields": list(found.fields) if found else [],
            "taint": found.taint if found else None,
            "reread_error": self.reread_error,
            **(
                {"reread_key": self.reread_key, "reread_params": dict(self.reread_params)}
                if self.reread_key
                else {}
            ),
            # the unanswered write's own error (its audit row quotes it): English, and its key
            "write_error": self.error.message,
            **(
                {"write_key": self.error.key, "write_params": dict(self.error.params)}
                if self.error.key
                else {}
            ),
        }


async def settle(
    kube: KubePort, step: Step, error: WriteUnknownError, *, sent_at: datetime
) -> Settled:
    """Re-read ``step``'s object after ``error`` and say whether the write landed."""
    try:
        obj = await kube.read_target(step.kind, step.ref.namespace, step.name)
    except GpunodeError as err:
        return Settled(
            step,
            error,
            None,
            reread_error=err.message,
            reread_key=err.key,
            reread_params=dict(err.params),
        )
    return Settled(step, error, landing(step, obj, sent_at=sent_at))
