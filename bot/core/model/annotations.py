"""The annotation keys gpunode reads on pods and nodes, apart from the models that use them.

What cuts a list page to slim records (``bot.kube.cutting``, in the page decoder's process)
keeps these annotations and nothing else; it imports this module, not ``gangs`` or
``remedies.autoscalers``, whose models (pydantic) the decoder has no use for (~20 MiB of its
resident memory, counted in the bot's process tree, issue #25). Pure constants.
"""

from __future__ import annotations

#: Volcano's PodGroup of a pod (``bot.core.model.gangs``)
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
#: annotation keys the gateway keeps on PodInfo for ``bot.core.model.gangs``
ANNOTATION_KEYS = (VOLCANO_GROUP_ANNOTATION,)

#: the autoscalers' keys (``bot.core.remedies.autoscalers``)
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
#: the pod annotations tier 1 reads (kept on PodInfo by the gateway)
POD_ANNOTATIONS = (DO_NOT_DISRUPT, SAFE_TO_EVICT)
#: what tier 1 sets on the cordoned node for the incident (the Node admission policy in
#: deploy/base allows exactly these keys, with exactly this value)
NODE_PROTECTION: dict[str, str] = {SCALE_DOWN_DISABLED: "true", DO_NOT_DISRUPT: "true"}
