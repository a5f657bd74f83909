// Slack mrkdwn -> DOM nodes. Untrusted text only ever becomes a Text node (never innerHTML).
"use strict";

function unescapeSlack(s) {
  return s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") node.textContent = v;
    else if (k === "className") node.className = v;
    else node.setAttribute(k, v);
  }
  for (const c of children || []) node.append(c);
  return node;
}

const SAFE_URL = /^(https?:|mailto:)/i;

// <!date^EPOCH^FORMAT[^LINK]|FALLBACK>: the time in the reader's own locale and zone.
function dateToken(d, tok) {
  const day = (opts) => d.toLocaleDateString([], opts);
  const formats = {
    date_num: () => d.toISOString().slice(0, 10),
    date: () => day({year: "numeric", month: "long", day: "numeric"}),
    date_short: () => day({year: "numeric", month: "short", day: "numeric"}),
    date_long: () => day({weekday: "long", year: "numeric", month: "long", day: "numeric"}),
    time: () => d.toLocaleTimeString([], {hour: "2-digit", minute: "2-digit"}),
    time_secs: () => d.toLocaleTimeString([], {hour: "2-digit", minute: "2-digit", second: "2-digit"}),
    ago: () => {
      const min = Math.round((d.getTime() - Date.now()) / 60000);
      if (Math.abs(min) < 1) return "just now";
      const n = Math.abs(min) < 120 ? [Math.abs(min), "minute"] : [Math.round(Math.abs(min) / 60), "hour"];
      const words = n[0] + " " + n[1] + (n[0] === 1 ? "" : "s");
      return min > 0 ? "in " + words : words + " ago";
    },
  };
  formats.date_pretty = formats.date;
  formats.date_short_pretty = formats.date_short;
  formats.date_long_pretty = formats.date_long;
  return formats[tok] ? formats[tok]() : null;
}

function slackDate(inner) {
  const bar = inner.indexOf("|");
  const spec = bar < 0 ? inner : inner.slice(0, bar);
  const fallback = bar < 0 ? "" : unescapeSlack(inner.slice(bar + 1));
  const parts = spec.split("^");
  const d = new Date(Number(parts[1]) * 1000);
  if (!parts[1] || Number.isNaN(d.getTime())) return document.createTextNode(fallback);
  const text = unescapeSlack(parts[2] || "{date_short} {time}").replace(/\{(\w+)\}/g,
    (m, tok) => dateToken(d, tok) ?? m);
  return el("time", {datetime: d.toISOString(), title: d.toString(), text});
}

function controlSequence(inner, lookup) {
  if (inner.startsWith("@")) {
    const id = inner.slice(1).split("|")[0];
    return el("span", {className: "mention", "data-user-id": id, text: "@" + lookup.userName(id)});
  }
  if (inner.startsWith("#")) {
    const [id, label] = inner.slice(1).split("|");
    return el("span", {className: "mention", text: "#" + (label || lookup.channelName(id))});
  }
  if (inner.startsWith("!subteam^")) {
    const [id, label] = inner.slice(9).split("|");
    return el("span", {className: "mention", text: label ? unescapeSlack(label) : "@" + id});
  }
  if (inner.startsWith("!date^")) return slackDate(inner);
  if (inner.startsWith("!")) {
    return el("span", {className: "mention", text: "@" + inner.slice(1).split("|")[0]});
  }
  const bar = inner.indexOf("|");
  const url = unescapeSlack(bar < 0 ? inner : inner.slice(0, bar));
  const label = unescapeSlack(bar < 0 ? inner : inner.slice(bar + 1));
  if (!SAFE_URL.test(url)) return document.createTextNode(label);
  return el("a", {href: url, target: "_blank", rel: "noopener noreferrer", text: label});
}

