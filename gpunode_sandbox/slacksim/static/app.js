// Console controller: state fetch, live updates (SSE, polling fallback), user actions.
"use strict";

const ui = {user: localStorage.getItem("user") || "U0ALICE", channel: "C0INCIDENT",
            thread: null, data: null, modalKey: null,
            // ?lang=zh-CN picks the console's language; else the acting person's Slack locale
            lang: new URLSearchParams(location.search).get("lang") || ""};
const $ = (id) => document.getElementById(id);

// The console's own wording (slacksim/labels/<locale>.yaml, sent with the state):
// label("replies", {n: 3}) fills {n}. English until the first state arrives.
function label(key, params = {}) {
  const text = (ui.data?.labels || {})[key] || key;
  return text.replace(/\{(\w+)\}/g, (m, name) => (name in params ? String(params[name]) : m));
}

function applyLabels() {
  document.documentElement.lang = ui.data.locale || "en";
  for (const node of document.querySelectorAll("[data-label]")) node.textContent = label(node.dataset.label);
  for (const node of document.querySelectorAll("[data-label-placeholder]")) node.placeholder = label(node.dataset.labelPlaceholder);
}

const lookup = {
  userName(id) { const u = (ui.data?.users || []).find((x) => x.id === id); return u ? u.name : id; },
  channelName(id) { const c = (ui.data?.channels || []).find((x) => x.id === id); return c ? c.name.replace(/^#/, "") : id; },
};

async function post(path, body) {
  const resp = await fetch("/console/api/" + path, {method: "POST", headers: {"Content-Type": "application/json"},
                                                   body: JSON.stringify(body)});
  return resp.json();
}

async function refresh() {
  const q = new URLSearchParams({user: ui.user, channel: ui.channel});
  if (ui.lang) q.set("lang", ui.lang);
  const resp = await fetch("/console/api/state?" + q);
  ui.data = await resp.json();
  render();
}

function fmtTime(ts) {
  return new Date(parseFloat(ts) * 1000).toLocaleTimeString([], {hour: "2-digit", minute: "2-digit", second: "2-digit"});
}

function showConfirm(confirm) {
  return new Promise((resolve) => {
    const root = $("confirm-root");
    root.replaceChildren();
    const done = (ok) => { root.replaceChildren(); resolve(ok); };
    const yes = el("button", {className: "bk-button " + (confirm.style || "primary"), "data-testid": "confirm-yes", type: "button"}, [renderTextObject(confirm.confirm, lookup)]);
    const no = el("button", {className: "bk-button default", "data-testid": "confirm-no", type: "button"}, [renderTextObject(confirm.deny, lookup)]);
    yes.addEventListener("click", () => done(true));
    no.addEventListener("click", () => done(false));
    root.append(el("div", {className: "overlay"}, [el("div", {className: "dialog", "data-testid": "confirm-dialog", role: "dialog"}, [
      el("h3", {text: confirm.title.text}), el("p", {}, [renderTextObject(confirm.text, lookup)]), el("div", {className: "dialog-buttons"}, [no, yes])])]));
  });
}

function buttonHandler(message) {
  return async (block, element) => {
    if (element.confirm && !(await showConfirm(element.confirm))) return;
    const res = await post("click", {user: ui.user, channel: ui.channel, ts: message.ts,
                                     action_id: element.action_id, block_id: block.block_id});
    setStatus(res);
  };
}

function setStatus(res) {
  const s = $("command-status");
  if (res.error) s.textContent = label("error", {error: res.error});
  else if (res.starting) s.textContent = label("starting", {text: res.text});
  else if (res.status === 0) s.textContent = label("unreachable", {error: res.body});
  else if (res.status !== undefined && res.status !== null) s.textContent = label("answered", {status: res.status, seconds: res.elapsed_s.toFixed(2)});
}

function fmtSize(n) {
  if (n === undefined || n === null) return "";
  const units = ["B", "KB", "MB", "GB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + " " + units[i];
}

// A shared file as Slack shows it: a card with the title (opens the file) and its name/size.
function renderFile(f) {
  const link = el("a", {href: f.url_private, target: "_blank", rel: "noopener", "data-testid": "file",
                        text: f.title || f.name});
  const meta = el("div", {className: "file-meta", "data-testid": "file-meta",
                          text: [f.name, fmtSize(f.size)].filter(Boolean).join(" · ")});
  const card = el("div", {className: "file", "data-testid": "file-card"}, [el("span", {className: "file-icon", text: "\u{1F4C4}"}),
                                         el("div", {}, [link, meta])]);
  // Slack shows images inline and opens other files in a viewer: images get a preview, an
  // HTML document (the postmortem draft) a sandboxed frame below its card (no scripts run)
  if ((f.mimetype || "").startsWith("image/")) {
    const img = el("img", {className: "file-image", src: f.url_private, alt: f.alt_txt || f.title || f.name,
                           "data-testid": "file-image"});
    return el("div", {className: "file-block"}, [card, img]);
  }
  if (f.mimetype === "text/html") {
    const frame = el("iframe", {className: "file-frame", src: f.url_private, title: f.title || f.name,
                                sandbox: "", "data-testid": "file-frame"});
    return el("div", {className: "file-block"}, [card, frame]);
  }
  return card;
}

// Message nodes are reused while their message is unchanged, and lists are patched in place
// (not rebuilt): a live update must not swallow a click, drop a text selection or jump.
let nodeCache = new Map();
let nextCache = new Map();

function cachedMessage(m, opts = {}) {
  const key = JSON.stringify([m, !!opts.ephemeral, !!opts.inThread]);
  const node = nodeCache.get(key) || nextCache.get(key) || renderMessage(m, opts);
  nextCache.set(key, node);
  return node;
}

function patchChildren(box, nodes) {
  nodes.forEach((node, i) => { if (box.children[i] !== node) box.insertBefore(node, box.children[i] || null); });
  while (box.children.length > nodes.length) box.lastElementChild.remove();
}

function renderMessage(m, {ephemeral = false, inThread = false} = {}) {
  const user = (ui.data.users || []).find((u) => u.id === m.user);
  const name = user ? (user.real_name || user.name) : (m.user === "USLACKBOT" ? "Slackbot" : m.user || "?");
  const head = el("div", {className: "msg-head"}, [el("b", {text: name}),
    user && user.is_bot ? el("span", {className: "badge", text: label("app")}) : document.createTextNode(""),
    el("span", {className: "time", text: fmtTime(m.ts)}),
    m.edited ? el("span", {className: "edited", text: label("edited")}) : document.createTextNode("")]);
  const node = el("div", {className: "message" + (ephemeral ? " ephemeral" : ""), "data-testid": ephemeral ? "ephemeral" : "message", "data-ts": m.ts}, [head]);
  if (ephemeral) node.append(el("div", {className: "only-you", text: label("only_you")}));
  const ctx = {lookup, onButton: buttonHandler(m)};
  if (m.blocks && m.blocks.length) node.append(renderBlocks(m.blocks, ctx));
  else node.append(el("div", {className: "msg-text"}, [renderMrkdwn(m.text || "", lookup)]));
  for (const f of m.files || []) node.append(renderFile(f));
  for (const r of m.reactions || []) node.append(el("span", {className: "reaction", text: ":" + r.name + ": " + r.count}));
  if (!inThread && m.reply_count) {
    const link = el("button", {className: "replies", "data-testid": "open-thread", type: "button",
                               text: label(m.reply_count === 1 ? "one_reply" : "replies", {n: m.reply_count})});
    link.addEventListener("click", () => { ui.thread = m.ts; render(); });
    node.append(link);
  } else if (!inThread && !ephemeral) {
    const link = el("button", {className: "replies start", "data-testid": "start-thread", type: "button", text: label("reply_in_thread")});
    link.addEventListener("click", () => { ui.thread = m.ts; render(); });
    node.append(link);
  }
  return node;
}

function render() {
  const d = ui.data;
  applyLabels();
  const picker = $("user-picker");
  picker.replaceChildren(...d.users.filter((u) => !u.is_bot).map((u) => {
    const o = el("option", {value: u.id, text: u.name + " — " + (u.title || label("no_role"))});
    o.selected = u.id === ui.user;
    return o;
  }));
  $("channels").replaceChildren(...d.channels.map((c) => {
    const li = el("li", {className: c.id === ui.channel ? "active" : "", "data-channel-id": c.id, text: c.name});
    li.addEventListener("click", () => { ui.channel = c.id; ui.thread = null; refresh(); });
    return li;
  }));
  const ch = d.channels.find((c) => c.id === ui.channel);
  $("channel-header").textContent = ch ? ch.name : ui.channel;
  nextCache = new Map();
  const items = d.messages.map((m) => ({ts: m.ts, node: () => cachedMessage(m)}));
  for (const e of d.ephemerals.filter((e) => !e.thread_ts)) items.push({ts: e.ts, node: () => cachedMessage(e, {ephemeral: true})});
  items.sort((a, b) => parseFloat(a.ts) - parseFloat(b.ts));
  const box = $("messages");
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  patchChildren(box, items.map((i) => i.node()));
  if (atBottom) box.scrollTop = box.scrollHeight;
  renderThread();
  nodeCache = nextCache;
  renderModal();
}

function renderThread() {
  const pane = $("thread-pane");
  const hide = () => { pane.hidden = true; pane.removeAttribute("data-thread-ts"); ui.thread = null; };
  if (!ui.thread) { hide(); return; }
  const parent = ui.data.messages.find((m) => m.ts === ui.thread);
  if (!parent) { hide(); return; }
  pane.hidden = false;
  const opened = pane.getAttribute("data-thread-ts") !== ui.thread;
  pane.setAttribute("data-thread-ts", ui.thread);
  const box = $("thread-messages");
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  const items = (ui.data.threads[ui.thread] || []).map((m) => ({ts: m.ts, node: () => cachedMessage(m, {inThread: true})}));
  for (const e of ui.data.ephemerals.filter((e) => e.thread_ts === ui.thread)) items.push({ts: e.ts, node: () => cachedMessage(e, {ephemeral: true, inThread: true})});
  items.sort((a, b) => parseFloat(a.ts) - parseFloat(b.ts));
  if (opened || !ui.threadRule) ui.threadRule = el("hr");
  patchChildren(box, [cachedMessage(parent, {inThread: true}), ui.threadRule, ...items.map((i) => i.node())]);
  // A newly opened thread starts at its top (the evidence); an open one follows new replies
  // only while the reader is at its bottom, so reading is never yanked away.
  if (opened) box.scrollTop = 0;
  else if (atBottom) box.scrollTop = box.scrollHeight;
}

function collectValues(root) {
  const values = {};
  for (const node of root.querySelectorAll("[data-element-type]")) {
    const b = node.dataset.blockId, a = node.dataset.actionId;
    values[b] = values[b] || {};
    if (node.dataset.elementType === "checkboxes") values[b][a] = [...node.querySelectorAll("input:checked")].map((c) => c.value);
    else values[b][a] = node.value === "" ? null : node.value;
  }
  return values;
}

function restoreValues(root, values) {
  for (const node of root.querySelectorAll("[data-element-type]")) {
    const v = (values[node.dataset.blockId] || {})[node.dataset.actionId];
    if (v === undefined || v === null) continue;
    if (node.dataset.elementType === "checkboxes") node.querySelectorAll("input").forEach((c) => { c.checked = v.includes(c.value); });
    else node.value = v;
  }
}

function renderModal() {
  const root = $("modal-root");
  const views = ui.data.views;
  const view = views.length ? views[views.length - 1] : null;
  const key = view ? view.id + view.hash + JSON.stringify(view.errors) : null;
  if (key === ui.modalKey) return;
  const old = view && root.querySelector('[data-view-id="' + view.id + '"]') ? collectValues(root) : {};
  ui.modalKey = key;
  root.replaceChildren();
  if (!view) return;
  const form = el("form", {className: "dialog modal", "data-testid": "modal", "data-view-id": view.id, "data-callback-id": view.callback_id || ""});
  // Like Slack: title and buttons stay put, the body scrolls between them.
  form.append(el("h3", {className: "modal-title", text: view.title.text}));
  const body = el("div", {className: "modal-body"});
  body.append(renderBlocks(view.blocks, {lookup, errors: view.errors, optional: label("optional"), onButton: () => setStatus({error: label("modal_buttons")})}));
  if (view.errors && view.errors._response_action) body.append(el("div", {className: "input-error", text: view.errors._response_action}));
  form.append(body);
  const buttons = el("div", {className: "dialog-buttons"});
  const close = el("button", {type: "button", className: "bk-button default", "data-testid": "modal-close", text: view.close ? view.close.text : label("cancel")});
  close.addEventListener("click", async () => setStatus(await post("close", {user: ui.user, view_id: view.id})));
  buttons.append(close);
  if (view.submit) buttons.append(el("button", {type: "submit", className: "bk-button primary", "data-testid": "modal-submit", text: view.submit.text}));
  form.append(buttons);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    setStatus(await post("submit", {user: ui.user, view_id: view.id, values: collectValues(form)}));
  });
  root.append(el("div", {className: "overlay"}, [form]));
  restoreValues(form, old);
  const firstError = form.querySelector(".input-error");
  if (firstError) firstError.closest(".block")?.scrollIntoView({block: "center"});
}

function connect() {
  if (!window.EventSource) { setInterval(refresh, 500); return; }
  const es = new EventSource("/console/events");
  es.addEventListener("version", (ev) => { if (!ui.data || String(ui.data.version) !== ev.data) refresh(); });
  es.onerror = () => { es.close(); setTimeout(connect, 1000); };
}

$("user-picker").addEventListener("change", (ev) => { ui.user = ev.target.value; localStorage.setItem("user", ui.user); ui.modalKey = null; refresh(); });
$("command-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const text = $("command-input").value.replace(/^\/gpunode\s*/, "");
  $("command-input").value = "";
  $("command-status").textContent = label("sending", {text});
  const res = await post("command", {user: ui.user, channel: ui.channel, text});
  // the bot never came: the command was not sent, so it goes back in the box (unless
  // the person has typed another meanwhile) for one press of Enter later
  if (res.starting && !$("command-input").value) $("command-input").value = text;
  setStatus(res);
});
$("reply-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const text = $("reply-input").value;
  if (!text) return;
  $("reply-input").value = "";
  await post("reply", {user: ui.user, channel: ui.channel, text, thread_ts: ui.thread});
});
$("thread-close").addEventListener("click", () => { ui.thread = null; render(); });
refresh().then(connect);
