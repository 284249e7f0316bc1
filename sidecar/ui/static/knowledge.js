// Facts with their history and an as_of slider, learnings ranked with their
// prominence, and the memory block an agent is given for a query and a budget.
import { get, post } from "./api.js";
import { badge, el, field, show, when } from "./dom.js";
import { panelForm } from "./views.js";

const DAY_MS = 86_400_000;

function history(scope, id, area) {
  return async () => {
    try {
      const body = await get(`/memory/facts/${encodeURIComponent(id)}/history`, { scope });
      show(
        area,
        el("h3", { text: "History, oldest first" }),
        el(
          "ol",
          { class: "versions" },
          body.versions.map((v) =>
            el(
              "li",
              {},
              el("p", { class: "fact-text", text: v.fact }),
              el("p", { class: "meta", text: `true from ${when(v.valid_at)} until ${v.invalid_at ? when(v.invalid_at) : "now"}` }),
              v.replaced_by ? el("p", { class: "relation", text: `replaced by ${v.replaced_by}` }) : null,
              v.reason ? el("p", { class: "relation", text: `why it stopped: ${v.reason}` }) : null,
              el("p", { class: "meta", text: `rests on ${v.sources} episode(s): ${v.source_episode_ids.join(", ") || "none listed"}` }),
              v.evidence ? el("p", { class: "meta", text: `linked to its episodes by journal event ${v.evidence}` }) : null,
            ),
          ),
        ),
      );
    } catch (err) {
      show(area, el("p", { class: "error", text: `${err.code}: ${err.detail}` }));
    }
  };
}

export function factsView(panel) {
  const query = el("input", { type: "search", name: "query", required: true, maxlength: 4096 });
  const scope = el("select", { name: "scope" }, ["agent", "crew"].map((s) => el("option", { value: s, text: s })));
  const slider = el("input", { type: "range", name: "as_of", min: -365, max: 0, step: 1, value: 0, "aria-describedby": "facts-asof-shown" });
  const shown = el("output", { id: "facts-asof-shown", text: "now" });
  const asOf = () => (Number(slider.value) === 0 ? null : new Date(Date.now() + Number(slider.value) * DAY_MS));
  const label = () => {
    const at = asOf();
    shown.textContent = at ? `as of ${when(at.toISOString())}` : "now";
    slider.setAttribute("aria-valuetext", shown.textContent);
  };
  slider.addEventListener("input", label);
  const { run } = panelForm(
    panel,
    [field("About", query), field("Tier", scope), el("div", { class: "asof" }, field("As of (days back)", slider), shown)],
    async () => {
      const at = asOf();
      const body = { query: query.value, scope: scope.value, limit: 20 };
      if (at) body.as_of = at.toISOString();
      const answer = await post("/memory/facts", body);
      const facts = answer.facts.map((f) => {
        const more = el("div", { class: "history" });
        const invalidate = async () => {
          if (!window.confirm(`Invalidate this fact?\n\n${f.fact}\n\nIt stays in the log, marked no longer true.`)) return;
          try {
            await post(`/memory/facts/${encodeURIComponent(f.id)}/invalidate`, { scope: scope.value, reason: "invalidated in the memory inspector" });
            run();
          } catch (err) {
            show(more, el("p", { class: "error", text: `${err.code}: ${err.detail}` }));
          }
        };
        return el(
          "article",
          { class: "fact", "data-id": f.id },
          el("p", { class: "fact-text", text: f.fact }),
          el("p", {}, badge(f.category), f.invalid_at ? badge("no longer true", "muted") : null),
          el("p", { class: "meta", text: `true from ${when(f.valid_at)}${f.invalid_at ? ` until ${when(f.invalid_at)}` : ""} · ${f.sources} episode(s)` }),
          f.replaced_by ? el("p", { class: "relation", text: `replaced by ${f.replaced_by}` }) : null,
          el(
            "div",
            { class: "actions" },
            el("button", { type: "button", onclick: history(scope.value, f.id, more), text: "History" }),
            f.invalid_at ? null : el("button", { type: "button", class: "danger", onclick: invalidate, text: "Invalidate…" }),
          ),
          more,
        );
      });
      return [`${facts.length} fact(s) ${at ? `as of ${when(at.toISOString())}` : "true now"}`, facts];
    },
    "Find facts",
  );
  slider.addEventListener("change", () => query.value && run());
  label();
}

export function learningsView(panel) {
  const query = el("input", { type: "search", name: "query", required: true, maxlength: 4096 });
  const scope = el("select", { name: "scope" }, ["both", "agent", "crew"].map((s) => el("option", { value: s, text: s })));
  panelForm(
    panel,
    [field("About", query), field("Tier", scope)],
    async () => {
      const answer = await post("/memory/learnings/search", { query: query.value, scope: scope.value, limit: 20 });
      const rows = answer.hits.map((h, i) =>
        el(
          "li",
          { class: "learning" },
          el("p", { class: "learning-text", text: h.text }),
          el("p", {}, badge(h.type), badge(h.domain), badge(h.status, h.status === "active" ? "" : "muted"), h.institutional ? badge("institutional") : null),
          el("p", { class: "score", text: `#${i + 1} score ${h.score} = relevance ${h.relevance} × prominence ${h.prominence} × tier ${h.scope_factor}` }),
          el("p", { class: "meta", text: `importance ${h.importance} · reinforced ${h.reinforcement_count}× (last ${h.last_reinforced || "never"}) · ${h.tier}: ${h.file}:${h.line}` }),
        ),
      );
      return [`${answer.count} learning(s), ${answer.mode} retrieval`, el("ol", { class: "ranked" }, rows)];
    },
    "Rank learnings",
  );
}

export function blockView(panel) {
  const query = el("input", { type: "search", name: "query", maxlength: 4096 });
  const budget = el("input", { type: "number", name: "budget", min: 1000, max: 200000, step: 500, value: 15000 });
  panelForm(
    panel,
    [field("Query (optional)", query), field("Budget (characters)", budget)],
    async () => {
      const answer = await get("/memory/context", { query: query.value.trim(), budget: budget.value });
      const sections = el(
        "table",
        { class: "sections" },
        el("caption", { text: "What went in, section by section" }),
        el("thead", {}, el("tr", {}, ["Block", "Section", "Characters", "State"].map((h) => el("th", { scope: "col", text: h })))),
        el(
          "tbody",
          {},
          answer.sections.map((s) =>
            el("tr", {}, el("td", { text: s.block }), el("td", { text: s.label }), el("td", { text: s.chars }), el("td", { text: s.blocked ? `blocked: ${s.blocked}` : s.truncated ? "cut for budget" : "whole" })),
          ),
        ),
      );
      return [`${answer.used} of ${answer.budget} characters used`, [sections, el("pre", { class: "block", text: answer.text })]];
    },
    "Build block",
  );
}