// Like Slack, *bold* _italic_ ~strike~ only open and close at word boundaries, so snake_case
// identifiers and globs stay as typed. :shortcode: becomes the emoji when it is one we know.
const B = "(?<![\\w*_~])", E = "(?![\\w])";
const INLINE = new RegExp("`([^`\\n]+)`|<([^<>\\n]+)>|" + B + "\\*([^*\\n]+)\\*" + E + "|" +
  B + "_([^_\\n]+)_" + E + "|" + B + "~([^~\\n]+)~" + E + "|:([a-z0-9_+-]+):|\\n", "g");

const EMOJI = {
  x: "\u274C", white_check_mark: "\u2705", heavy_check_mark: "\u2714\uFE0F", warning: "\u26A0\uFE0F",
  no_entry: "\u26D4", hourglass: "\u231B", hourglass_flowing_sand: "\u23F3", question: "\u2753",
  grey_question: "\u2754", shield: "\u{1F6E1}\uFE0F", paperclip: "\u{1F4CE}", rotating_light: "\u{1F6A8}", red_circle: "\u{1F534}",
  large_orange_circle: "\u{1F7E0}", large_yellow_circle: "\u{1F7E1}", large_green_circle: "\u{1F7E2}",
  large_blue_circle: "\u{1F535}", white_circle: "\u26AA", raised_hand: "\u270B", page_facing_up: "\u{1F4C4}",
  mag: "\u{1F50D}", link: "\u{1F517}", leftwards_arrow_with_hook: "\u21A9\uFE0F",
  heavy_multiplication_x: "\u2716\uFE0F", bulb: "\u{1F4A1}", ballot_box_with_check: "\u2611\uFE0F",
  memo: "\u{1F4DD}", eyes: "\u{1F440}", fire: "\u{1F525}", tada: "\u{1F389}", thumbsup: "\u{1F44D}",
  "+1": "\u{1F44D}", lock: "\u{1F512}", gear: "\u2699\uFE0F", information_source: "\u2139\uFE0F",
  new: "\u{1F195}", paperclip: "\u{1F4CE}", chart_with_upwards_trend: "\u{1F4C8}",
  large_orange_diamond: "\u{1F536}",
};

function inline(text, lookup, out) {
  let last = 0;
  const re = new RegExp(INLINE.source, "g");
  let m;
  while ((m = re.exec(text)) !== null) {
    if (m.index > last) out.append(document.createTextNode(unescapeSlack(text.slice(last, m.index))));
    if (m[1] !== undefined) out.append(el("code", {text: unescapeSlack(m[1])}));
    else if (m[2] !== undefined) out.append(controlSequence(m[2], lookup));
    else if (m[3] !== undefined) out.append(inline(m[3], lookup, el("b")));
    else if (m[4] !== undefined) out.append(inline(m[4], lookup, el("i")));
    else if (m[5] !== undefined) out.append(inline(m[5], lookup, el("s")));
    else if (m[6] !== undefined) {
      if (EMOJI[m[6]]) out.append(el("span", {className: "emoji", title: ":" + m[6] + ":", text: EMOJI[m[6]]}));
      else out.append(document.createTextNode(m[0]));
    } else out.append(el("br"));
    last = re.lastIndex;
  }
  if (last < text.length) out.append(document.createTextNode(unescapeSlack(text.slice(last))));
  return out;
}

// Render mrkdwn into a new <span>; ```pre``` blocks become <pre>.
function renderMrkdwn(text, lookup) {
  const out = el("span", {className: "mrkdwn"});
  const parts = String(text).split("```");
  parts.forEach((part, i) => {
    if (i % 2 === 1 && i < parts.length - 1) out.append(el("pre", {text: unescapeSlack(part.replace(/^\n/, ""))}));
    else if (i % 2 === 1) inline("```" + part, lookup, out);
    else inline(i > 0 ? part.replace(/^\n/, "") : part, lookup, out);  // the block ends the line
  });
  return out;
}

function renderTextObject(obj, lookup) {
  if (!obj) return el("span");
  if (obj.type === "plain_text") return el("span", {className: "plain", text: obj.text});
  return renderMrkdwn(obj.text || "", lookup);
}
