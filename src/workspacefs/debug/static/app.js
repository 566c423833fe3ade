// workspacefs debug UI: timeline, tree, file view and diffs over the app's JSON API.
// Plain DOM, no framework, nothing fetched from the network but this app.
// Workspace content is untrusted: it only ever reaches the page as textContent.
"use strict";

const state = {
  snapshots: [],
  byId: new Map(),
  active: 0, // highlighted timeline row
  browsed: null, // snapshot shown in the tree
  file: null, // path shown in the file view
  diff: null, // {from, to, added, modified, deleted, unchanged_count, status: Map}
  diffFile: null, // last /api/diff/file answer
  causes: {}, // snapshot id -> {causes, more}: who made its changes (/api/causes)
  layout: "split", // or "unified"
  trials: [], // best-of-N trials (/api/trials), oldest first
  trial: null, // the trial shown in the attempts view
  live: { changed: new Set(), timer: null, running: null, rescan: false }, // the change feed
};

const LIVE = "live"; // the live state's id in the timeline
const LIVE_ROWS = 200; // rows the live changes list keeps
const LIVE_PATHS = 20; // rows one event shows (the rest are counted)
const LIVE_DELAY = 300; // ms between a change and the refresh it causes

const $ = (selector) => document.querySelector(selector);
const enc = encodeURIComponent;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

