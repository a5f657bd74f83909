"""The aiohttp application: discovery, REST routing, watch streams, logs, metrics.

Path grammar (after ``/api/v1`` or ``/apis/GROUP/VERSION``)::

    PLURAL                          list (all namespaces) / create cluster-scoped
    PLURAL/NAME[/SUB]               cluster-scoped object or subresource
    namespaces/NS/PLURAL            namespaced list / create
    namespaces/NS/PLURAL/NAME[/SUB] namespaced object or subresource

Every error leaves as a ``Status`` object; every request is logged in ``sim.requests`` and
checked against ``sim.faults`` first.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import yaml
from aiohttp import web

from gpunode_sandbox.kubesim import eviction, openapi, protobuf, resources, tables
from gpunode_sandbox.kubesim.authz import (
    CURRENT_USER,
    Attributes,
    UserInfo,
    is_resource_path,
    resource_verb,
    self_subject_access_review,
    self_subject_rules_review,
)
from gpunode_sandbox.kubesim.encoding import encode as _encode
from gpunode_sandbox.kubesim.encoding import list_body
from gpunode_sandbox.kubesim.fields import check_field_selector
from gpunode_sandbox.kubesim.impersonation import impersonate
from gpunode_sandbox.kubesim.resources import Resource
from gpunode_sandbox.kubesim.rules import resize_supported
from gpunode_sandbox.kubesim.selectors import parse_field_selector, parse_label_selector
from gpunode_sandbox.kubesim.statuses import ApiError
from gpunode_sandbox.kubesim.store import Obj, key_of
from gpunode_sandbox.kubesim.tokenreview import token_review

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from gpunode_sandbox.kubesim.sim import KubeSim

APPLY_PATCH = "application/apply-patch+yaml"
SIM_KEY: web.AppKey[KubeSim] = web.AppKey("sim")
USER_KEY: web.RequestKey[UserInfo] = web.RequestKey("kubesim_user", UserInfo)


@dataclass
class Route:
    res: Resource
    namespace: str | None
    name: str | None
    sub: str


def parse_route(
    group: str, version: str, tail: str, installed: frozenset[str] | set[str] = frozenset()
) -> Route:
    segs = [s for s in tail.split("/") if s]
    nsd = None
    if len(segs) >= 3 and segs[0] == "namespaces":
        r = resources.find(group, version, segs[2])
        if r is not None and r.namespaced:
            nsd = segs[1]
            segs = segs[2:]
    if not segs:
        raise ApiError(404, "the server could not find the requested resource")
    res = resources.find(group, version, segs[0])
    if res is not None and res.crd and res.key not in installed:
        res = None  # the CRD is not installed on this cluster
    if res is None or len(segs) > 3:
        raise ApiError(404, "the server could not find the requested resource")
    name = segs[1] if len(segs) > 1 else None
    sub = segs[2] if len(segs) > 2 else ""
    if sub and sub not in res.subresources:
        raise ApiError(404, "the server could not find the requested resource")
    return Route(res, nsd, name, sub)


def _dry_run(request: web.Request) -> bool:
    return "All" in request.query.getall("dryRun", [])


async def _json_body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw:
        return {}
    if request.content_type == protobuf.MEDIA_TYPE:
        return protobuf.decode(raw)
    if request.content_type == APPLY_PATCH:
        try:  # YAML (kubectl sends JSON, which is YAML)
            return yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise ApiError(400, f"error decoding YAML: {exc}") from exc
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ApiError(400, f"invalid JSON body: {exc}") from exc


def _json(obj: Any, status: int = 200) -> web.Response:
    return _json_bytes(_encode(obj).encode(), status)


def _json_bytes(body: bytes, status: int = 200) -> web.Response:
    return web.Response(body=body, status=status, content_type="application/json")


#: items per piece of a list answer sent as it is made (about 330 KiB of pod metrics)
PIECE_ITEMS = 1000


def _json_pieces(head: Obj, count: int, pieces: Iterator[list[bytes]]) -> web.Response:
    """A list answer, ``head``'s fields then ``items`` (``count`` of them, each as its JSON,
    ``encode_bytes``, from ``pieces``), its bytes exactly ``_json({**head, "items": [...]})``'s
    (a list's encoding is its items' joined by ","). A list of more than ``PIECE_ITEMS`` is
    sent chunked, each piece made as the answer is sent: the client reads the first items
    while the last are made, as from the API server's streaming list encoder. A shorter one
    is sent whole with its length."""
    if count <= PIECE_ITEMS:
        return _json_bytes(list_body(head, [item for piece in pieces for item in piece]))
    start = _encode(head)[:-1] + "," if head else "{"

    async def body() -> AsyncIterator[bytes]:
        yield (start + '"items":[').encode()
        sep = b""
        for piece in pieces:
            yield sep + b",".join(piece)
            sep = b","
        yield b"]}"

    return web.Response(body=body(), content_type="application/json")


@web.middleware
async def middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    sim = request.app[SIM_KEY]
    sim.requests.append((request.method, request.path, request.query_string))
    auth = request.headers.get("Authorization", "")
    sim.tokens.append(auth.removeprefix("Bearer ").strip() or None)
    reset = None
    try:
        user = impersonate(
            sim.authorizer,
            sim.authn.authenticate(auth),
            request.headers,
            method=request.method,
            path=request.path,
        )
        request[USER_KEY] = user
        reset = CURRENT_USER.set(user)
        if not is_resource_path(request.path):
            verb = request.method.lower()
            sim.authorizer.authorize(Attributes(user, verb, path=request.path))
        after = await sim.faults.apply(request.method, request.path)
        response: web.StreamResponse = await handler(request)
        if after is not None and after.hold_s:
            await asyncio.sleep(after.hold_s)  # stored; the answer is late (a slow etcd)
        if after is not None and after.drop and request.transport is not None:
            request.transport.close()  # stored; the answer is lost with the connection
        return response
    except ApiError as err:
        return _json(err.status(), err.code)
    finally:
        if reset is not None:
            CURRENT_USER.reset(reset)


def _authorize(request: web.Request, route: Route, *, verb: str = "") -> None:
    """RBAC for a resource request (403 in the API server's words when denied)."""
    attrs = Attributes(
        request[USER_KEY],
        verb
        or resource_verb(
            request.method,
            named=route.name is not None,
            watch=request.query.get("watch") in ("true", "1"),
        ),
        api_group=route.res.group,
        resource=route.res.plural,
        subresource=route.sub,
        namespace=route.namespace or "",
        name=route.name or "",
    )
    request.app[SIM_KEY].authorizer.authorize(attrs)


def build_app(sim: KubeSim) -> web.Application:
    app = web.Application(middlewares=[middleware], client_max_size=64 * 1024 * 1024)
    app[SIM_KEY] = sim
    app.router.add_get("/version", version)
    app.router.add_get("/version/", version)
    app.router.add_get("/api", api_versions)
    app.router.add_get("/api/", api_versions)
    app.router.add_get("/apis", api_groups)
    app.router.add_get("/apis/", api_groups)
    app.router.add_get("/api/v1", resource_list_core)
    app.router.add_get("/api/v1/", resource_list_core)
    app.router.add_get("/apis/{group}/{version}", resource_list_group)
    app.router.add_get("/apis/{group}/{version}/", resource_list_group)
    app.router.add_get("/apis/{group}", group_info)
    app.router.add_get("/apis/{group}/", group_info)
    app.router.add_route("*", "/api/v1/{tail:.+}", rest_core)
    app.router.add_route("*", "/apis/{group}/{version}/{tail:.+}", rest_group)
    openapi.add_routes(app.router, lambda request: request.app[SIM_KEY].kube_version)
    app.router.add_get("/healthz", ok_text)
    app.router.add_get("/readyz", ok_text)
    app.router.add_route("*", "/{tail:.*}", not_found_route)
    return app


async def not_found_route(_request: web.Request) -> web.Response:
    raise ApiError(404, "the server could not find the requested resource")


async def ok_text(_request: web.Request) -> web.Response:
    return web.Response(text="ok")


# ---- discovery -----------------------------------------------------------------------------
async def version(request: web.Request) -> web.Response:
    v = request.app[SIM_KEY].kube_version
    major, minor = v.split(".")[:2]
    return _json(
        {
            "major": major,
            "minor": minor,
            "gitVersion": f"v{major}.{minor}.0",
            "gitCommit": "gpunode-kubesim",
            "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.25",
            "compiler": "gc",
            "platform": "linux/amd64",
        }
    )


async def api_versions(_request: web.Request) -> web.Response:
    return _json(
        {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}
            ],
        }
    )


