// The journal as a timeline: filters, a page of events at a time, what corrected what,
// and on request an event's relations (the events it supports or contradicts, and those
// that support it), which the journal answers through a recall that walks one hop.
import { get, post } from "./api.js";
import { badge, el, field, show, when } from "./dom.js";
import { panelForm, scopeSelect } from "./views.js";

function isoDay(value, end) {
  return value ? `${value}T${end ? "23:59:59" : "00:00:00"}Z` : undefined;
}

const PAGE = 100; // events a request lists; "Show later events" asks for the next ones

export function journalView(panel) {
  const scope = scopeSelect("scope", ["agent", "crew"], "agent");
  const type = el("input", { name: "type", placeholder: "deploy.failed" });
  const severity = scopeSelect("severity", ["any", "info", "warn", "error"], "any");
  const session = el("input", { name: "session_id" });
  const since = el("input", { type: "date", name: "since" });
  const until = el("input", { type: "date", name: "until" });
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
    [field("Tier", scope), field("Type", type), field("Severity", severity), field("Session", session), field("From", since), field("To", until)],
    async () => {
      const timeline = el("ol", { class: "timeline" });
      const summary = el("p", { class: "meta" });
      const more = el("button", { type: "button", text: "Show later events" });
      const tier = scope.value;
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

const RECALL_K = 50; // the most a recall ranks: the event is looked for among them

/**
 * An event's relations, either direction: a recall on `words` that walks one hop, read
 * from the hit that is the event. The journal lists no relations, so this is the way in.
 * null when the recall did not rank the event at all.
 */
export async function linksOf(id, words, tier) {
  const body = { query: words, scope: tier, k: RECALL_K, walk: 1, mark: false, include_superseded: true };
  const answer = await post("/memory/recall", body);
  const hit = answer.hits.find((h) => h.id === id);
  return hit ? hit.neighbours ?? [] : null;
}

/** Related events as a list: the relation, the other event's type, time and words. */
export function linkList(links) {
  return el(
    "ul",
    { class: "relations" },
    links.map((n) => el("li", { "data-id": n.id }, badge(n.relation ?? n.type), n.relation ? badge(n.type) : null, el("span", { class: "meta", text: `${when(n.ts)}${n.weight === undefined ? "" : ` · weight ${n.weight}`} · id ${n.id}` }), el("p", { class: "summary", text: n.summary }))),
  );
}

function relations(e, tier, area) {
  return async () => {
    show(area, el("p", { class: "meta", text: "Looking up relations…" }));
    try {
      const links = await linksOf(e.id, e.summary, tier);
      if (links === null) {
        show(area, el("p", { class: "meta", text: `a recall of its words did not rank this event among the ${RECALL_K} best, so its relations cannot be shown` }));
      } else if (!links.length) {
        show(area, el("p", { class: "meta", text: "no relations: no event supports or contradicts this one, nor it any other" }));
      } else {
        show(area, el("p", { class: "meta", text: "Linked events (a recall does not say which way a link points: a consolidation event supports its episodes):" }), linkList(links));
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
    e.supersedes ? el("p", { class: "relation", text: `corrects ${e.supersedes}` }) : null,
    e.superseded_by ? el("p", { class: "relation", text: `superseded by ${e.superseded_by}` }) : null,
    e.valid_until ? el("p", { class: "relation", text: `true until ${when(e.valid_until)}` }) : null,
    el("div", { class: "actions" }, el("button", { type: "button", class: "quiet", onclick: relations(e, tier, linked), text: "Relations" })),
    linked,
  );
}