class ApiError extends Error {
  constructor(status, body) {
    super(body.message || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

async function api(path, params) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== null && value !== undefined) url.searchParams.set(key, value);
  }
  const response = await fetch(url, { headers: { accept: "application/json" } });
  let body;
  try {
    body = await response.json();
  } catch {
    body = { message: `HTTP ${response.status}` };
  }
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

function setStatus(text, isError) {
  const status = $("#status");
  status.textContent = text || "";
  status.classList.toggle("error", Boolean(isError));
}

function human(bytes) {
  if (bytes === null || bytes === undefined) return "?";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

function when(iso) {
  if (!iso) return "now";
  const date = new Date(iso);
  const pad = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

function shortId(snapshot) {
  return snapshot.short_id;  // the server's fs.short_id, as the CLI and tools show it
}

function snapshotName(id) {
  const snapshot = state.byId.get(id);
  if (!snapshot) return id;
  return `#${snapshot.number} ${shortId(snapshot)}${snapshot.tag ? " " + snapshot.tag : ""}`;
}

// -- timeline -----------------------------------------------------------------------

function originText(origin) {
  const args = origin.details && origin.details.arguments;
  if (!args) return origin.summary;
  const text = JSON.stringify(args);
  return `${origin.summary} ${text.length > 160 ? text.slice(0, 157) + "..." : text}`;
}

function causesText(causes, more) {
  const texts = causes.map((cause) => cause.text);
  if (more) texts.push(`${more} more`);
  return texts.join("; ");
}

function timelineCauses(snapshot) {
  const found = state.causes[snapshot.id];
  if (!found || !found.causes.length) return null;
  const text = causesText(found.causes, found.more);
  return el("span", { class: "causes", title: text, text: `by ${text}` });
}

function metaLine(snapshot) {
  const parts = [when(snapshot.created_at)];
  if (snapshot.file_count !== null) parts.push(`${snapshot.file_count} files`);
  if (snapshot.total_bytes !== null) parts.push(human(snapshot.total_bytes));
  if (snapshot.parent && state.byId.has(snapshot.parent)) {
    parts.push(`after #${state.byId.get(snapshot.parent).number}`);
  }
  if (snapshot.source) parts.push(snapshot.source);
  return parts.join(" · ");
}

function spaceText(space) {
  return `holds ${human(space.exclusive)} alone · shares ${human(space.shared)}`;
}

function renderTimeline() {
  const list = $("#timeline");
  list.replaceChildren(
    ...state.snapshots.map((snapshot, index) =>
      el(
        "li",
        {
          role: "option",
          id: `snapshot-${index}`,
          "aria-selected": String(snapshot.id === state.browsed),
          class: index === state.active ? "active" : null,
          dataset: { id: snapshot.id },
          onclick: () => {
            setActive(index);
            browse(snapshot.id);
          },
        },
        el("span", { class: "num", text: `#${snapshot.number}` }),
        el(
          "span",
          {},
          el("span", { class: "id", text: shortId(snapshot) }),
          snapshot.tag ? [" ", el("span", { class: "tag", text: snapshot.tag })] : null,
        ),
        el(
          "span",
          { class: "badges" },
          snapshot.id === state.from()
            ? el("span", { class: "badge from", text: "A", title: "compare from" })
            : null,
          snapshot.id === state.to()
            ? el("span", { class: "badge to", text: "B", title: "compare to" })
            : null,
        ),
        el("span", { class: "meta", text: metaLine(snapshot) }),
        snapshot.space
          ? el("span", {
              class: "space",
              text: spaceText(snapshot.space),
              title:
                "Memory: what only this state holds (deleting it frees that) " +
                "and what it shares with other snapshots, the live tree or forks",
            })
          : null,
        snapshot.origin ? el("span", { class: "origin", text: originText(snapshot.origin) }) : null,
        timelineCauses(snapshot),
      ),
    ),
  );
  list.setAttribute("aria-activedescendant", `snapshot-${state.active}`);
}

function setActive(index) {
  // Only two rows change: a long timeline is not rebuilt on every key press.
  const before = $(`#snapshot-${state.active}`);
  state.active = Math.max(0, Math.min(index, state.snapshots.length - 1));
  const row = $(`#snapshot-${state.active}`);
  if (before) before.classList.remove("active");
  if (!row) return;
  row.classList.add("active");
  $("#timeline").setAttribute("aria-activedescendant", row.id);
  row.scrollIntoView({ block: "nearest" });
}

function renderSelects() {
  for (const select of [$("#from-select"), $("#to-select")]) {
    const chosen = select.value;
    select.replaceChildren(
      ...state.snapshots.map((snapshot) =>
        el("option", { value: snapshot.id, text: snapshotName(snapshot.id) }),
      ),
    );
    if (state.byId.has(chosen)) select.value = chosen;
  }
}

state.from = () => $("#from-select").value;
state.to = () => $("#to-select").value;

function choose(which, id) {
  $(which === "from" ? "#from-select" : "#to-select").value = id;
  renderTimeline();
}

async function loadSnapshots() {
  const body = await api("/api/snapshots");
  state.snapshots = body.snapshots;
  state.byId = new Map(state.snapshots.map((snapshot) => [snapshot.id, snapshot]));
  renderSelects();
  renderTimeline();
  try {
    const causes = await api("/api/causes");
    state.causes = causes.snapshots;
    renderTimeline();
  } catch (error) {
    state.causes = {}; // the timeline works without them
  }
}

// -- tree ---------------------------------------------------------------------------

async function browse(id) {
  state.browsed = id;
  renderTimeline();
  $("#tree-snapshot").textContent = snapshotName(id);
  updateHash();
  const tree = $("#tree");
  tree.replaceChildren(el("li", { class: "muted", text: "Loading…" }));
  try {
    const body = await api(`/api/snapshots/${enc(id)}/tree`, { path: "" });
    tree.replaceChildren(...body.entries.map(treeItem));
    const first = tree.querySelector('[role="treeitem"]');
    if (first) first.tabIndex = 0;
    applyMarks();
    setStatus(`${snapshotName(id)}: ${body.entries.length} entries at the top`);
  } catch (error) {
    tree.replaceChildren(el("li", { class: "error", text: error.message }));
    setStatus(error.message, true);
  }
}

function treeItem(entry) {
  const isDir = entry.kind === "directory";
  let label = entry.name;
  if (isDir) label += "/";
  if (entry.kind === "symlink") label += ` → ${entry.target ?? "?"}`;
  const item = el(
    "li",
    {
      role: "treeitem",
      tabindex: "-1",
      "aria-expanded": isDir ? "false" : null,
      "aria-selected": "false",
      dataset: { path: entry.path, kind: entry.kind },
    },
    el(
      "span",
      { class: "label", onclick: () => activate(item) },
      el("span", { class: "name", text: label }),
      entry.kind === "file" ? el("span", { class: "size", text: human(entry.size) }) : null,
    ),
    isDir ? el("ul", { role: "group", hidden: true }) : null,
  );
  return item;
}

async function toggle(item, open) {
  const group = item.querySelector(":scope > ul");
  const expand = open ?? item.getAttribute("aria-expanded") !== "true";
  if (expand && !item.dataset.loaded) {
    try {
      const body = await api(`/api/snapshots/${enc(state.browsed)}/tree`, {
        path: item.dataset.path,
      });
      group.replaceChildren(...body.entries.map(treeItem));
      item.dataset.loaded = "1";
      applyMarks();
    } catch (error) {
      setStatus(error.message, true);
      return;
    }
  }
  item.setAttribute("aria-expanded", String(expand));
  group.hidden = !expand;
}

function focusItem(item) {
  if (!item) return;
  for (const other of $("#tree").querySelectorAll('[role="treeitem"][tabindex="0"]')) {
    other.tabIndex = -1;
  }
  item.tabIndex = 0;
  item.focus();
}

function activate(item) {
  focusItem(item);
  if (item.dataset.kind === "directory") toggle(item);
  else openFile(item.dataset.path);
}

function visibleItems() {
  return [...$("#tree").querySelectorAll('[role="treeitem"]')].filter(
    (item) => !item.closest("ul[hidden]"),
  );
}

function onTreeKey(event) {
  const item = event.target.closest('[role="treeitem"]');
  if (!item) return;
  const items = visibleItems();
  const index = items.indexOf(item);
  const expanded = item.getAttribute("aria-expanded");
  switch (event.key) {
    case "ArrowDown":
      focusItem(items[index + 1]);
      break;
    case "ArrowUp":
      focusItem(items[index - 1]);
      break;
    case "Home":
      focusItem(items[0]);
      break;
    case "End":
      focusItem(items[items.length - 1]);
      break;
    case "ArrowRight":
      if (expanded === "false") toggle(item, true);
      else if (expanded === "true") focusItem(item.querySelector('[role="treeitem"]'));
      break;
    case "ArrowLeft":
      if (expanded === "true") toggle(item, false);
      else focusItem(item.parentElement.closest('[role="treeitem"]'));
      break;
    case "Enter":
    case " ":
      activate(item);
      break;
    default:
      return;
  }
  event.preventDefault();
  event.stopPropagation();
}

function changeSets() {
  const diff = state.diff;
  if (!diff || (state.browsed !== diff.to && state.browsed !== diff.from)) return null;
  const onNewSide = state.browsed === diff.to;
  const marks = new Map();
  for (const path of diff.modified) marks.set(path, "modified");
  for (const path of onNewSide ? diff.added : diff.deleted) {
    marks.set(path, onNewSide ? "added" : "deleted");
  }
  const dirs = new Set();
  for (const path of marks.keys()) {
    let cut = path.lastIndexOf("/");
    while (cut > 0) {
      const dir = path.slice(0, cut);
      if (dirs.has(dir)) break;
      dirs.add(dir);
      cut = dir.lastIndexOf("/");
    }
  }
  return { marks, dirs };
}

function applyMarks() {
  const sets = changeSets();
  for (const item of $("#tree").querySelectorAll('[role="treeitem"]')) {
    item.classList.remove("added", "modified", "deleted", "contains-changes");
    if (!sets) continue;
    const mark = sets.marks.get(item.dataset.path);
    if (mark) item.classList.add(mark);
    if (sets.dirs.has(item.dataset.path)) item.classList.add("contains-changes");
  }
}

// -- file view ----------------------------------------------------------------------

function againstFor(snapshot) {
  const diff = state.diff;
  if (diff && snapshot === diff.to) return diff.from;
  if (diff && snapshot === diff.from) return diff.to;
  const index = state.snapshots.findIndex((s) => s.id === snapshot);
  return index > 0 ? state.snapshots[index - 1].id : null;
}

function downloadLink(url, text) {
  return url ? el("a", { href: url, download: "", text: text || "download" }) : null;
}

async function openFile(path) {
  state.file = path;
  for (const item of $("#tree").querySelectorAll('[role="treeitem"]')) {
    item.setAttribute("aria-selected", String(item.dataset.path === path));
  }
  showTab("file");
  updateHash();
  const view = $("#file-view");
  const snapshot = state.browsed;
  const against = againstFor(snapshot);
  view.replaceChildren(el("p", { class: "muted", text: "Loading…" }));
  try {
    renderFile(await api(`/api/snapshots/${enc(snapshot)}/file`, { path, against }));
  } catch (error) {
    const body = error.body || {};
    view.replaceChildren(
      el(
        "div",
        { class: "view-header" },
        el("span", { class: "path", text: path }),
        el("span", { class: "muted", text: `at ${snapshotName(snapshot)}` }),
      ),
      el("p", { class: "error", dataset: { error: body.error || "" }, text: error.message }),
      downloadLink(body.download, "download the file"),
    );
  }
}

function renderFile(file) {
  const changed = new Set(file.changed_lines || []);
  const lines = file.content === null ? [`-> ${file.target}`] : file.content.split("\n");
  if (file.content !== null && lines.length && lines[lines.length - 1] === "") lines.pop();
  let note = null;
  if (file.against) {
    const other = snapshotName(file.against);
    if (file.changed_lines === null) note = `not compared with ${other} (binary or large)`;
    else if (file.against_status === "absent") note = `new since ${other}`;
    else note = `${changed.size} line${changed.size === 1 ? "" : "s"} changed since ${other}`;
  }
  const rows = lines.map((text, index) =>
    el(
      "tr",
      { class: changed.has(index + 1) ? "changed" : null },
      el("td", { class: "ln", text: String(index + 1) }),
      el("td", { class: "src", text }),
    ),
  );
  $("#file-view").replaceChildren(
    el(
      "div",
      { class: "view-header" },
      el("span", { class: "path", text: file.path }),
      el("span", { class: "muted", text: `at ${snapshotName(file.snapshot)}` }),
      el("span", { class: "muted", text: `${human(file.size)}, ${file.line_count} lines` }),
      note ? el("span", { class: "note", text: note }) : null,
      downloadLink(file.download),
    ),
    el("table", { class: "code", id: "file-lines", "aria-label": `${file.path} lines` }, rows),
  );
}

// -- diff ---------------------------------------------------------------------------

async function runDiff() {
  const from = state.from();
  const to = state.to();
  if (!from || !to) return;
  showTab("diff");
  updateHash();
  const view = $("#diff-view");
  view.replaceChildren(el("p", { class: "muted", text: "Comparing…" }));
  try {
    const diff = await api("/api/diff", { from, to });
    diff.status = new Map();
    for (const kind of ["added", "modified", "deleted"]) {
      for (const path of diff[kind]) diff.status.set(path, kind);
    }
    state.diff = diff;
    renderDiff();
    applyMarks();
    setStatus(`${snapshotName(from)} → ${snapshotName(to)}: ${diff.status.size} changed`);
    const first = $("#changed-files li");
    if (first) openDiffFile(first.dataset.path);
  } catch (error) {
    view.replaceChildren(el("p", { class: "error", text: error.message }));
    setStatus(error.message, true);
  }
}

const MAX_LISTED = 5000;

function whoChanged(path) {
  // Who changed a path between the diff's two snapshots, newest first ("" if unknown).
  const causes = state.diff && state.diff.causes && state.diff.causes[path];
  return causes && causes.length ? `by ${causesText([...causes].reverse(), 0)}` : "";
}

function renderDiff() {
  const diff = state.diff;
  const paths = [...diff.status.keys()].sort();
  const shown = paths.slice(0, MAX_LISTED);
  const mark = { added: "A", modified: "M", deleted: "D" };
  const list = el(
    "ul",
    { id: "changed-files", role: "listbox", tabindex: "0", "aria-label": "Changed files" },
    shown.map((path) =>
      el(
        "li",
        {
          role: "option",
          class: diff.status.get(path),
          "aria-selected": "false",
          title: whoChanged(path) || null,
          dataset: { path },
          onclick: () => openDiffFile(path),
        },
        el("span", { class: "st", text: mark[diff.status.get(path)] }),
        path,
      ),
    ),
  );
  list.addEventListener("keydown", onChangedKey);
  $("#diff-view").replaceChildren(
    el(
      "p",
      { class: "summary" },
      `${snapshotName(diff.from)} → ${snapshotName(diff.to)}: `,
      el("span", { class: "n-added", text: `${diff.added.length} added` }),
      ", ",
      el("span", { class: "n-modified", text: `${diff.modified.length} modified` }),
      ", ",
      el("span", { class: "n-deleted", text: `${diff.deleted.length} deleted` }),
      diff.unchanged_count === null ? "" : ` (${diff.unchanged_count} unchanged)`,
      paths.length > shown.length ? ` — first ${shown.length} listed` : "",
    ),
    list,
    el("div", { id: "diff-file" }),
  );
}

function moveChanged(step) {
  const items = [...document.querySelectorAll("#changed-files li")];
  if (!items.length) return;
  const current = items.findIndex((item) => item.dataset.path === state.diffFile?.path);
  const next = items[Math.max(0, Math.min(items.length - 1, current + step))];
  openDiffFile(next.dataset.path);
}

function onChangedKey(event) {
  const step = { ArrowDown: 1, ArrowUp: -1 }[event.key];
  if (step) moveChanged(step);
  else if (event.key === "Enter" && state.diffFile) openFile(state.diffFile.path);
  else return;
  event.preventDefault();
  event.stopPropagation();
}

async function openDiffFile(path) {
  const diff = state.diff;
  for (const item of document.querySelectorAll("#changed-files li")) {
    const selected = item.dataset.path === path;
    item.setAttribute("aria-selected", String(selected));
    if (selected) item.scrollIntoView({ block: "nearest" });
  }
  const target = $("#diff-file");
  try {
    state.diffFile = await api("/api/diff/file", { from: diff.from, to: diff.to, path });
    renderDiffFile();
  } catch (error) {
    target.replaceChildren(el("p", { class: "error", text: error.message }));
  }
}

function cell(number, text, kind) {
  return [
    el("td", { class: "ln", text: number === null ? "" : String(number) }),
    el("td", { class: kind, text: text === null ? "" : text }),
  ];
}

function splitRows(hunk) {
  const rows = [];
  let dels = [];
  let adds = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i += 1) {
      const old = dels[i];
      const next = adds[i];
      rows.push(
        el(
          "tr",
          {},
          old ? cell(old.old, old.text, "del") : cell(null, null, "empty"),
          next ? cell(next.new, next.text, "add") : cell(null, null, "empty"),
        ),
      );
    }
    dels = [];
    adds = [];
  };
  for (const line of hunk.lines) {
    if (line.op === "-") dels.push(line);
    else if (line.op === "+") adds.push(line);
    else {
      flush();
      rows.push(el("tr", {}, cell(line.old, line.text, "src"), cell(line.new, line.text, "src")));
    }
  }
  flush();
  return rows;
}

function unifiedRows(hunk) {
  const kinds = { "-": "del", "+": "add", " ": "src" };
  return hunk.lines.map((line) =>
    el(
      "tr",
      {},
      el("td", { class: "ln", text: line.old === null ? "" : String(line.old) }),
      el("td", { class: "ln", text: line.new === null ? "" : String(line.new) }),
      el("td", { class: `op ${kinds[line.op]}`, text: line.op }),
      el("td", { class: kinds[line.op], text: line.text }),
    ),
  );
}

function renderDiffFile() {
  const file = state.diffFile;
  if (!file) return;
  const split = state.layout === "split";
  const header = el(
    "div",
    { class: "view-header" },
    el("span", { class: "path", text: file.path }),
    el("span", { class: `status ${file.status}`, text: file.status }),
    whoChanged(file.path) ? el("span", { class: "who", text: whoChanged(file.path) }) : null,
    downloadLink(file.downloads.old, "old"),
    downloadLink(file.downloads.new, "new"),
  );
  let body;
  if (file.binary || file.too_large) {
    const text = file.binary ? "Binary files differ." : "Too large to compare here.";
    body = el("p", { class: "muted", text });
  } else if (!file.hunks.length) {
    const text = file.status === "unchanged" ? "No changes." : "Only the mode changed.";
    body = el("p", { class: "muted", text });
  } else {
    const rows = [];
    for (const hunk of file.hunks) {
      rows.push(el("tr", { class: "hunk" }, el("td", { colspan: 4, text: hunk.header })));
      rows.push(...(split ? splitRows(hunk) : unifiedRows(hunk)));
    }
    // Fixed column widths, so both sides of a split view get half the space.
    const cols = split ? ["ln", "text", "ln", "text"] : ["ln", "ln", "op", "text"];
    body = el(
      "table",
      {
        class: `code ${split ? "split" : "unified"}`,
        id: "diff-lines",
        "aria-label": `Changes to ${file.path}`,
      },
      el("colgroup", {}, cols.map((kind) => el("col", { class: `col-${kind}` }))),
      rows,
    );
  }
  $("#diff-file").replaceChildren(header, body);
}

function toggleLayout() {
  state.layout = state.layout === "split" ? "unified" : "split";
  const button = $("#layout-button");
  button.textContent = state.layout === "split" ? "Side by side" : "Unified";
  button.setAttribute("aria-pressed", String(state.layout === "split"));
  renderDiffFile();
}

// -- best-of-N attempts, side by side ---------------------------------------------------

async function loadTrials() {
  const found = await api("/api/trials");
  state.trials = found.trials;
  $("#tab-attempts").hidden = !found.available;
  if (!state.trials.some((trial) => trial.id === state.trial)) {
    state.trial = state.trials.length ? state.trials[state.trials.length - 1].id : null;
  }
  renderTrials();
}

function seconds(value) {
  return `${value.toFixed(1)} s`;
}

function outcomeText(outcome) {
  return outcome.timed_out ? `timed out after ${seconds(outcome.duration)}`
    : `exit ${outcome.exit_code} in ${seconds(outcome.duration)}`;
}

function tailBlock(title, outcome) {
  const text = [outcome.stdout, outcome.stderr].filter((part) => part).join("\n");
  return [
    el("h4", { text: title }),
    text ? el("pre", { class: "tail", text }) : el("p", { class: "muted", text: "no output" }),
  ];
}

function attemptCard(attempt, trial) {
  const best = trial.best === attempt.id;
  const changes = attempt.changes;
  const paths = [
    ...changes.added.map((path) => ["added", "A", path]),
    ...changes.modified.map((path) => ["modified", "M", path]),
    ...changes.deleted.map((path) => ["deleted", "D", path]),
  ].sort((a, b) => (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0));
  const verdict = attempt.passed ? "passed" : "failed";
  return el(
    "article",
    {
      class: `attempt ${verdict}${best ? " best" : ""}`,
      "aria-label": `Attempt ${attempt.number}: ${attempt.id}, ${verdict}`,
      dataset: { attempt: attempt.id },
    },
    el(
      "header",
      {},
      el("span", { class: "attempt-id", text: `#${attempt.number} ${attempt.id}` }),
      best ? el("span", { class: "badge best", text: "best" }) : null,
      el("span", { class: `verdict ${verdict}`, text: verdict }),
      el("span", { class: "state muted", text: attempt.state }),
    ),
    el("pre", { class: "command", text: attempt.run.command }),
    el(
      "dl",
      {},
      el("dt", { text: "command" }),
      el("dd", { class: "run", text: outcomeText(attempt.run) }),
      el("dt", { text: "score" }),
      el("dd", { class: "score", text: String(attempt.score) }),
      attempt.scoring ? el("dt", { text: "scored" }) : null,
      attempt.scoring ? el("dd", { class: "scoring", text: outcomeText(attempt.scoring) }) : null,
      attempt.path ? el("dt", { text: "fork" }) : null,
      attempt.path ? el("dd", { class: "path", text: attempt.path }) : null,
    ),
    el("h4", { text: `Changed (${paths.length})` }),
    el(
      "ul",
      { class: "paths" },
      paths.map(([kind, mark, path]) =>
        el("li", { class: kind }, el("span", { class: "st", text: mark }), path),
      ),
    ),
    tailBlock("Output", attempt.run),
    attempt.scoring ? tailBlock("Score output", attempt.scoring) : null,
  );
}

function renderTrials() {
  const view = $("#attempts-view");
  if (!state.trials.length) {
    view.replaceChildren(el("p", { class: "muted", text: "No best-of-N trial has run on this workspace." }));
    return;
  }
  const select = el(
    "select",
    {
      id: "trial-select",
      "aria-label": "Trial",
      onchange: (event) => {
        state.trial = event.target.value;
        renderTrials();
      },
    },
    [...state.trials].reverse().map((trial) =>
      el("option", {
        value: trial.id,
        text: `${trial.id} (${trial.state}, ${trial.attempts.length} attempts)`,
        selected: trial.id === state.trial,
      }),
    ),
  );
  const trial = state.trials.find((found) => found.id === state.trial);
  const passed = trial.attempts.filter((attempt) => attempt.passed).length;
  const header = el(
    "div",
    { class: "view-header" },
    select,
    el("span", {
      class: "trial-summary",
      text: `${passed} of ${trial.attempts.length} passed in ${seconds(trial.duration)}` +
        (trial.score_command ? `, scored by ${trial.score_command}` : ""),
    }),
  );
  const grid = el(
    "div",
    { id: "attempts", role: "group", "aria-label": `Attempts of ${trial.id}, side by side` },
    trial.attempts.map((attempt) => attemptCard(attempt, trial)),
  );
  view.replaceChildren(header, grid);
}

// -- live changes (the change feed) ---------------------------------------------------

function watchLive() {
  // The page learns of every change from the feed (/api/events), and refreshes
  // what shows the live state: the timeline, and the tree and file when browsing it.
  $("#live").hidden = false;
  const source = new EventSource("/api/events");
  source.addEventListener("open", () => ($("#live-state").textContent = "following"));
  source.addEventListener("error", () => ($("#live-state").textContent = "reconnecting…"));
  source.addEventListener("message", (message) => {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      return;
    }
    showLiveEvent(event);
    if (event.kind === "gap") state.live.rescan = true;
    if (event.kind === "denied") return; // a refused change changed nothing
    for (const path of event.paths) state.live.changed.add(path);
    clearTimeout(state.live.timer);
    state.live.timer = setTimeout(liveRefresh, LIVE_DELAY);
  });
}

