"""The prevention kit as files: ``{filename: text}`` rendered from
``templates/kube/prevention/*.yaml.j2`` and the localized notes
``templates/markdown/<locale>/prevention.md.j2``, with parameters from
``bot.core.remedies.prevention.prevention_params``; plus its explanation, one sentence per value
(``templates/sentences/prevention.j2``) saying the rule and the number from the
evidence it came from, as Markdown (the README, the terminal) or as a Slack message.
Pure rendering: writing or uploading files is the caller's job.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.core.model.cluster import ClusterView
from bot.core.remedies.prevention import (
    QUOTA_HEADROOM,
    KitSource,
    PreventionParams,
    prevention_params,
)
from bot.render import environment
from bot.render.blocks import Block, Message, context, fit, header, pack
from bot.render.catalogs import translator
from bot.render.filters import ESCAPERS, format_param, truncate
from bot.render.sentences import Fmt

KIT_FILES = (
    "resourcequota.yaml",
    "limitrange.yaml",
    "prometheusrule.yaml",
    "descheduler-policy.yaml",
    "kubelet-config.yaml",
)
README = "README.md"
FALLBACK_TEXT = 3000  # Slack's limit on a message's notification text


def _sentences(locale: str) -> Any:
    return environment.macros("sentences", "prevention.j2", locale=locale)


def _say(key: str, fmt: Fmt, locale: str, **params: Any) -> str:
    esc = ESCAPERS[fmt]
    p: dict[str, object] = {k: esc(format_param(k, v, locale=locale)) for k, v in params.items()}
    p["raw"] = dict(params)
    return " ".join(str(getattr(_sentences(locale), key)(p)).split())


def _when(at: datetime | None, locale: str) -> str | None:
    """``2026-12-01 02:14 UTC`` as ``locale`` writes the date and time (Babel)."""
    return f"{translator(locale).when(at, 'datetime_min')} UTC" if at is not None else None


def source_line(
    params: PreventionParams, source: KitSource | None, *, fmt: Fmt, locale: str
) -> str:
    """Where the numbers come from (which evidence, read when), as one sentence."""
    src = source or KitSource(kind="live")
    return _say(
        "source",
        fmt,
        locale,
        kind=src.kind,
        at=_when(src.at, locale),
        incident=src.incident or "",
        node=params.node,
    )


def _percents(values: dict[str, int]) -> str:
    return ", ".join(f"{name} {pct}%" for name, pct in values.items())


def value_lines(params: PreventionParams, *, fmt: Fmt, locale: str) -> list[tuple[str, list[str]]]:
    """``[(file, [sentence per value])]`` in ``KIT_FILES`` order: every number in the kit
    with its rule and the measured number behind it."""
    p, k = params, params.kubelet
    cap = k.capacity_memory_bytes
    headroom = round((QUOTA_HEADROOM - 1) * 100)
    quota: list[str] = []
    for q in p.namespaces:
        common = {"namespace": q.namespace, "node": p.node, "headroom_percent": headroom}
        quota += [
            _say(
                "quota_gpu",
                fmt,
                locale,
                quota_gpu=q.quota_gpu,
                gpus=q.gpu_requests,
                gpu_pods=q.gpu_pods,
                namespace=q.namespace,
                node=p.node,
            ),
            _say(
                "quota_requests_memory",
                fmt,
                locale,
                quota=q.quota_memory_requests,
                requests_bytes=q.memory_requests_bytes,
                pods=q.pods,
                **common,
            ),
            _say(
                "quota_limits_memory",
                fmt,
                locale,
                quota=q.quota_memory_limits,
                limits_bytes=q.memory_limits_bytes,
                requests_bytes=q.memory_requests_bytes,
                **common,
            ),
        ]
    lr = p.limit_range
    limits = [
        _say(
            "limit_default_request",
            fmt,
            locale,
            value=lr.default_request_memory,
            median_bytes=lr.median_request_bytes,
            pods=lr.pods_with_requests,
            node=p.node,
        ),
        _say("limit_default_limit", fmt, locale, value=lr.default_limit_memory),
    ]
    if not p.namespaces:
        quota = limits = [_say("no_quota", fmt, locale, node=p.node)]
    alerts = [
        _say(
            "alert_slab",
            fmt,
            locale,
            ratio=f"{p.slab_alert_ratio:.0%}",
            node=p.node,
            threshold_bytes=int(cap * p.slab_alert_ratio),
            capacity_bytes=cap,
        ),
        _say(
            "alert_available",
            fmt,
            locale,
            ratio=f"{p.available_alert_ratio:.0%}",
            threshold_bytes=int(cap * p.available_alert_ratio),
            capacity_bytes=cap,
        ),
    ]
    descheduler = [
        _say(
            "descheduler",
            fmt,
            locale,
            thresholds=_percents(p.descheduler_thresholds),
            targets=_percents(p.descheduler_targets),
        ),
    ]
    kubelet = [
        _say(
            "kube_reserved",
            fmt,
            locale,
            value=k.kube_reserved_memory,
            node=p.node,
            capacity_bytes=cap,
        ),
        _say("system_reserved", fmt, locale, value=k.system_reserved_memory, capacity_bytes=cap),
        _say("eviction_hard", fmt, locale, value=k.eviction_hard_memory, capacity_bytes=cap),
        _say(
            "eviction_soft",
            fmt,
            locale,
            value=k.eviction_soft_memory,
            grace=k.eviction_soft_grace,
            max_grace=str(k.eviction_max_pod_grace_s),
        ),
    ]
    return list(zip(KIT_FILES, [quota, limits, alerts, descheduler, kubelet], strict=True))


def render_prevention_files(
    params: PreventionParams,
    *,
    namespace: str = "monitoring",
    locale: str,
    source: KitSource | None = None,
) -> dict[str, str]:
    """The kit's manifests (``KIT_FILES``) and ``README.md``: what each file does, where the
    numbers come from, every value explained. ``namespace``: where the PrometheusRule goes."""
    env = environment.get_environment(locale="en")  # the manifests' comments are English-only
    files = {
        name: env.get_template(f"kube/prevention/{name}.j2").render(p=params, namespace=namespace)
        for name in KIT_FILES
    }
    files[README] = environment.render(
        "markdown",
        "prevention.md.j2",
        locale=locale,
        p=params,
        source=source_line(params, source, fmt="markdown", locale=locale),
        values=value_lines(params, fmt="markdown", locale=locale),
    )
    return files


def render_prevention_kit(
    view: ClusterView,
    *,
    namespace: str = "monitoring",
    locale: str,
    source: KitSource | None = None,
) -> dict[str, str]:
    """The kit for the node in ``view``. ``namespace`` is where the PrometheusRule goes."""
    return render_prevention_files(
        prevention_params(view), namespace=namespace, locale=locale, source=source
    )


def render_kit_markdown(files: dict[str, str], *, locale: str) -> str:
    """The whole kit as one Markdown document (a terminal): the README, then each
    manifest in a fenced block under its file name."""
    manifests = {name: files[name] for name in KIT_FILES}
    return environment.render(
        "markdown", "prevention_kit.md.j2", locale=locale, readme=files[README], files=manifests
    )


def kit_message(params: PreventionParams, source: KitSource | None, *, locale: str) -> Message:
    """The Slack message that goes with the uploaded files: where the numbers come from,
    and one line per value under each file's name (each section within Slack's limits)."""
    t = environment.macros("slack", "prevention.j2", locale=locale)
    blocks: list[Block] = [
        header(str(t.header(params.node)).strip()),
        context(source_line(params, source, fmt="mrkdwn", locale=locale)),
    ]
    for name, lines in value_lines(params, fmt="mrkdwn", locale=locale):
        title = str(t.file_title(name)).strip()
        blocks += pack(title, [str(t.value_line(line)).strip() for line in lines])
    tail = [context(str(t.files_follow(len(KIT_FILES) + 1)).strip())]
    # many GPU namespaces: what does not fit Slack's limits is in the uploaded README.md
    blocks = fit(blocks, str(t.rest_in_readme()).strip(), tail=tail)
    return truncate(str(t.fallback(params.node)).strip(), FALLBACK_TEXT), blocks
