// Block Kit -> DOM. ctx: {lookup, onButton(block, element), errors: {block_id: text},
// optional: the client's own "(optional)" mark in the reader's language}.
"use strict";

function renderButton(block, element, ctx) {
  const b = el("button", {
    className: "bk-button " + (element.style || "default"),
    "data-testid": "button", "data-action-id": element.action_id || "",
    "data-block-id": block.block_id || "", type: "button",
  }, [renderTextObject(element.text, ctx.lookup)]);
  if (element.confirm) b.setAttribute("data-confirm", "true");
  if (element.url && SAFE_URL.test(element.url)) {
    b.addEventListener("click", () => window.open(element.url, "_blank", "noopener"));
  } else {
    b.addEventListener("click", () => ctx.onButton(block, element));
  }
  return b;
}

function renderInputElement(block, element) {
  const common = {"data-block-id": block.block_id, "data-action-id": element.action_id || "",
                  "data-element-type": element.type, "data-testid": "input-" + element.type};
  const placeholder = element.placeholder ? element.placeholder.text : "";
  if (element.type === "plain_text_input") {
    const node = el(element.multiline ? "textarea" : "input", {...common, placeholder});
    if (element.initial_value) node.value = element.initial_value;
    return node;
  }
  if (element.type === "number_input") {
    const node = el("input", {...common, type: "number", placeholder,
                              step: element.is_decimal_allowed ? "any" : "1"});
    if (element.min_value !== undefined) node.min = element.min_value;
    if (element.max_value !== undefined) node.max = element.max_value;
    if (element.initial_value) node.value = element.initial_value;
    return node;
  }
  if (element.type === "static_select") {
    const select = el("select", common, [el("option", {value: "", text: placeholder || "Select…"})]);
    for (const opt of element.options || []) select.append(el("option", {value: opt.value, text: opt.text.text}));
    if (element.initial_option) select.value = element.initial_option.value;
    return select;
  }
  if (element.type === "checkboxes") {
    const box = el("div", {...common, className: "checkboxes"});
    const initial = new Set((element.initial_options || []).map((o) => o.value));
    for (const opt of element.options || []) {
      const cb = el("input", {type: "checkbox", value: opt.value});
      cb.checked = initial.has(opt.value);
      box.append(el("label", {}, [cb, document.createTextNode(" " + opt.text.text)]));
    }
    return box;
  }
  return el("em", {text: "(" + element.type + " not rendered in the console)"});
}

function renderBlock(block, ctx) {
  const wrap = el("div", {className: "block bk-" + block.type, "data-testid": "block-" + block.type,
                          "data-block-id": block.block_id || ""});
  switch (block.type) {
    case "header":
      wrap.append(el("h3", {text: block.text.text}));
      break;
    case "divider":
      wrap.append(el("hr"));
      break;
    case "section": {
      const body = el("div", {className: "section-body"});
      if (block.text) body.append(el("div", {className: "section-text"}, [renderTextObject(block.text, ctx.lookup)]));
      if (block.fields) {
        body.append(el("div", {className: "fields"},
          block.fields.map((f) => el("div", {className: "field"}, [renderTextObject(f, ctx.lookup)]))));
      }
      wrap.append(body);
      if (block.accessory && block.accessory.type === "button") wrap.append(renderButton(block, block.accessory, ctx));
      else if (block.accessory && block.accessory.type === "image") wrap.append(el("span", {className: "img-alt", text: "[image: " + (block.accessory.alt_text || "") + "]"}));
      break;
    }
    case "context":
      for (const e of block.elements || []) {
        if (e.type === "image") wrap.append(el("span", {className: "img-alt", text: "[" + (e.alt_text || "image") + "]"}));
        else wrap.append(renderTextObject(e, ctx.lookup));
      }
      break;
    case "actions":
      for (const e of block.elements || []) {
        if (e.type === "button") wrap.append(renderButton(block, e, ctx));
        else wrap.append(el("em", {text: "(" + e.type + ")"}));
      }
      break;
    case "markdown":
      wrap.append(renderMrkdwn(block.text || "", ctx.lookup));
      break;
    case "image":
      wrap.append(el("span", {className: "img-alt", text: "[image: " + (block.alt_text || "") + "]"}));
      break;
    case "rich_text": {
      const texts = [];
      const walk = (n) => { if (n.type === "text") texts.push(n.text); (n.elements || []).forEach(walk); };
      walk(block);
      wrap.append(el("span", {text: texts.join("")}));
      break;
    }
    case "input": {
      wrap.append(el("label", {className: "input-label", text: block.label.text + (block.optional ? " " + (ctx.optional || "(optional)") : "")}));
      wrap.append(renderInputElement(block, block.element));
      if (block.hint) wrap.append(el("div", {className: "hint", text: block.hint.text}));
      const err = (ctx.errors || {})[block.block_id];
      if (err) wrap.append(el("div", {className: "input-error", "data-testid": "input-error", text: err}));
      break;
    }
    default:
      wrap.append(el("em", {text: "(" + block.type + " block)"}));
  }
  return wrap;
}

function renderBlocks(blocks, ctx) {
  return el("div", {className: "blocks"}, blocks.map((b) => renderBlock(b, ctx)));
}