function liveRow(event, path) {
  const mark = { added: "A", modified: "M", deleted: "D", denied: "!" }[event.kind];
  const who = event.causes.map((cause) => cause.text).reverse().join("; ") || "unknown";
  const denial = event.denial;
  const what = denial
    ? `${denial.action} denied by ${denial.scope} rule ${denial.rule.mode} '${denial.rule.pattern}'`
    : event.kind;
  return el(
    "li",
    {
      class: event.kind,
      title: `${when(event.time)} ${what} by ${who}`,
      dataset: { path },
      onclick: event.kind === "deleted" || denial ? null : () => openLive(path),
    },
    el("span", { class: "st", text: mark }),
    el("span", { class: "path", text: path }),
    el("span", { class: "who", text: `by ${who}` }),
  );
}

function showLiveEvent(event) {
  const list = $("#live-feed");
  const rows =
    event.kind === "gap"
      ? [el("li", { class: "gap", text: "changes were lost to this page: the views are reloaded" })]
      : event.paths.slice(0, LIVE_PATHS).map((path) => liveRow(event, path));
  if (event.paths.length > LIVE_PATHS) {
    rows.push(el("li", { class: "muted", text: `… ${event.paths.length - LIVE_PATHS} more` }));
  }
  list.prepend(...rows);
  while (list.children.length > LIVE_ROWS) list.lastElementChild.remove();
}

