"""A reference to one Kubernetes object. Pure: no I/O."""

from __future__ import annotations

from typing import NamedTuple


class ObjectRef(NamedTuple):
    """``kind``, ``namespace`` ("" when cluster-scoped) and ``name`` of one object.

    A tuple, so it keys dicts and sorts; ``key`` is the ``Kind/namespace/name`` text that
    plans, staleness checks and messages show (``Kind//name`` when cluster-scoped)."""

    kind: str
    namespace: str
    name: str

    @classmethod
    def cluster_scoped(cls, kind: str, name: str) -> ObjectRef:
        """A cluster-scoped object (a Node, a PriorityClass): it has no namespace."""
        return cls(kind, "", name)

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    def __str__(self) -> str:
        return self.key