def _groups(installed: frozenset[str] | set[str] = frozenset()) -> list[Obj]:
    out: dict[str, Obj] = {}
    for gv in resources.group_versions(installed):
        if "/" not in gv:
            continue
        g, v = gv.split("/")
        entry = {"groupVersion": gv, "version": v}
        out.setdefault(g, {"name": g, "versions": [], "preferredVersion": entry})
        out[g]["versions"].append(entry)
    return list(out.values())


async def api_groups(request: web.Request) -> web.Response:
    groups = _groups(request.app[SIM_KEY].crds)
    return _json({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})


async def group_info(request: web.Request) -> web.Response:
    for g in _groups(request.app[SIM_KEY].crds):
        if g["name"] == request.match_info["group"]:
            return _json({"kind": "APIGroup", "apiVersion": "v1", **g})
    raise ApiError(404, "the server could not find the requested resource")


def _resource_list(gv: str, installed: frozenset[str] | set[str] = frozenset()) -> Obj:
    sim_resources = resources.group_versions(installed).get(gv)
    if sim_resources is None:
        raise ApiError(404, "the server could not find the requested resource")
    items: list[Obj] = []
    for r in sim_resources:
        items.append(
            {
                "name": r.plural,
                "singularName": r.singular,
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": list(r.verbs),
                "shortNames": list(r.short_names),
            }
        )
        for sub in r.subresources:
            kind, group, ver = resources.SUBRESOURCE_KINDS.get(sub, (r.kind, "", ""))
            entry: Obj = {
                "name": f"{r.plural}/{sub}",
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": kind,
                "verbs": {
                    "eviction": ["create"],
                    "log": ["get"],
                    "resize": ["get", "patch", "update"],
                }.get(sub, ["get", "patch", "update"]),
            }
            if group:
                entry.update(group=group, version=ver)
            items.append(entry)
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": items}