async function openLive(path) {
  if (state.browsed !== LIVE) {
    setActive(state.snapshots.findIndex((snapshot) => snapshot.id === LIVE));
    await browse(LIVE);
  }
  await openFile(path);
}

function treeItemAt(path) {
  for (const item of $("#tree").querySelectorAll('[role="treeitem"]')) {
    if (item.dataset.path === path) return item;
  }
  return null;
}

async function reloadTree() {
  // The live tree again, with the same directories open and the same item focused.
  const tree = $("#tree");
  const open = [...tree.querySelectorAll('[role="treeitem"][aria-expanded="true"]')].map(
    (item) => item.dataset.path,
  ); // parents before their children
  const current = tree.querySelector('[role="treeitem"][tabindex="0"]');
  const focused = current ? current.dataset.path : null;
  const hadFocus = tree.contains(document.activeElement);
  const body = await api(`/api/snapshots/${enc(LIVE)}/tree`, { path: "" });
  if (state.browsed !== LIVE) return;
  tree.replaceChildren(...body.entries.map(treeItem));
  for (const path of open) {
    const item = treeItemAt(path);
    if (item) await toggle(item, true);
  }
  const again = treeItemAt(focused) || tree.querySelector('[role="treeitem"]');
  if (again) {
    again.tabIndex = 0;
    if (hadFocus) again.focus();
  }
  for (const item of tree.querySelectorAll('[role="treeitem"]')) {
    item.setAttribute("aria-selected", String(item.dataset.path === state.file));
  }
  applyMarks();
}

