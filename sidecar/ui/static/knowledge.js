// Facts with their history and an as_of slider, learnings ranked with their
// prominence, and the memory block an agent is given for a query and a budget.
import { get, post } from "./api.js";
import { badge, el, field, show, when } from "./dom.js";
import { eventLink, linkList, linksOf } from "./journal.js";
import { panelForm } from "./views.js";

const DAY_MS = 86_400_000;
// What a fact is about, as the facts capability files it (sidecar/facts/log.py).
const CATEGORIES = ["identity", "preference", "interest", "personality", "relationship", "experience", "goal", "guideline"];
const EPISODE_DAYS = 30; // an episode without an evidence link is looked for this far before its fact
const EPISODE_PAGES = 4; // journal pages read looking for them, 500 events each

/**
 * The episodes a fact version rests on, as journal events: from its consolidation event's
 * supports relations when it has one, else from the journal around the time it became true.
 */
async function episodesOf(scope, v) {
  const wanted = new Set(v.source_episode_ids);
  const found = new Map();
  if (v.evidence) {
    for (const n of await linksOf(v.evidence, scope)) if (wanted.has(n.id)) found.set(n.id, n);
  }
  const since = new Date(Date.parse(v.valid_at) - EPISODE_DAYS * DAY_MS).toISOString();
  const until = v.invalid_at ?? new Date().toISOString();
  let cursor;
  for (let page = 0; page < EPISODE_PAGES && found.size < wanted.size; page++) {
    const answer = await get("/memory/journal", { scope, since, until, limit: 500, cursor });
    for (const e of answer.events) if (wanted.has(e.id) && !found.has(e.id)) found.set(e.id, e);
    cursor = answer.next_cursor;
    if (!cursor) break;
  }
  return found;
}

function episodesButton(scope, v) {
  const area = el("div", { class: "episodes", "aria-live": "polite" });
  const open = async () => {
    show(area, el("p", { class: "meta", text: "Reading the episodes…" }));
    try {
      const found = await episodesOf(scope, v);
      const missing = v.source_episode_ids.filter((id) => !found.has(id));
      show(
        area,
        found.size ? linkList([...found.values()], scope) : null,
        missing.length ? el("p", { class: "meta", text: `not found in the ${scope} journal near the fact: ${missing.join(", ")}` }) : null,
      );
    } catch (err) {
      show(area, el("p", { class: "error", text: `${err.code}: ${err.detail}` }));
    }
  };
  return [el("button", { type: "button", class: "quiet", onclick: open, text: "Show the episodes" }), area];
}

/** The episode ids a version rests on, each a link that shows the event. */
function episodeIds(scope, v) {
  const opened = el("div", { class: "linked", "aria-live": "polite" });
  const ids = v.source_episode_ids.flatMap((id, i) => [i ? ", " : "", eventLink(id, scope, opened)]);
  return el("div", {}, el("p", { class: "meta" }, `rests on ${v.sources} episode(s): `, ids.length ? ids : "none listed"), opened);
}

/** A fact id as a link that shows that fact's history. */
function factLink(scope, id) {
  const area = el("div", { class: "history" });
  return el("span", {}, el("button", { type: "button", class: "link", "data-fact": id, onclick: history(scope, id, area), text: id }), area);
}

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
          body.versions.map((v) => {
            const opened = el("div", { class: "linked", "aria-live": "polite" });
            return el(
              "li",
              {},
              el("p", { class: "fact-text", text: v.fact }),
              el("p", { class: "meta", text: `true from ${when(v.valid_at)} until ${v.invalid_at ? when(v.invalid_at) : "now"}` }),
              v.replaced_by ? el("p", { class: "relation" }, "replaced by ", factLink(scope, v.replaced_by)) : null,
              v.reason ? el("p", { class: "relation", text: `why it stopped: ${v.reason}` }) : null,
              episodeIds(scope, v),
              v.evidence ? el("p", { class: "meta" }, "linked to its episodes by journal event ", eventLink(v.evidence, scope, opened)) : null,
              opened,
              v.source_episode_ids.length ? episodesButton(scope, v) : null,
            );
          }),
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
  const category = el("select", { name: "category" }, ["any", ...CATEGORIES].map((c) => el("option", { value: c, text: c })));
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
    [field("About", query), field("Tier", scope), field("Category", category), el("div", { class: "asof" }, field("As of (days back)", slider), shown)],
    async () => {
      const at = asOf();
      const body = { query: query.value, scope: scope.value, limit: 20 };
      if (at) body.as_of = at.toISOString();
      if (category.value !== "any") body.category = category.value;
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
          f.replaced_by ? el("p", { class: "relation" }, "replaced by ", factLink(scope.value, f.replaced_by)) : null,
          f.replaces ? el("p", { class: "relation changed" }, badge("changed", "warn"), `replaced an earlier fact on ${when(f.valid_at)}: History shows what it said`) : null,
          el(
            "div",
            { class: "actions" },
            el("button", { type: "button", onclick: history(scope.value, f.id, more), text: "History" }),
            f.invalid_at ? null : el("button", { type: "button", class: "danger", onclick: invalidate, text: "Invalidate…" }),
          ),
          more,
        );
      });
      const kind = category.value === "any" ? "fact(s)" : `${category.value} fact(s)`;
      return [`${facts.length} ${kind} ${at ? `as of ${when(at.toISOString())}` : "true now"}`, facts];
    },
    "Find facts",
  );
  slider.addEventListener("change", () => query.value && run());
  label();
}