async def resource_list_core(request: web.Request) -> web.Response:
    lst = _resource_list("v1")
    if not resize_supported(request.app[SIM_KEY].kube_version):
        lst["resources"] = [r for r in lst["resources"] if r["name"] != "pods/resize"]
    return _json(lst)


async def resource_list_group(request: web.Request) -> web.Response:
    gv = f"{request.match_info['group']}/{request.match_info['version']}"
    return _json(_resource_list(gv, request.app[SIM_KEY].crds))


# ---- REST ------------------------------------------------------------------------------------
async def rest_core(request: web.Request) -> web.StreamResponse:
    return await _rest(request, parse_route("", "v1", request.match_info["tail"]))


async def rest_group(request: web.Request) -> web.StreamResponse:
    m = request.match_info
    route = parse_route(m["group"], m["version"], m["tail"], request.app[SIM_KEY].crds)
    return await _rest(request, route)


async def _rest(request: web.Request, route: Route) -> web.StreamResponse:
    sim = request.app[SIM_KEY]
    res, m = route.res, request.method
    _authorize(request, route)
    if res.kind == "SelfSubjectAccessReview" and m == "POST":
        body = await _json_body(request)
        return _json(self_subject_access_review(sim.authorizer, request[USER_KEY], body), 201)
    if res.kind == "SelfSubjectReview" and m == "POST":
        await _json_body(request)  # decoded (or refused) like any body; it asks nothing
        return _json(self_subject_review(request[USER_KEY]), 201)
    if res.kind == "TokenReview" and m == "POST":
        return _json(token_review(sim.authn, await _json_body(request)), 201)
    if res.kind == "SelfSubjectRulesReview" and m == "POST":
        body = await _json_body(request)
        return _json(self_subject_rules_review(sim.authorizer, request[USER_KEY], body), 201)
    if not res.stored:
        if m != "GET":
            raise ApiError(405, "the server does not allow this method on the requested resource")
        if res.kind == "PodMetrics" and route.name is None:
            return _json_pieces(*sim.pod_metrics_pieces(route.namespace, PIECE_ITEMS))
        return _json(sim.metrics(res, route.namespace, route.name))
    if route.name is None:
        if m == "GET":
            if request.query.get("watch") in ("true", "1"):
                return await _watch(request, route)
            if _wants_table(request, route):
                return _json(_as_table(request, route, _list(request, route)))
            head, rows = _page(request, route)
            # each item's encoding made once per version (the watch cache's serializations)
            return _json_bytes(list_body(head, [sim.encoded(res, k, o) for k, o in rows]))
        if m == "POST":
            body = await _json_body(request)
            return _json(sim.api.create(res, route.namespace, body, dry_run=_dry_run(request)), 201)
        raise ApiError(405, "the server does not allow this method on the requested resource")
    if route.sub == "log":
        return web.Response(text=sim.pod_log(route.namespace or "", route.name, request.query))
    if route.sub == "eviction":
        if m != "POST":
            raise ApiError(405, "eviction supports POST only")
        body = await _json_body(request)
        return _json(
            eviction.evict(
                sim.api, route.namespace or "", route.name, body, dry_run=_dry_run(request)
            ),
            201,
        )
    if route.sub == "resize" and not resize_supported(sim.kube_version):
        raise ApiError(404, "the server could not find the requested resource")
    if m == "GET":
        stored = sim.api.get(res.key, route.namespace, route.name)
        if _wants_table(request, route):
            return _json(_as_table(request, route, sim.present(res, stored)))
        return _json_bytes(sim.encoded(res, (route.namespace or "", route.name), stored))
    if m == "PUT":
        body = await _json_body(request)
        return _json(
            sim.api.update(
                res,
                route.namespace,
                route.name,
                body,
                subresource=route.sub,
                dry_run=_dry_run(request),
            )
        )
    if m == "PATCH":
        body = await _json_body(request)
        if request.content_type == APPLY_PATCH:
            return _server_side_apply(request, route, body)
        return _json(
            sim.api.patch(
                res,
                route.namespace,
                route.name,
                body,
                request.content_type,
                subresource=route.sub,
                dry_run=_dry_run(request),
            )
        )
    if m == "DELETE":
        body = await _json_body(request)
        policy = request.query.get("propagationPolicy") or body.get("propagationPolicy")
        rv = (body.get("preconditions") or {}).get("resourceVersion")
        dry = _dry_run(request) or "All" in (body.get("dryRun") or [])
        grace = request.query.get("gracePeriodSeconds") or body.get("gracePeriodSeconds")
        return _json(
            sim.api.delete(
                res,
                route.namespace,
                route.name,
                dry_run=dry,
                propagation=policy,
                precondition_rv=rv,
                grace_period=None if grace is None else int(grace),
            )
        )
    raise ApiError(405, "the server does not allow this method on the requested resource")


