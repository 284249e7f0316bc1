// Building the page with DOM calls only. Memory text always goes in as a text node
// (textContent), never as HTML: a note holding <script> shows those characters.

/** An element with attributes, listeners ("onclick") and children (nodes or text). */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = String(value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/** A labelled form control: the label wraps it, so a screen reader names it. */
export function field(label, control) {
  return el("label", { class: "field" }, el("span", { text: label }), control);
}

/** "2026-11-27T10:00:00Z" shown in the reader's time zone, to the minute. */
export function when(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  return date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

export function badge(text, kind = "") {
  return el("span", { class: `badge ${kind}`.trim(), text });
}

/** Replace what a result area shows. */
export function show(area, ...nodes) {
  area.replaceChildren(...nodes.flat().filter(Boolean));
}

// Inline code spans only: `code` becomes <code>, everything else stays text.
function inline(text) {
  const parts = text.split(/(`[^`\n]+`)/);
  return parts.map((part) =>
    part.length > 2 && part.startsWith("`") && part.endsWith("`")
      ? el("code", { text: part.slice(1, -1) })
      : part,
  );
}

/**
 * Markdown rendered safely: headings, lists, fenced code, front matter and paragraphs,
 * each built as an element around text. No raw HTML is ever interpreted, no link is
 * followed: whatever a note holds is shown as the characters it is.
 */
export function markdown(source) {
  const out = document.createDocumentFragment();
  const lines = source.split("\n");
  let list = null;
  let para = [];
  const endPara = () => {
    if (para.length) out.append(el("p", {}, inline(para.join(" "))));
    para = [];
  };
  const endList = () => {
    list = null;
  };
  let i = 0;
  if (lines[0] === "---") {
    const end = lines.indexOf("---", 1);
    if (end > 0) {
      out.append(el("pre", { class: "front-matter", text: lines.slice(1, end).join("\n") }));
      i = end + 1;
    }
  }
  for (; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith("```")) {
      endPara();
      endList();
      const code = [];
      for (i++; i < lines.length && !lines[i].startsWith("```"); i++) code.push(lines[i]);
      out.append(el("pre", {}, el("code", { text: code.join("\n") })));
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    const item = /^\s*(?:[-*+]|(\d+)[.)])\s+(.*)$/.exec(line);
    if (heading) {
      endPara();
      endList();
      const level = Math.min(6, heading[1].length + 2); // the page's own h1/h2 come first
      out.append(el(`h${level}`, { class: "md-heading" }, inline(heading[2])));
    } else if (item) {
      endPara();
      const tag = item[1] ? "ol" : "ul";
      if (!list || list.tagName.toLowerCase() !== tag) {
        list = el(tag);
        out.append(list);
      }
      list.append(el("li", {}, inline(item[2])));
    } else if (line.trim() === "") {
      endPara();
      endList();
    } else {
      endList();
      para.push(line.trim());
    }
  }
  endPara();
  return out;
}
