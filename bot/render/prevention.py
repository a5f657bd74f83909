"""The prevention kit as files: ``{filename: text}`` rendered from
``templates/kube/prevention/*.yaml.j2`` and the localized notes
``templates/markdown/<locale>/prevention.md.j2``, with parameters from
``bot.core.prevention.prevention_params``. Pure rendering: writing files is the caller's job.
"""

from __future__ import annotations

from bot.core.cluster import ClusterView
from bot.core.prevention import PreventionParams, prevention_params
from bot.render import environment

KIT_FILES = (
    "resourcequota.yaml",
    "limitrange.yaml",
    "prometheusrule.yaml",
    "descheduler-policy.yaml",
    "kubelet-config.yaml",
)


def render_prevention_files(
    params: PreventionParams, *, namespace: str = "monitoring", locale: str = "en"
) -> dict[str, str]:
    env = environment.get_environment()
    files = {
        name: env.get_template(f"kube/prevention/{name}.j2").render(p=params, namespace=namespace)
        for name in KIT_FILES
    }
    files["README.md"] = environment.render("markdown", "prevention.md.j2", locale=locale, p=params)
    return files


def render_prevention_kit(
    view: ClusterView, *, namespace: str = "monitoring", locale: str = "en"
) -> dict[str, str]:
    """The kit for the node in ``view``. ``namespace`` is where the PrometheusRule goes."""
    return render_prevention_files(prevention_params(view), namespace=namespace, locale=locale)