def self_subject_review(user: UserInfo) -> Obj:
    """``kubectl auth whoami``: the authenticated user as the authenticator saw it."""
    info: Obj = {"username": user.username, "groups": list(user.groups)}
    if user.uid:
        info["uid"] = user.uid
    return {
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "status": {"userInfo": info},
    }


def _server_side_apply(request: web.Request, route: Route, body: Any) -> web.Response:
    """``application/apply-patch+yaml``: create the object when it does not exist (201),
    otherwise merge the applied configuration into it (200). The API server insists on a
    field manager and on the applied object naming itself as the URL does."""
    sim = request.app[SIM_KEY]
    if not request.query.get("fieldManager"):
        raise ApiError(
            422,
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
            "is required for apply patch",
            reason="Invalid",
        )
    if not isinstance(body, dict):
        raise ApiError(400, "the applied configuration must be an object")
    name = (body.get("metadata") or {}).get("name")
    if name != route.name:
        raise ApiError(
            400,
            f"the name of the object ({name}) does not match the name on the URL ({route.name})",
        )
    dry = _dry_run(request)
    if sim.api.store.get(route.res.key, route.namespace, route.name or "") is None:
        if route.sub:
            raise not_found_error(route)
        _authorize(request, route, verb="create")  # an apply that creates needs both rights
        return _json(sim.api.create(route.res, route.namespace, body, dry_run=dry), 201)
    return _json(
        sim.api.patch(
            route.res,
            route.namespace,
            route.name or "",
            body,
            "application/merge-patch+json"
            if route.res.crd
            else "application/strategic-merge-patch+json",
            subresource=route.sub,
            dry_run=dry,
        )
    )


