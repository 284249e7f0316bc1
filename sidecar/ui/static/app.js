// The tabs: each view is built once, the first time it is shown; a view that lists
// something loads it then. Health refreshes itself at most once a minute, and only
// while it is the tab shown in a visible window.
import { blockView, factsView, learningsView } from "./knowledge.js";
import { healthView } from "./health.js";
import { journalView } from "./journal.js";
import { filesView, searchView } from "./views.js";

const VIEWS = {
  search: searchView,
  files: filesView,
  journal: journalView,
  facts: factsView,
  learnings: learningsView,
  block: blockView,
  health: healthView,
};
const REFRESH_MS = 60_000;
const loaders = {};
const tabs = [...document.querySelectorAll('[role="tab"]')];

function select(tab, focus) {
  for (const other of tabs) {
    const chosen = other === tab;
    other.setAttribute("aria-selected", String(chosen));
    other.tabIndex = chosen ? 0 : -1;
    document.getElementById(other.getAttribute("aria-controls")).hidden = !chosen;
  }
  if (focus) tab.focus();
  const name = tab.dataset.view;
  if (!(name in loaders)) {
    const panel = document.getElementById(tab.getAttribute("aria-controls"));
    loaders[name] = VIEWS[name](panel) ?? null;
    if (loaders[name]) loaders[name]();
  }
  history.replaceState(null, "", `#${name}`);
}

tabs.forEach((tab, i) => {
  tab.addEventListener("click", () => select(tab, false));
  tab.addEventListener("keydown", (event) => {
    const step = { ArrowRight: 1, ArrowLeft: -1, Home: -i, End: tabs.length - 1 - i }[event.key];
    if (step === undefined) return;
    event.preventDefault();
    select(tabs[(i + step + tabs.length) % tabs.length], true);
  });
});

setInterval(() => {
  const health = tabs.find((t) => t.dataset.view === "health");
  if (!document.hidden && health.getAttribute("aria-selected") === "true" && loaders.health) loaders.health();
}, REFRESH_MS);

const start = tabs.find((t) => `#${t.dataset.view}` === location.hash) ?? tabs[0];
select(start, false);
document.body.dataset.ready = "true";
