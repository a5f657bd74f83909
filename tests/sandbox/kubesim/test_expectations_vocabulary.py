"""The corpus labels verdicts in its own words; they are the product's causes, no more, no
fewer, so every label can be met and every cause can be labelled."""

from __future__ import annotations

from typing import get_args

from bot.core.diagnosis.findings import VerdictCause as ProductCause
from gpunode_sandbox.kubesim.expectations import VerdictCause as LabelledCause


def test_the_corpus_labels_are_the_products_verdict_causes() -> None:
    assert set(get_args(LabelledCause)) == set(get_args(ProductCause))
