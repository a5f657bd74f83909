"""Dry runs and results say what changed per field, old -> new, in quantities as people
write them; the recorded bookkeeping and the patch body stay out of it."""

from __future__ import annotations

import pytest

from bot.core.remedies.field_changes import field_changes, people_quantity


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("resources.requests.memory", "34944Mi", "34.1Gi"),
        ("resources.limits.memory", "64Gi", "64Gi"),
        ("resources.limits.memory", "68719476736", "64Gi"),
        ("resources.requests.memory", "512Mi", "512Mi"),
        ("resources.requests.cpu", "9", "9"),
        ("unschedulable", True, "true"),
        ("resources.limits.cpu", None, ""),
    ],
)
def test_quantities_read_as_people_write_them(field: str, value: object, says: str) -> None:
    assert people_quantity(field, value) == says


def test_a_patch_reads_as_the_fields_it_changed() -> None:
    old = {"limits": {"memory": "64Gi"}, "requests": {"memory": "48Gi", "cpu": "12"}}
    new = {"limits": {"memory": "39Gi"}, "requests": {"memory": "34944Mi", "cpu": "12"}}
    before = {
        "container": "pandas",
        "resourceVersion": "7",
        "env": {"OMP_NUM_THREADS": None},
        "resources": old,
    }
    after = {"resourceVersion": "8", "generation": 3, "resources": new}
    assert [(f.field, f.before, f.after) for f in field_changes(before, after)] == [
        ("resources.limits.memory", "64Gi", "39Gi"),
        ("resources.requests.memory", "48Gi", "34.1Gi"),
    ]  # the CPU request it did not touch, and the bookkeeping, are not listed


def test_the_dry_run_line_shows_old_and_new_not_the_patch_body() -> None:
    from bot.core.model.changes import Change
    from bot.render import acting

    change = Change(
        verb="patch_resources",
        kind="Deployment",
        namespace="data-prep",
        name="preprocess",
        dry_run=True,
        patch={"spec": {"template": {"spec": {"containers": [{"name": "pandas"}]}}}},
        before={"resources": {"limits": {"memory": "64Gi"}}},
        after={"resources": {"limits": {"memory": "48Gi", "cpu": "12"}}},
    )
    for locale, says in (
        ("en", "CPU limit unset → 12, memory limit 64Gi → 48Gi"),
        ("zh-CN", "CPU 限制 未设置 → 12，内存限制 64Gi → 48Gi"),
    ):
        t = acting._t(locale)
        line = str(t.change_line(change, field_changes(change.before, change.after)))
        assert says in line and "containers" not in line and "{" not in line