async function liveRefresh() {
  if (state.live.running) {
    // One refresh at a time; changes seen meanwhile get one more.
    clearTimeout(state.live.timer);
    state.live.timer = setTimeout(liveRefresh, LIVE_DELAY);
    return;
  }
  const changed = state.live.changed;
  const rescan = state.live.rescan;
  state.live.changed = new Set();
  state.live.rescan = false;
  state.live.running = (async () => {
    try {
      await loadSnapshots();
      if (state.browsed === LIVE) {
        await reloadTree();
        const showing = !$("#file-view").hidden;
        if (state.file && showing && (rescan || changed.has(state.file))) await openFile(state.file);
      }
    } catch (error) {
      setStatus(error.message, true);
    } finally {
      state.live.running = null;
    }
  })();
  await state.live.running;
}

// -- tabs, keys, location -------------------------------------------------------------

function showTab(name) {
  for (const which of ["file", "diff", "attempts"]) {
    $(`#tab-${which}`).setAttribute("aria-selected", String(which === name));
    $(`#${which}-view`).hidden = which !== name;
  }
}

function onTimelineKey(event) {
  const snapshot = state.snapshots[state.active];
  switch (event.key) {
    case "ArrowDown":
      setActive(state.active + 1);
      break;
    case "ArrowUp":
      setActive(state.active - 1);
      break;
    case "Home":
      setActive(0);
      break;
    case "End":
      setActive(state.snapshots.length - 1);
      break;
    case "Enter":
    case " ":
      if (snapshot) browse(snapshot.id);
      break;
    case "a":
      if (snapshot) choose("from", snapshot.id);
      break;
    case "b":
      if (snapshot) choose("to", snapshot.id);
      break;
    default:
      return;
  }
  event.preventDefault();
  event.stopPropagation();
}

function onGlobalKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const typing = event.target.closest("input, select, textarea");
  if ((typing || $("#help").open) && event.key !== "Escape") return;
  const actions = {
    s: () => $("#timeline").focus(),
    t: () => {
      const items = visibleItems();
      focusItem(items.find((item) => item.tabIndex === 0) || items[0]);
    },
    f: () => ($("#file-view").hidden ? $("#diff-view") : $("#file-view")).focus(),
    d: runDiff,
    u: toggleLayout,
    n: () => moveChanged(1),
    p: () => moveChanged(-1),
    r: refresh,
    o: () => {
      if ($("#tab-attempts").hidden) return;
      showTab("attempts");
      $("#attempts-view").focus();
    },
    "?": () => $("#help").showModal(),
  };
  const action = actions[event.key];
  if (!action) return;
  event.preventDefault();
  action();
}

function updateHash() {
  const params = new URLSearchParams();
  if (state.browsed) params.set("snapshot", state.browsed);
  if (state.file) params.set("file", state.file);
  if (state.diff) {
    params.set("from", state.diff.from);
    params.set("to", state.diff.to);
  }
  history.replaceState(null, "", `#${params}`);
}

async function refresh() {
  try {
    await loadSnapshots();
    await loadTrials();
    setStatus(`${state.snapshots.length} snapshots`);
  } catch (error) {
    setStatus(error.message, true);
  }
}

