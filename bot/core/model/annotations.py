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

#: the controller annotations a remedy's rollout facts read (``bot.kube.rollouts``): Argo CD's
#: tracking id, the Helm release Helm 3 writes on every object of a release, and the values
#: keys a team names for gpunode; the owner informers keep these and no other
#: (``bot.kube.ownerrecords``: ``last-applied-configuration`` alone is the whole object again)
ARGO_TRACKING = "argocd.argoproj.io/tracking-id"
HELM_RELEASE = "meta.helm.sh/release-name"
HELM_RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"
#: the prefix of the annotation a team sets on the workload (in its chart's template) to name
#: the values key of a field (``gpunode.io/helm-values-key.memory-limit``)
HELM_KEY_ANNOTATION = "gpunode.io/helm-values-key."
CONTROLLER_ANNOTATIONS = (ARGO_TRACKING, HELM_RELEASE, HELM_RELEASE_NAMESPACE)
