// The read-only views: search and files (the journal, facts, learnings and the memory
// block have their own modules).
// Each builds its form once and redraws its results on the user's request.
import { get, post } from "./api.js";
import { badge, el, field, markdown, show, when } from "./dom.js";

/** A form whose submit runs `load` and shows what it returns, or the API's error. */
export function panelForm(panel, controls, load, label) {
  const results = el("div", { class: "results", "aria-busy": "false" });
  const status = el("p", { class: "status", role: "status", "aria-live": "polite" });
  const form = el("form", { class: "controls" }, controls, el("button", { type: "submit", text: label }));
  let latest = 0; // a run started later wins: an earlier one's answer arriving last is dropped
  const run = async () => {
    const mine = ++latest;
    status.textContent = "Loading…";
    status.classList.remove("error");
    results.setAttribute("aria-busy", "true"); // what is shown answers an earlier run until this one lands
    try {
      const [summary, nodes] = await load();
      if (mine !== latest) return;
      status.textContent = summary;
      show(results, nodes);
    } catch (err) {
      if (mine !== latest) return;
      status.textContent = err.detail ? `${err.code}: ${err.detail}` : String(err);
      status.classList.add("error");
      show(results);
    }
    results.setAttribute("aria-busy", "false");
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    run();
  });
  panel.append(form, status, results);
  return { form, run, results, status };
}

export function scopeSelect(name, options, value) {
  return el("select", { name }, options.map((o) => el("option", { value: o, selected: o === value, text: o })));
}

function flaggedNote(flag) {
  if (!flag) return null;
  return el(
    "p",
    { class: "flag" },
    badge("flagged", "warn"),
    ` looks like a prompt injection (${flag.category}: ${flag.pattern}); shown as plain text`,
  );
}

/** Show another tab and run `words` there (its form's query field, then its submit). */
function runIn(view, words) {
  const tab = document.querySelector(`[role="tab"][data-view="${view}"]`);
  tab.click();
  const panel = document.getElementById(tab.getAttribute("aria-controls"));
  panel.querySelector('input[name="query"]').value = words;
  panel.querySelector("form.controls").requestSubmit();
}

/** Search reads notes only: with no note hit, the same words where the rest of memory is. */
function lookElsewhere(words) {
  const link = (view, text) => el("button", { type: "button", class: "link", "data-view": view, onclick: () => runIn(view, words), text });
  return el("p", { class: "elsewhere" }, "No note matches. Search covers notes only; look for the same words in ", link("facts", "Facts"), ", ", link("journal", "Journal"), " or ", link("learnings", "Learnings"), ".");
}

export function searchView(panel) {
  const query = el("input", { type: "search", name: "query", required: true, maxlength: 4096 });
  const scope = scopeSelect("scope", ["both", "agent", "crew"], "both");
  const limit = el("input", { type: "number", name: "limit", min: 1, max: 50, value: 10 });
  const archive = el("input", { type: "checkbox", name: "archive" });
  panelForm(
    panel,
    [field("Query", query), field("Tier", scope), field("Hits", limit), el("label", { class: "check" }, archive, " include archive")],
    async () => {
      const body = { query: query.value, scope: scope.value, limit: Number(limit.value) || 10 };
      if (archive.checked) body.archive = true; // old daily logs the lifecycle moved to archive/
      const answer = await post("/memory/search", body);
      const hits = answer.results.map((hit) =>
        el(
          "article",
          { class: `hit${hit.flagged ? " flagged" : ""}${hit.archived ? " archived" : ""}` },
          el(
            "header",
            {},
            el("strong", { class: "file", text: hit.file }),
            ` lines ${hit.start_line}–${hit.end_line} `,
            badge(hit.source),
            hit.archived ? badge("archived", "muted") : null,
          ),
          hit.heading ? el("p", { class: "heading", text: hit.heading }) : null,
          el(
            "p",
            { class: "score" },
            `score ${hit.score}`,
            hit.ranks ? ` (rank ${Object.entries(hit.ranks).map(([leg, r]) => `${leg} #${r}`).join(", ")})` : "",
          ),
          flaggedNote(hit.flagged),
          el("pre", { class: "snippet", text: hit.snippet }),
        ),
      );
      const elsewhere = answer.count ? null : lookElsewhere(query.value);
      return [`${answer.count} hit(s), ${answer.mode} retrieval, ${answer.query_mode} query`, [elsewhere, ...hits]];
    },
    "Search",
  );
}

function fileList(tier, files, open) {
  return el(
    "section",
    { class: "tier" },
    el("h2", { text: `${tier} tier` }),
    el(
      "ul",
      { class: "files" },
      files.map((f) => {
        const archived = f.file.includes("/archive/");
        return el(
          "li",
          {},
          el("button", { type: "button", class: "link", onclick: () => open(tier, f.file), text: f.file }),
          " ",
          badge(f.kind),
          archived ? badge("archived", "muted") : null,
          el("span", { class: "meta", text: ` ${f.bytes} B, ${when(f.modified)}` }),
        );
      }),
    ),
  );
}

export function filesView(panel) {
  const viewer = el("article", { class: "viewer", tabindex: -1, "aria-label": "file contents" });
  const open = async (tier, file) => {
    show(viewer, el("p", { text: `Reading ${file}…` }));
    try {
      const body = await get("/memory/files/read", { file, scope: tier });
      const cut = body.bytes < body.file_bytes ? el("p", { class: "meta", text: `first ${body.bytes} of ${body.file_bytes} bytes` }) : null;
      const text = file.endsWith(".md") ? markdown(body.content) : el("pre", { text: body.content });
      show(viewer, el("h2", { text: `${tier}: ${file}` }), cut, flaggedNote(body.flagged), text);
    } catch (err) {
      show(viewer, el("p", { class: "error", text: `${err.code}: ${err.detail}` }));
    }
    viewer.focus();
  };
  const { run } = panelForm(
    panel,
    [],
    async () => {
      const tiers = await Promise.all(["agent", "crew"].map((scope) => get("/memory/files", { scope })));
      const total = tiers.reduce((n, t) => n + t.files.length, 0);
      return [`${total} file(s) in both tiers`, [el("div", { class: "columns" }, tiers.map((t) => fileList(t.scope, t.files, open))), viewer]];
    },
    "List files",
  );
  return run;
}