async function start() {
  // The URL's token has become a cookie the page cannot read: keep it out of the
  // address bar, the history and anything copied from there.
  if (new URLSearchParams(location.search).has("token")) {
    history.replaceState(null, "", location.pathname + location.hash);
  }
  $("#timeline").addEventListener("keydown", onTimelineKey);
  $("#tree").addEventListener("keydown", onTreeKey);
  document.addEventListener("keydown", onGlobalKey);
  $("#compare-button").addEventListener("click", runDiff);
  $("#from-select").addEventListener("change", renderTimeline);
  $("#to-select").addEventListener("change", renderTimeline);
  $("#layout-button").addEventListener("click", toggleLayout);
  $("#tab-file").addEventListener("click", () => showTab("file"));
  $("#tab-diff").addEventListener("click", () => showTab("diff"));
  $("#tab-attempts").addEventListener("click", () => showTab("attempts"));
  $("#help-button").addEventListener("click", () => $("#help").showModal());
  $("#help-close").addEventListener("click", () => $("#help").close());
  try {
    const target = await api("/api/target");
    $("#target-label").textContent = `${target.kind}: ${target.label}`;
    document.title = `${target.label} — workspacefs debug`;
    if (target.kind === "live" && target.details.change_feed) watchLive();
    await loadSnapshots();
    await loadTrials();
  } catch (error) {
    setStatus(error.message, true);
    return;
  }
  const wanted = new URLSearchParams(location.hash.slice(1));
  const count = state.snapshots.length;
  if (!count) {
    setStatus("no snapshots");
    return;
  }
  const from = wanted.get("from");
  const to = wanted.get("to");
  $("#from-select").value = state.byId.has(from) ? from : state.snapshots[Math.max(0, count - 2)].id;
  $("#to-select").value = state.byId.has(to) ? to : state.snapshots[count - 1].id;
  const browsed = state.byId.has(wanted.get("snapshot"))
    ? wanted.get("snapshot")
    : state.snapshots[count - 1].id;
  setActive(state.snapshots.findIndex((snapshot) => snapshot.id === browsed));
  await browse(browsed);
  if (state.byId.has(from) && state.byId.has(to)) await runDiff();
  if (wanted.get("file")) await openFile(wanted.get("file"));
  document.body.dataset.ready = "1";
}

start();
