// Maintenance: what the lifecycle engine did to each tier (last pass, what it archived,
// the next pass, active and archived bytes per kind), and a pass on request: a dry run
// first, whose plan the confirmation quotes, then the pass itself.
import { post } from "./api.js";
import { badge, el, when } from "./dom.js";

const MOVED = ["archived", "replaced", "merged"]; // a daily log's ways out of daily/

function size(bytes) {
  if (bytes === undefined || bytes === null) return "—";
  if (bytes < 1024) return `${bytes} B`;
  return bytes < 1048576 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / 1048576).toFixed(1)} MB`;
}

/** "archived 3 daily log(s) (Sep 2026)" from a pass's steps; a dry run's plan says "would". */
export function passSummary(pass) {
  const daily = pass.steps?.daily ?? {};
  const days = daily.dry_run ? daily.due ?? 0 : MOVED.reduce((n, k) => n + (daily[k] ?? 0), 0);
  const verb = daily.dry_run ? "would archive" : "archived";
  const months = daily.months?.length ? ` (${daily.months.join(", ")})` : "";
  const failed = Object.entries(pass.steps ?? {}).filter(([, s]) => s.error).map(([name, s]) => `${name} failed: ${s.error}`);
  return [`${verb} ${days} daily log(s)${months}`, `active ${size(pass.active_bytes_before)} → ${size(pass.active_bytes_after)}`, ...failed].join("; ");
}

function tierLifecycle(tier, life) {
  const last = life.last_run;
  const kinds = Object.entries(life.kinds ?? {}).map(([kind, use]) =>
    el("tr", {}, el("th", { scope: "row", text: kind }), el("td", { text: use.error ?? size(use.active_bytes) }), el("td", { text: use.error ? "" : size(use.archived_bytes) })),
  );
  const errors = Object.entries(life.errors ?? {}).map(([step, why]) => el("li", { class: "error", text: `${step}: ${why}` }));
  return el(
    "section",
    { class: "tier lifecycle", "data-tier": tier },
    el("h3", {}, `${tier} tier `, life.running ? badge("running", "warn") : null, errors.length ? badge("failing", "warn") : null),
    el(
      "dl",
      { class: "facts-list" },
      el("dt", { text: "Last pass" }),
      el("dd", { class: "last-run", text: last ? `${when(last.started)} (${last.reason}, ${last.duration_s} s): ${passSummary(last)}` : "none since the daemon started" }),
      el("dt", { text: "Next pass" }),
      el("dd", { text: life.next_run ? when(life.next_run) : "after the first pass" }),
      el("dt", { text: "Keeps daily logs" }),
      el("dd", { text: `${life.daily_retention_days} days, then archives them by month` }),
    ),
    el(
      "table",
      { class: "kinds" },
      el("caption", { text: "Bytes by kind" }),
      el("thead", {}, el("tr", {}, ["Kind", "Active", "Archived"].map((h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, kinds),
    ),
    errors.length ? el("ul", { class: "reasons" }, errors) : null,
  );
}

/** Each tier's maintenance, from /memory/status's lifecycle field. */
export function lifecycleSection(status) {
  const tiers = Object.entries(status.tiers ?? {}).filter(([, body]) => body.lifecycle);
  return el(
    "section",
    { class: "maintenance", "aria-label": "Maintenance" },
    el("h2", { text: "Maintenance (lifecycle)" }),
    tiers.length
      ? el("div", { class: "columns" }, tiers.map(([tier, body]) => tierLifecycle(tier, body.lifecycle)))
      : el("p", { class: "meta", text: "No tier reports a lifecycle here." }),
  );
}

/**
 * The "Run maintenance" action: a dry run, then a confirmation quoting its plan, then the
 * pass. Returns what the status line says; `done` refreshes the view after a real pass.
 */
export async function runMaintenance(scope, done) {
  const plan = await post("/memory/maintain", { scope, dry_run: true });
  const lines = Object.entries(plan.tiers).map(([tier, pass]) => `${tier}: ${passSummary(pass)}`);
  if (!window.confirm(`Run maintenance on ${scope}? A dry run says it would do this:\n\n${lines.join("\n")}`)) {
    return `not run; the dry run planned: ${lines.join(" | ")}`;
  }
  const body = await post("/memory/maintain", { scope, dry_run: false });
  done();
  return `maintenance done: ${Object.entries(body.tiers).map(([tier, pass]) => `${tier}: ${passSummary(pass)}`).join(" | ")}`;
}