def not_found_error(route: Route) -> ApiError:
    plural = route.res.plural + (f".{route.res.group}" if route.res.group else "")
    return ApiError(
        404,
        f'{plural} "{route.name}" not found',
        name=route.name,
        kind=route.res.plural,
        group=route.res.group,
    )


def _wants_table(request: web.Request, route: Route) -> bool:
    """Whether the answer is a Table (kubectl's ``get``): asked for, and not a subresource."""
    return not route.sub and tables.wants_table(request.headers.get("Accept", ""))


def _as_table(request: web.Request, route: Route, answer: Obj) -> Obj:
    """``answer`` (a list or one object) as a Table when the client asked for one."""
    if not _wants_table(request, route):
        return answer
    items = answer["items"] if route.name is None else [answer]
    meta = answer.get("metadata") if route.name is None else {}
    return tables.table(
        route.res,
        items,
        now=datetime.now(UTC),
        include_object=request.query.get("includeObject", "Metadata"),
        list_meta=meta,
    )


def _matcher(request: web.Request, route: Route) -> Any:
    check_field_selector(route.res, request.query.get("fieldSelector"))
    label = parse_label_selector(request.query.get("labelSelector"))
    field = parse_field_selector(request.query.get("fieldSelector"))
    return lambda o: label(o["metadata"].get("labels") or {}) and field(o)


def _node_name_selected(route: Route, text: str | None) -> str | None:
    """The node a pod list's ``spec.nodeName=X`` (or ``==``) field selector names, if any:
    the API server answers it from its index, not by reading every pod."""
    if route.res.key != "pods":
        return None
    for term in (text or "").split(","):
        path, _, value = term.replace("==", "=").partition("=")
        if path.strip() == "spec.nodeName" and "!" not in path:
            return value.strip()
    return None


def _list(request: web.Request, route: Route) -> Obj:
    """``_page`` as the list object it answers (``served`` items; for a Table)."""
    sim = request.app[SIM_KEY]
    head, rows = _page(request, route)
    return {**head, "items": [sim.served(route.res, o) for _, o in rows]}


def _page(request: web.Request, route: Route) -> tuple[Obj, list[tuple[tuple[str, str], Obj]]]:
    """One page, as the list's fields but ``items`` (kind, apiVersion, metadata) and its
    items' (key, stored object): ``limit`` items after the ``continue`` token's key, read in
    API order from there (O(page), as the API server's cache serves it, not a filter over the
    whole set).

    Every page of one list carries the first page's ``resourceVersion`` (the token keeps it),
    as the API server's do: a client that watches from it is sent every change made while
    it paged. (The pages themselves are read as the store is now, not from a snapshot at
    that version; the watch brings a client to the same state.) A token whose version was
    compacted away answers 410 Expired, as the API server's does."""
    sim = request.app[SIM_KEY]
    match = _matcher(request, route)
    store = sim.api.store
    after: tuple[str, str] | None = None
    listed_at = store.rv
    if cont := request.query.get("continue"):
        try:
            token = json.loads(base64.urlsafe_b64decode(cont.encode()).decode())
            after = (str(token["start"][0]), str(token["start"][1]))
            listed_at = int(token["rv"])
        except (ValueError, KeyError, IndexError, TypeError, binascii.Error) as exc:
            raise ApiError(400, f"continue key is not valid: {exc}", reason="BadRequest") from exc
        if listed_at < store.compacted_rv:
            raise ApiError(
                410,
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter.",
                reason="Expired",
            )
    node = _node_name_selected(route, request.query.get("fieldSelector"))
    among = store.pods_on(node) if node is not None else None
    limit = int(request.query.get("limit") or 0)
    meta: Obj = {"resourceVersion": str(listed_at)}
    items: list[tuple[tuple[str, str], Obj]] = []
    last: tuple[str, str] | None = None
    rows = store.scan(route.res.key, route.namespace, after=after, among=among)
    for key, obj in rows:
        if not match(obj):
            continue
        if limit > 0 and len(items) == limit:
            # more remain: the token names the last key sent (the API server's is opaque too)
            token = {"rv": listed_at, "start": list(last or key)}
            meta["continue"] = base64.urlsafe_b64encode(json.dumps(token).encode()).decode()
            break
        items.append((key, obj))
        last = key
    head = {"kind": f"{route.res.kind}List", "apiVersion": route.res.api_version, "metadata": meta}
    return head, items


