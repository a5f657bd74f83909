"""One diagnosis per corpus scenario per test process, shared by every test that reads it.

``judged(name)`` runs the scenario through a fresh stand-in, the real diagnostic Job and
collector, the gateway and the analysis (``gpunode_sandbox.corpus.judge_with_view``) the
first time a process asks for it, and returns the same result afterwards. The label and
advice tests (``tests/kube/test_corpus.py``) and the every-locale rendering test
(``tests/render/test_locale_rendering.py``) read the same inputs, so each scenario's Job runs
once per xdist worker instead of once per test. Readers must not change what they get.
"""

from __future__ import annotations

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.cluster import ClusterView
from bot.core.model.evidence import EvidenceBundle
from gpunode_sandbox.corpus import judge_with_view
from gpunode_sandbox.kubesim import KubeSim, load_scenario

Judged = tuple[Diagnosis, EvidenceBundle, ClusterView]
_JUDGED: dict[str, Judged] = {}


async def judged(name: str) -> Judged:
    """(diagnosis, bundle, cluster view) of the corpus scenario ``name``: one stand-in and one
    diagnosis per process."""
    if name not in _JUDGED:
        sim = KubeSim(load_scenario(name))
        await sim.start()
        try:
            _JUDGED[name] = await judge_with_view(load_scenario(name), url=sim.url)
        finally:
            await sim.stop()
    return _JUDGED[name]