// With words: the search's ranking (or re-sorted by reinforcement); without: every learning.
const ORDERS = { score: "score (prominence without words)", prominence: "prominence", reinforced: "times reinforced", recent: "last reinforced" };
const BY = { prominence: "most prominent first", reinforced: "most reinforced first", recent: "most recently reinforced first", score: "best score first" };
const MAX_LISTED = 200; // the most the learnings listing answers

function learningRow(h, scored) {
  const parts = scored
    ? `#${h.rank} score ${h.score} = relevance ${h.relevance} × prominence ${h.prominence} × tier ${h.scope_factor}`
    : `prominence ${h.prominence} = importance ${h.importance} × decay ${h.decay} × (1 + reinforced ${h.reinforcement_count}) · tier ×${h.scope_factor}`;
  return el(
    "li",
    { class: "learning", "data-id": h.id },
    el("p", { class: "learning-text", text: h.text }),
    el("p", {}, badge(h.type), badge(h.domain), badge(h.status, h.status === "active" ? "" : "muted"), h.institutional ? badge("institutional") : null),
    el("p", { class: "score", text: parts }),
    el("p", { class: "meta", text: `importance ${h.importance} · reinforced ${h.reinforcement_count}× (last ${h.last_reinforced || "never"}) · ${h.tier}: ${h.file}:${h.line}` }),
  );
}

export function learningsView(panel) {
  const query = el("input", { type: "search", name: "query", maxlength: 4096, placeholder: "blank: list every learning" });
  const scope = el("select", { name: "scope" }, ["both", "agent", "crew"].map((s) => el("option", { value: s, text: s })));
  const order = el("select", { name: "order" }, Object.entries(ORDERS).map(([value, text]) => el("option", { value, text })));
  const status = el("select", { name: "status" }, ["active", "any"].map((s) => el("option", { value: s, text: s })));
  panelForm(
    panel,
    [field("About", query), field("Tier", scope), field("Order by", order), field("Status", status)],
    async () => {
      if (!query.value.trim()) {
        const by = order.value === "score" ? "prominence" : order.value;
        const answer = await get("/memory/learnings", { order: by, scope: scope.value, status: status.value, limit: MAX_LISTED });
        const more = answer.total > answer.count ? ` (the first ${answer.count} of ${answer.total})` : "";
        return [`${answer.count} learning(s)${more}, ${BY[by]}`, el("ol", { class: "ranked" }, answer.learnings.map((h) => learningRow(h, false)))];
      }
      const answer = await post("/memory/learnings/search", { query: query.value, scope: scope.value, limit: 20 });
      const ranked = answer.hits.map((h, i) => ({ ...h, rank: i + 1 }));
      const key = { reinforced: (h) => h.reinforcement_count, prominence: (h) => h.prominence, recent: (h) => Date.parse(h.last_reinforced ?? "") || 0 }[order.value];
      if (key) ranked.sort((a, b) => key(b) - key(a) || a.rank - b.rank);
      return [`${answer.count} learning(s) about these words, ${BY[order.value]} (${answer.mode} retrieval); a learning that shares no word with them is not listed: leave About blank to list them all`, el("ol", { class: "ranked" }, ranked.map((h) => learningRow(h, true)))];
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