async def _watch(request: web.Request, route: Route) -> web.StreamResponse:
    sim = request.app[SIM_KEY]
    match = _matcher(request, route)
    timeout = float(request.query.get("timeoutSeconds") or 1800)
    rv = request.query.get("resourceVersion") or ""
    store = sim.api.store
    watcher = store.subscribe(route.res.key)
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    await resp.prepare(request)

    def wanted(obj: Obj) -> bool:
        ns = obj["metadata"].get("namespace")
        return (route.namespace is None or ns == route.namespace) and bool(match(obj))

    async def send(kind: str, obj: Obj) -> None:
        """One event line, made before the write yields: ``obj`` (the stored object, or an
        older version of it) is read, never changed, as the store's contract has it."""
        if tables.wants_table(request.headers.get("Accept", "")):  # kubectl get -w
            include = request.query.get("includeObject", "Metadata")
            shown = tables.table(
                route.res,
                [sim.present(route.res, obj)],
                now=datetime.now(UTC),
                include_object=include,
            )
            await resp.write(_encode({"type": kind, "object": shown}).encode() + b"\n")
            return
        # {"type":…,"object":…} as encoded whole; the object's kept encoding while current
        shown_bytes = sim.encoded(route.res, key_of(obj), obj)
        start = '{"type":' + _encode(kind) + ',"object":'
        await resp.write(start.encode() + shown_bytes + b"}\n")

    async def bookmark() -> None:
        """What the API server sends now and then, and just before a watch times out, when
        the client allowed it: only the resourceVersion the watch has caught up to."""
        shown = {
            "kind": route.res.kind,
            "apiVersion": route.res.api_version,
            "metadata": {"resourceVersion": str(store.rv)},
        }
        await resp.write(_encode({"type": "BOOKMARK", "object": shown}).encode() + b"\n")

    try:
        last = store.rv
        if rv in ("", "0"):
            for o in store.list(route.res.key, route.namespace):
                if wanted(o):
                    await send("ADDED", o)
        else:
            backlog = store.events_since(route.res.key, int(rv))
            if backlog is None:
                gone = ApiError(
                    410, f"too old resource version: {rv} ({store.rv})", reason="Expired"
                ).status()
                await resp.write(_encode({"type": "ERROR", "object": gone}).encode() + b"\n")
                return resp
            for ev in backlog:
                if wanted(ev.obj):
                    await send(ev.type, ev.obj)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        bookmarks = request.query.get("allowWatchBookmarks") in ("true", "1")
        while (left := deadline - loop.time()) > 0:
            try:
                queued = await asyncio.wait_for(
                    watcher.queue.get(), min(left, sim.bookmark_s) if bookmarks else left
                )
            except TimeoutError:
                if bookmarks:  # nothing queued: every event up to now has been sent
                    await bookmark()
                continue
            if queued is None:  # the server is shutting down (``Store.end_watches``)
                break
            if queued.rv > last and wanted(queued.obj):
                await send(queued.type, queued.obj)
    except ConnectionResetError:
        pass  # the client went away; nothing to tell it
    finally:
        store.unsubscribe(watcher)
    return resp
