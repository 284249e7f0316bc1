// Health: the daemon's state, the journal's five health metrics with their daily
// history, what each capability reports; and the few actions, each confirmed first.
import { get, post } from "./api.js";
import { badge, el, field, show, when } from "./dom.js";
import { lifecycleSection, runMaintenance } from "./lifecycle.js";
import { panelForm } from "./views.js";

const METRICS = ["freshness", "coverage", "coherence", "efficiency", "reachability"];
const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  return node;
}

/** The daily health score as bars (0-100), built as SVG elements; a day without data is a gap. */
function chart(history) {
  const width = Math.max(history.length * 14, 60);
  const box = svg("svg", { viewBox: `0 0 ${width} 50`, class: "chart", role: "img" });
  const scored = history.filter((d) => d.score !== null);
  box.setAttribute("aria-label", scored.length ? `daily health score, ${scored.length} day(s) with data` : "no daily scores yet");
  history.forEach((day, i) => {
    if (day.score === null) return;
    const h = Math.max(1, (day.score / 100) * 48);
    const bar = svg("rect", { x: i * 14 + 2, y: 49 - h, width: 10, height: h, class: "bar" });
    bar.append(svg("title", {}));
    bar.firstChild.textContent = `${day.day}: ${day.score}`;
    box.append(bar);
  });
  return box;
}

function tierHealth(scope, body) {
  const rows = METRICS.map((name) => {
    const m = body.metrics?.[name] ?? {};
    return el("tr", {}, el("th", { scope: "row", text: name }), el("td", { text: m.value ?? "no data" }), el("td", { text: m.weight ?? "" }));
  });
  const days = (body.history ?? []).map((d) => el("tr", {}, el("td", { text: d.day }), el("td", { text: d.score ?? "—" }), METRICS.map((m) => el("td", { text: d[m] ?? "—" }))));
  return el(
    "section",
    { class: "tier" },
    el("h2", { text: `${scope} journal: ${body.score ?? "no score"} (${body.band})` }),
    el("table", {}, el("caption", { text: "The five metrics" }), el("thead", {}, el("tr", {}, ["Metric", "Value", "Weight"].map((h) => el("th", { scope: "col", text: h })))), el("tbody", {}, rows)),
    chart(body.history ?? []),
    el("details", {}, el("summary", { text: "Daily history" }), el("table", {}, el("thead", {}, el("tr", {}, ["Day", "Score", ...METRICS].map((h) => el("th", { scope: "col", text: h })))), el("tbody", {}, days))),
  );
}

function capabilities(status) {
  const items = [];
  for (const [tier, body] of Object.entries(status.tiers ?? {})) {
    for (const key of ["lifecycle", "facts", "journal", "learnings", "extraction", "sessions", "embeddings"]) {
      if (body[key] === undefined) continue;
      items.push(el("dt", { text: `${tier} ${key}` }), el("dd", {}, el("code", { text: JSON.stringify(body[key]) })));
    }
  }
  return el("details", { class: "caps" }, el("summary", { text: "What each capability reports (lifecycle, facts, journal…)" }), el("dl", {}, items));
}

async function load() {
  const [health, status, ...journals] = await Promise.all([
    get("/healthz"),
    get("/memory/status", { scope: "both" }),
    ...["agent", "crew"].map((scope) => get("/memory/health", { scope }).catch((err) => ({ error: err }))),
  ]);
  const tiers = Object.entries(health.tiers ?? {}).map(([name, t]) =>
    el("li", {}, el("strong", { text: name }), " ", badge(t.state, t.state === "ready" ? "ok" : "warn"), el("span", { class: "meta", text: ` store ${t.store?.kind ?? t.reads ?? "—"}, queue ${t.queue_depth ?? "—"}, last reconcile ${when(t.last_reconcile)}` })),
  );
  const reasons = (health.reasons ?? []).map((r) => el("li", { class: "error", text: r }));
  const parts = [
    el("p", {}, "Daemon ", badge(health.status, health.status === "ok" ? "ok" : "warn"), ` role ${health.role}, retrieval ${health.retrieval ?? "—"}`),
    reasons.length ? el("ul", { class: "reasons" }, reasons) : null,
    el("ul", { class: "tiers" }, tiers),
    el("div", { class: "columns" }, journals.map((j, i) => (j.error ? el("p", { class: "error", text: `${["agent", "crew"][i]}: ${j.error.detail}` }) : tierHealth(j.scope, j)))),
    lifecycleSection(status),
    capabilities(status),
  ];
  return [`checked ${when(new Date().toISOString())}`, parts];
}

function action(title, controls, confirmText, perform) {
  const out = el("p", { class: "status", role: "status", "aria-live": "polite" });
  const form = el("form", { class: "controls action" }, el("h3", { text: title }), controls, el("button", { type: "submit", class: "danger", text: `${title}…` }), out);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (confirmText && !window.confirm(confirmText())) return; // else perform asks itself
    out.classList.remove("error");
    try {
      out.textContent = await perform();
    } catch (err) {
      out.textContent = `${err.code}: ${err.detail}`;
      out.classList.add("error");
    }
  });
  return form;
}

export function healthView(panel) {
  const { run } = panelForm(panel, [], load, "Refresh");
  const session = el("input", { name: "session_id", required: true, maxlength: 128 });
  const user = el("input", { name: "user_id", required: true, maxlength: 256 });
  const workspace = el("input", { name: "workspace_id", required: true, maxlength: 256 });
  const tiers = el("select", { name: "scope" }, ["both", "agent", "crew"].map((s) => el("option", { value: s, text: s })));
  panel.append(
    el(
      "section",
      { class: "actions-list", "aria-label": "Actions" },
      el("h2", { text: "Actions" }),
      action("Run maintenance", [field("Tiers to maintain", tiers)], null, () => runMaintenance(tiers.value, run)),
      action("Reindex", [], () => "Rebuild both tiers' indexes from the files on disk?", async () => {
        const body = await post("/memory/reindex", {}, { scope: "both" });
        return `reindex accepted: ${JSON.stringify(body)}`;
      }),
      action("End session", [field("Session id", session)], () => `End session ${session.value}? Its learnings are extracted and it can take no more events.`, async () => {
        const body = await post("/memory/session/end", { session_id: session.value });
        if (!body.ended) return `no session ${body.session_id} was open: nothing ended`;
        return `session ${body.session_id} ended${body.already_ended ? " earlier" : ""}, ${body.events} event(s)`;
      }),
      action("Opt operator out", [field("User id", user), field("Workspace id", workspace)], () => `Opt ${user.value} out in ${workspace.value}? The daemon stops keeping an operator model for them.`, async () => {
        const body = await post("/memory/operator/opt-out", { user_id: user.value, workspace_id: workspace.value });
        return `opted out: ${JSON.stringify(body)}`;
      }),
    ),
  );
  return run;
}
