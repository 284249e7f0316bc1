// The journal as a timeline: filters, a page of events at a time, what corrected what,
// and on request an event's relations (the events it supports or contradicts, and those
// that support it), each saying which way it points, from the journal's lookup by id.
// With words, the timeline is a recall of them instead (what Search offers when no note matches).
import { get, post } from "./api.js";
import { badge, el, field, show, when } from "./dom.js";
import { panelForm, scopeSelect } from "./views.js";

function isoDay(value, end) {
  return value ? `${value}T${end ? "23:59:59" : "00:00:00"}Z` : undefined;
}

const PAGE = 100; // events a request lists; "Show later events" asks for the next ones
const RECALL_K = 50; // the most a recall ranks

export function journalView(panel) {
  const scope = scopeSelect("scope", ["agent", "crew"], "agent");
  const type = el("input", { name: "type", placeholder: "deploy.failed" });
  const severity = scopeSelect("severity", ["any", "info", "warn", "error"], "any");
  const session = el("input", { name: "session_id" });
  const since = el("input", { type: "date", name: "since" });
  const until = el("input", { type: "date", name: "until" });
  const words = el("input", { type: "search", name: "query", maxlength: 4096, placeholder: "blank: every event" });
  const page = (cursor) =>
    get("/memory/journal", {
      scope: scope.value,
      type: type.value.split(",").map((t) => t.trim()).filter(Boolean),
      session_id: session.value.trim(),
      since: isoDay(since.value, false),
      until: isoDay(until.value, true),
      limit: PAGE,
      cursor,
    });
  const { run } = panelForm(
    panel,
    [field("Words", words), field("Tier", scope), field("Type", type), field("Severity", severity), field("Session", session), field("From", since), field("To", until)],
    async () => {
      const timeline = el("ol", { class: "timeline" });
      const summary = el("p", { class: "meta" });
      const more = el("button", { type: "button", text: "Show later events" });
      const tier = scope.value;
      if (words.value.trim()) {
        const body = { query: words.value, scope: tier, k: RECALL_K, mark: false, include_superseded: true };
        const answer = await post("/memory/recall", body);
        timeline.append(...answer.hits.map((e) => eventItem(e, tier)));
        return [`${answer.hits.length} event(s) recalled for these words, best first`, [timeline]];
      }
      let shown = 0;
      const add = async (cursor) => {
        const answer = await page(cursor);
        const kept = answer.events.filter((e) => severity.value === "any" || e.severity === severity.value);
        timeline.append(...kept.map((e) => eventItem(e, tier)));
        shown += kept.length;
        summary.textContent = `${shown} event(s) shown, oldest first${answer.next_cursor ? "; more after them" : ""}`;
        more.hidden = !answer.next_cursor;
        more.onclick = () => add(answer.next_cursor).catch((err) => (summary.textContent = `${err.code}: ${err.detail}`));
      };
      await add(undefined);
      return [`${shown} event(s)`, [summary, timeline, more]];
    },
    "Show events",
  );
  return run;
}

/**
 * An event's relations, each with the way it points, from the journal's lookup by id:
 * [{relation, direction, weight, id, type, summary, ts}].
 */
export async function linksOf(id, tier) {
  const answer = await get(`/memory/journal/${encodeURIComponent(id)}`, { scope: tier });
  return answer.relations.map((r) => ({ ...r.other, relation: r.relation, direction: r.direction, weight: r.weight }));
}

const ARROWS = { out: (r) => `this ${r} →`, in: (r) => `← ${r} this` };

/** A button that shows the event `id` (and its relations) in `area`: ids become links. */
export function eventLink(id, tier, area) {
  return el("button", { type: "button", class: "link", "data-event": id, onclick: () => openEvent(id, tier, area), text: id });
}

async function openEvent(id, tier, area) {
  show(area, el("p", { class: "meta", text: `Reading event ${id}…` }));
  try {
    const e = await get(`/memory/journal/${encodeURIComponent(id)}`, { scope: tier });
    const links = await linksOf(id, tier);
    show(
      area,
      el(
        "div",
        { class: "opened", "data-id": e.id },
        el("p", {}, badge(e.type), el("span", { class: "meta", text: ` ${when(e.ts)} · id ${e.id}` })),
        el("p", { class: "summary", text: e.summary }),
        links.length ? linkList(links, tier) : el("p", { class: "meta", text: "no relations" }),
      ),
    );
  } catch (err) {
    show(area, el("p", { class: "error", text: `${err.code}: ${err.detail}` }));
  }
}

/** Related events as a list: which way the link points, the other event's type, time and words. */
export function linkList(links, tier) {
  return el(
    "ul",
    { class: "relations" },
    links.map((n) => {
      const more = el("div", { class: "linked", "aria-live": "polite" });
      const way = n.relation ? (ARROWS[n.direction] ?? ((r) => r))(n.relation) : n.type;
      return el(
        "li",
        { "data-id": n.id },
        badge(way),
        n.relation ? badge(n.type) : null,
        el("span", { class: "meta" }, `${when(n.ts)}${n.weight === undefined ? "" : ` · weight ${n.weight}`} · id `, tier ? eventLink(n.id, tier, more) : n.id),
        el("p", { class: "summary", text: n.summary }),
        more,
      );
    }),
  );
}

function relations(e, tier, area) {
  return async () => {
    show(area, el("p", { class: "meta", text: "Looking up relations…" }));
    try {
      const links = await linksOf(e.id, tier);
      if (!links.length) {
        show(area, el("p", { class: "meta", text: "no relations: no event supports or contradicts this one, nor it any other" }));
      } else {
        show(area, el("p", { class: "meta", text: "Linked events (→: this event is the link's source; ←: the other event is):" }), linkList(links, tier));
      }
    } catch (err) {
      show(area, el("p", { class: "error", text: `${err.code}: ${err.detail}` }));
    }
  };
}

/** One journal event; what corrected it, what it corrects, when it stopped holding, and its relations on request. */
function eventItem(e, tier) {
  const expired = e.valid_until && Date.parse(e.valid_until) < Date.now();
  const gone = e.superseded_by || expired;
  const linked = el("div", { class: "linked", "aria-live": "polite" });
  return el(
    "li",
    { class: `event sev-${e.severity}${gone ? " gone" : ""}`, "data-id": e.id },
    el("time", { datetime: e.ts, text: when(e.ts) }),
    el("div", {}, badge(e.type), badge(e.severity, e.severity), e.superseded_by ? badge("superseded", "muted") : null, expired ? badge("expired", "muted") : null),
    el("p", { class: "summary", text: e.summary }),
    el("p", { class: "meta", text: `session ${e.session_id || "—"} · id ${e.id} · referenced ${e.reference_count}×` }),
    e.supersedes ? el("p", { class: "relation" }, "corrects ", eventLink(e.supersedes, tier, linked)) : null,
    e.superseded_by ? el("p", { class: "relation" }, "superseded by ", eventLink(e.superseded_by, tier, linked)) : null,
    e.valid_until ? el("p", { class: "relation", text: `true until ${when(e.valid_until)}` }) : null,
    el("div", { class: "actions" }, el("button", { type: "button", class: "quiet", onclick: relations(e, tier, linked), text: "Relations" })),
    linked,
  );
}
