// Recruiter console: start a search, then follow its results as they are appended.
//
// Rows are appended strictly in server rank order (rank N+1 after rank N) and are never
// re-sorted, moved or replaced. New rows arrive over Server-Sent Events (a fetch() stream with
// the session cookie) or, as the fallback, by
// polling GET /api/results?searchId=…&after=<last rank> every few seconds. Both feed the same
// functions, so the page shows the same ranks and rows either way.
//
// The console works on the signed-in session only (its cookie; every change carries the
// session's CSRF token from GET /api/me). Programs use the API with a key instead.
"use strict";

(function () {
  const root = document.getElementById("recruit");
  if (!root) {
    return;
  }

  const QUERY_KEY = "shortlist.searchQuery.";
  const API = root.dataset.apiRoot || "";
  const POLL_MS = clampInt(root.dataset.pollMs, 5000, 100, 60000);
  const TRANSPORT = root.dataset.transport || "auto"; // auto | sse | poll
  const STATUS_ORDER = [
    "queued",
    "running",
    "succeeded",
    "failed_no_email",
    "failed_transient",
    "failed_permanent",
    "below_threshold",
    "skipped",
  ];
  const STATUS_LABEL = {
    queued: "Queued",
    running: "Enriching",
    succeeded: "Ready",
    failed_no_email: "No e-mail found",
    failed_transient: "Temporary failure",
    failed_permanent: "Failed",
    below_threshold: "Not a result",
    skipped: "Not needed (target reached)",
    forgotten: "Removed on request",
  };
  const TIER_FAILED = new Set(["failed", "quota_exhausted"]);
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  const FAILED = new Set(["failed_no_email", "failed_transient", "failed_permanent"]);
  const SEARCH_STATE = {
    running: ["Running", "badge-running"],
    complete: ["Complete", "badge-complete"],
    stale: ["Stale", "badge-stale"],
  };

  const $ = (id) => document.getElementById(id);
  const ui = {
    signedIn: $("signed-in"),
    signOut: $("sign-out"),
    message: $("page-message"),
    signedInAs: $("signed-in-as"),
    signinPanel: $("signin-panel"),
    signinLink: $("signin-link"),
    teamPanel: $("team-panel"),
    teamOrg: $("team-org"),
    teamEmpty: $("team-empty"),
    teamSearches: $("team-searches"),
    teamError: $("team-error"),
    searchPanel: $("search-panel"),
    searchForm: $("search-form"),
    searchError: $("search-error"),
    searchSubmit: $("search-submit"),
    resultsPanel: $("results-panel"),
    resultsTitle: $("results-title"),
    searchQuery: $("search-query"),
    count: $("result-count"),
    state: $("search-state"),
    statusCounts: $("status-counts"),
    staleBox: $("stale-box"),
    staleTitle: $("stale-title"),
    staleText: $("stale-text"),
    summary: $("search-summary"),
    retrySearch: $("retry-search"),
    retrySearchError: $("retry-search-error"),
    empty: $("results-empty"),
    results: $("results"),
    pipeline: $("pipeline"),
    attempts: $("attempts"),
    transportInfo: $("transport-info"),
    hiddenInfo: $("hidden-info"),
    hiddenCount: $("hidden-count"),
    showHidden: $("show-hidden"),
    hiddenList: $("hidden-list"),
    exportCsv: $("export-csv"),
    exportError: $("export-error"),
    alertBox: $("alert-box"),
    alertState: $("alert-state"),
    alertSave: $("alert-save"),
    alertError: $("alert-error"),
    alertMatches: $("alert-matches"),
  };
  const MARK_LABEL = { "": "Not marked", shortlisted: "Shortlisted", contacted: "Contacted", rejected: "Rejected" };

  /** The search on screen (at most one). */
  let view = null;

  // --- small helpers -----------------------------------------------------------------------

  function clampInt(text, fallback, lo, hi) {
    const n = Number.parseInt(text, 10);
    return Number.isFinite(n) ? Math.min(hi, Math.max(lo, n)) : fallback;
  }

  /** createElement with attributes and text/element children (never innerHTML). */
  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) {
        continue;
      }
      node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === "") {
        continue;
      }
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function safeHttpUrl(text) {
    try {
      const url = new URL(String(text));
      return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
    } catch {
      return null;
    }
  }

  function plural(n, one, many) {
    return `${n} ${n === 1 ? one : many}`;
  }

  function showMessage(text, kind, code) {
    ui.message.hidden = !text;
    ui.message.className = "notice" + (kind ? ` notice-${kind}` : "");
    ui.message.setAttribute("role", kind === "error" ? "alert" : "status");
    ui.message.dataset.notice = code || "";
    ui.message.textContent = text || "";
  }

  function setTransportInfo(v, mode, note) {
    root.dataset.mode = mode || "";
    if (mode) {
      root.dataset.transportUsed = mode; // which transport delivered updates (for tests)
    }
    const what =
      mode === "sse"
        ? "Live updates (server-sent events)"
        : mode === "poll"
          ? `Checking for new candidates every ${POLL_MS >= 1000 ? `${POLL_MS / 1000} s` : `${POLL_MS} ms`}`
          : "";
    ui.transportInfo.textContent = [what, note].filter(Boolean).join(" · ");
  }

  // --- session ----------------------------------------------------------------------------

  // The signed-in session ({csrf, email}), from GET /api/me; null: nobody is signed in.
  let session = null;

  function token() {
    return session ? "session" : null;
  }

  function authHeaders() {
    return session ? { "X-CSRF-Token": session.csrf } : {};
  }

  function signInUrl() {
    return API + "/signin?next=" + encodeURIComponent(window.location.pathname + window.location.search);
  }

  function renderAuth() {
    const signedIn = Boolean(session);
    ui.signinPanel.hidden = signedIn;
    ui.searchPanel.hidden = !signedIn;
    ui.teamPanel.hidden = !signedIn;
    ui.signedIn.hidden = !signedIn;
    ui.signinLink.href = signInUrl();
    if (session) {
      ui.signedInAs.textContent = `Signed in as ${session.email}`;
    }
  }

  function signOut(message) {
    closeView();
    ui.resultsPanel.hidden = true;
    if (session) {
      const csrf = session.csrf;
      session = null;
      if (!message) {
        fetch(API + "/api/session", { method: "DELETE", headers: { "X-CSRF-Token": csrf } }).finally(
          () => window.location.assign(API + "/signin?next=" + encodeURIComponent("/recruit")),
        );
        return;
      }
    }
    renderAuth();
    if (message) {
      showMessage(message, "error", "signed-out");
      ui.signinLink.focus();
    }
  }

  // --- API ----------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function errorOf(res) {
    let body = null;
    try {
      body = await res.json();
    } catch {
      body = null;
    }
    const err = (body && body.error) || {};
    return new ApiError(res.status, err.code || `http_${res.status}`, err.message || res.statusText);
  }

  async function api(method, path, body) {
    const headers = { ...authHeaders(), Accept: "application/json" };
    const init = { method, headers, cache: "no-store" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await fetch(API + path, init);
    if (!res.ok) {
      throw await errorOf(res);
    }
    return res.status === 204 ? null : res.json();
  }

  /** Auth and access errors end the view; returns true when it handled ``err``. */
  function handleAccessError(v, err) {
    if (!(err instanceof ApiError)) {
      return false;
    }
    if (err.status === 401) {
      signOut("Your session has ended. Sign in again.");
      return true;
    }
    if (err.status === 403 || err.status === 404 || err.status === 400 || err.status === 422) {
      closeView();
      ui.resultsPanel.hidden = true;
      const text =
        err.status === 403
          ? "Your role in this organisation does not search people (ask an admin for the recruiter role)."
          : "Search not found. It may belong to another recruiter, or the link is incomplete.";
      showMessage(text, "error", "search-not-found");
      return true;
    }
    return false;
  }

  // --- rendering ----------------------------------------------------------------------------

  function renderResult(r) {
    const c = r.candidate || {};
    const status = r.status || "succeeded";
    // A tombstone (the person asked to be forgotten) keeps its rank and nothing else.
    const name = status === "forgotten" ? "Removed at this person's request" : c.fullName || "Unnamed candidate";
    const profile = safeHttpUrl(c.profileUrl);
    const facts = [c.roleTitle, c.location];
    if (Number.isInteger(c.yearsExperience)) {
      facts.push(plural(c.yearsExperience, "year", "years"));
    }
    const skills = Array.isArray(c.skills) ? c.skills.slice(0, 10) : [];
    const score = Number(r.score);
    const scoreText =
      Number.isFinite(score) && score >= 0 && score <= 1
        ? `${Math.round(score * 100)}% match`
        : `score ${Number.isFinite(score) ? score.toFixed(2) : "–"}`;

    return h(
      "li",
      {
        class: "result is-new",
        "data-rank": r.rank,
        "data-candidate-id": c.id || "",
        "data-status": status,
        "data-tier": r.tier || "",
      },
      h("div", { class: "rank" }, h("span", { class: "visually-hidden" }, "Rank "), String(r.rank)),
      h(
        "div",
        { class: "who" },
        h(
          "h3",
          {},
          profile
            ? h("a", { href: profile, target: "_blank", rel: "noopener noreferrer" }, name)
            : name,
        ),
        c.headline ? h("p", { class: "headline" }, c.headline) : null,
        h("p", { class: "person-facts" }, facts.filter(Boolean).join(" · ")),
        skills.length ? h("ul", { class: "chips", "aria-label": "Skills" }, ...skills.map((s) => h("li", {}, s))) : null,
        r.why && r.why.summary ? h("p", { class: "why" }, h("span", { class: "why-label" }, "Why: "), r.why.summary) : null,
        renderConstraints(r.why),
        r.why && r.why.contact && !c.email ? h("p", { class: "contact-note" }, r.why.contact) : null,
        c.id ? markForm(c.id, name, r.mark) : null,
      ),
      h(
        "div",
        { class: "aside" },
        h("span", { class: `pill pill-${status}` }, STATUS_LABEL[status] || status),
        h(
          "span",
          {
            class: "score",
            title: `Probability of fitting the whole brief ${Number.isFinite(score) ? score.toFixed(3) : ""}`,
          },
          scoreText,
        ),
        r.tier ? h("span", { class: "tier" }, r.tier === "internal" ? "corpus" : `${r.tier} tier`) : null,
        c.email ? h("a", { class: "contact", href: `mailto:${c.email}` }, c.email) : null,
      ),
    );
  }

  /** Each constraint of the brief with its outcome (met ✓ / unknown ~ / not met ✗), its detail
   * as a tooltip; skills carry their own per-skill marks in the label. */
  function renderConstraints(why) {
    const list = why && Array.isArray(why.constraints) ? why.constraints : [];
    if (!list.length) return null;
    const MARK = { met: "✓", unknown: "~", not_met: "✗" };
    return h(
      "ul",
      { class: "constraints", "aria-label": "The brief's constraints" },
      ...list.map((k) =>
        h(
          "li",
          { class: `constraint outcome-${k.outcome}`, title: k.detail || "", "data-kind": k.kind },
          k.kind === "skills" ? `skills: ${k.label}` : `${k.kind}: ${k.label} ${MARK[k.outcome] || ""}`,
        ),
      ),
    );
  }

  /** The recruiter's own mark on a person: status and note, saved with PUT …/mark. */
  function markForm(candidateId, name, mark) {
    const current = (mark && mark.status) || "";
    const select = h(
      "select",
      { name: "status", "aria-label": `Mark ${name}` },
      ...Object.entries(MARK_LABEL).map(([value, label]) =>
        h("option", value === current ? { value, selected: "" } : { value }, label),
      ),
    );
    const note = h("input", {
      name: "note",
      type: "text",
      maxlength: "2000",
      placeholder: "Note",
      "aria-label": `Note on ${name}`,
      value: (mark && mark.note) || "",
    });
    // Who of the team marked the person last (a team shares its marks).
    const by = mark && mark.by ? ` by ${mark.by}` : "";
    const said = h("span", { class: "mark-state", role: "status" }, current ? MARK_LABEL[current] + by : "");
    const form = h(
      "form",
      { class: "mark-form", "data-mark": current },
      select,
      note,
      h("button", { type: "submit", class: "btn btn-secondary btn-small" }, "Save mark"),
      said,
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      saveMark(form, candidateId, select, note, said);
    });
    return form;
  }

  async function saveMark(form, candidateId, select, note, said) {
    if (!select.value) {
      said.textContent = "Choose a mark first.";
      return;
    }
    try {
      const saved = await api("PUT", `/api/candidates/${encodeURIComponent(candidateId)}/mark`, {
        status: select.value,
        note: note.value,
      });
      form.dataset.mark = saved.status;
      said.textContent = `Saved: ${MARK_LABEL[saved.status]}`;
    } catch (err) {
      said.textContent = err instanceof ApiError ? err.message : "Network error; try again.";
    }
  }

  function setHidden(v, n) {
    const count = Number.isInteger(n) ? n : 0;
    ui.hiddenInfo.hidden = count === 0;
    ui.hiddenCount.textContent = plural(count, "person", "people");
  }

  async function showHidden() {
    const v = view;
    if (!v) {
      return;
    }
    try {
      const data = await api("GET", `/api/searches/${encodeURIComponent(v.id)}/hidden`);
      ui.hiddenList.replaceChildren(
        ...data.hidden.map((x) =>
          h(
            "li",
            { "data-candidate-id": x.candidate.id },
            h("strong", {}, x.candidate.fullName),
            ` · ${x.candidate.roleTitle || ""} · ${x.mark ? MARK_LABEL[x.mark.status] : ""}`,
            x.mark && x.mark.note ? ` – ${x.mark.note}` : "",
          ),
        ),
      );
      ui.hiddenList.hidden = false;
      ui.showHidden.setAttribute("aria-expanded", "true");
    } catch (err) {
      handleAccessError(v, err);
    }
  }

  /** The CSV needs the token in a header: fetched, then saved from a blob. */
  async function exportCsv() {
    const v = view;
    if (!v) {
      return;
    }
    ui.exportError.textContent = "";
    try {
      const res = await fetch(`${API}/api/searches/${encodeURIComponent(v.id)}/results.csv`, {
        headers: authHeaders(),
        cache: "no-store",
      });
      if (!res.ok) {
        throw await errorOf(res);
      }
      const url = URL.createObjectURL(await res.blob());
      const link = h("a", { href: url, download: `shortlist-${v.id}.csv`, hidden: "" });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (err) {
      ui.exportError.textContent = err instanceof ApiError ? err.message : "Download failed; try again.";
    }
  }

  // --- the search's alert: new people who fit, reported after it was saved -----------------

  async function loadAlert(v) {
    try {
      const data = await api("GET", `/api/searches/${encodeURIComponent(v.id)}/alert`);
      if (!v.closed && view === v) {
        renderAlert(data);
      }
    } catch {
      // errors of access are reported by the results themselves
      ui.alertBox.hidden = true;
    }
  }

  function renderAlert(data) {
    const alert = data.alert;
    const on = Boolean(alert) && alert.status === "active";
    ui.alertBox.hidden = false;
    ui.alertBox.dataset.alert = on ? "active" : alert ? alert.status : "none";
    ui.alertError.textContent = "";
    ui.alertSave.hidden = on;
    if (!on) {
      ui.alertState.textContent =
        "People who join the corpus later and fit this search can be reported to you by e-mail, and to your organisation's webhooks.";
    } else if (alert.matchCount) {
      const since = new Date(alert.createdAt).toLocaleDateString();
      ui.alertState.textContent = `${plural(alert.matchCount, "new person fits", "new people fit")} this search since the alert was saved (${since}).`;
    } else {
      ui.alertState.textContent = "Alert on: new people who fit this search will be listed here and e-mailed to you.";
    }
    ui.alertMatches.replaceChildren(
      ...data.matches.map((m) =>
        h(
          "li",
          { "data-candidate-id": m.candidate.id },
          h("strong", {}, m.candidate.fullName),
          m.candidate.title ? ` · ${m.candidate.title}` : "",
          m.candidate.location ? ` · ${m.candidate.location}` : "",
          ` · ${Math.round(m.score * 100)}% fit`,
        ),
      ),
    );
  }

  async function saveAlert() {
    const v = view;
    if (!v) {
      return;
    }
    ui.alertSave.disabled = true;
    ui.alertError.textContent = "";
    try {
      await api("POST", `/api/searches/${encodeURIComponent(v.id)}/alert`);
      await loadAlert(v);
    } catch (err) {
      ui.alertError.textContent = err instanceof ApiError ? err.message : "The alert was not saved; try again.";
    } finally {
      ui.alertSave.disabled = false;
    }
  }

  /** Append one row if it is the next rank; rows already shown are never touched. */
  function appendResult(v, r) {
    const rank = Number(r && r.rank);
    if (!Number.isInteger(rank) || rank <= v.lastRank) {
      return true; // already shown (or junk): ignore, never move
    }
    if (rank !== v.lastRank + 1) {
      return false; // a gap: wait for the missing rank instead of showing rows out of order
    }
    ui.results.append(renderResult(r));
    v.lastRank = rank;
    root.dataset.lastRank = String(rank);
    ui.empty.hidden = true;
    return true;
  }

  function appendResults(v, rows) {
    const sorted = [...(rows || [])].sort((a, b) => a.rank - b.rank);
    for (const r of sorted) {
      if (!appendResult(v, r)) {
        return false;
      }
    }
    return true;
  }

  function setCount(v, n) {
    const count = Number.isInteger(n) ? Math.max(n, v.lastRank) : v.lastRank;
    if (count === v.count) {
      return;
    }
    v.count = count;
    ui.count.dataset.count = String(count);
    ui.count.replaceChildren(h("strong", {}, String(count)), count === 1 ? " candidate" : " candidates");
  }

  function setStatus(v, status) {
    if (!status || status === v.status) {
      return;
    }
    v.status = status;
    const [label, cls] = SEARCH_STATE[status] || [status, "badge-unknown"];
    ui.state.textContent = label;
    ui.state.className = `badge ${cls}`;
    ui.state.dataset.state = status;
    root.dataset.state = status;
    ui.staleBox.hidden = status !== "stale";
    if (status === "stale") {
      ui.staleTitle.textContent = "This search stalled.";
      ui.staleText.textContent = "No progress for a while. You can resume it; rows already shown stay where they are.";
    }
    if (status === "complete" || status === "stale") {
      describeSearch(v);
    }
    if (v.lastRank === 0) {
      ui.empty.textContent =
        status === "complete"
          ? "No candidates matched this search."
          : status === "stale"
            ? "No candidates found yet."
            : "Waiting for the first candidates…";
    }
  }

  function setCounts(v, counts) {
    if (!counts || typeof counts !== "object") {
      return;
    }
    v.counts = counts;
    const items = STATUS_ORDER.filter((s) => counts[s] > 0).map((s) =>
      h("li", { class: `pill pill-${s}`, "data-status": s }, `${counts[s]} ${STATUS_LABEL[s].toLowerCase()}`),
    );
    ui.statusCounts.replaceChildren(...items);
  }

  function attemptRetryButton(v, a) {
    const button = h("button", { type: "button", class: "btn btn-secondary btn-small retry" }, "Retry");
    button.setAttribute("aria-label", `Retry ${a.displayName || a.externalId || "candidate"}`);
    button.addEventListener("click", () => retryCandidate(v, String(a.candidateId), button));
    return button;
  }

  /** Insert or update one in-flight/failed candidate; succeeded ones leave the list. */
  function upsertAttempt(v, a) {
    if (!a || a.candidateId === undefined || a.candidateId === null) {
      return;
    }
    const id = String(a.candidateId);
    let li = v.attempts.get(id);
    if (a.status === "succeeded") {
      if (li) {
        li.remove();
        v.attempts.delete(id);
      }
      renderPipeline(v);
      return;
    }
    if (!li) {
      li = h(
        "li",
        { class: "attempt", "data-candidate-id": id },
        h("span", { class: "who" }),
        h("p", { class: "why" }),
        h("div", { class: "actions" }, h("span", { class: "pill" }), h("span", { class: "inline-error", role: "alert" })),
      );
      v.attempts.set(id, li);
      ui.attempts.append(li);
    }
    li.dataset.status = a.status;
    if (a.externalId) {
      li.dataset.externalId = a.externalId;
    }
    const name = a.displayName || a.externalId || `Candidate ${id}`;
    li.querySelector(".who").textContent = name;
    const why = [a.tier ? `${a.tier} tier` : "", FAILED.has(a.status) && a.lastError ? a.lastError : ""];
    li.querySelector(".why").textContent = why.filter(Boolean).join(" · ");
    const pill = li.querySelector(".pill");
    pill.className = `pill pill-${a.status}`;
    pill.textContent = STATUS_LABEL[a.status] || a.status;
    const actions = li.querySelector(".actions");
    const existing = actions.querySelector("button.retry");
    if (FAILED.has(a.status) && !existing) {
      actions.append(attemptRetryButton(v, a));
    } else if (!FAILED.has(a.status) && existing) {
      existing.remove();
    }
    renderPipeline(v);
  }

  function syncAttempts(v, list) {
    const keep = new Set(list.map((a) => String(a.candidateId)));
    for (const [id, li] of v.attempts) {
      if (!keep.has(id)) {
        li.remove();
        v.attempts.delete(id);
      }
    }
    for (const a of list) {
      upsertAttempt(v, a);
    }
    renderPipeline(v);
  }

  function renderPipeline(v) {
    ui.pipeline.hidden = v.attempts.size === 0;
  }

  /** One /api/results answer (the initial load and every poll). */
  function applySnapshot(v, data) {
    const complete = appendResults(v, data.results);
    setCount(v, data.resultCount);
    setStatus(v, data.status);
    setCounts(v, data.candidates);
    setHidden(v, data.hiddenCount);
    if (Array.isArray(data.attempts)) {
      syncAttempts(v, data.attempts);
    }
    return complete;
  }

  function busy(v) {
    const c = v.counts || {};
    return (c.queued || 0) + (c.running || 0) > 0;
  }

  /** Nothing more will arrive until someone retries: stop following. */
  function finished(v) {
    return v.status === "stale" || (v.status === "complete" && !busy(v));
  }

  // --- following a search -------------------------------------------------------------------

  function closeView() {
    if (!view) {
      return;
    }
    view.closed = true;
    clearTimeout(view.timer);
    if (view.abort) {
      view.abort.abort();
    }
    view = null;
    root.dataset.mode = "";
  }

  function openSearch(id, { focus = false } = {}) {
    closeView();
    showMessage("");
    const v = {
      id,
      lastRank: 0,
      count: -1,
      status: null,
      counts: {},
      attempts: new Map(),
      timer: null,
      abort: null,
      mode: null,
      sseFailed: false,
      closed: false,
    };
    view = v;
    root.dataset.searchId = id;
    root.dataset.lastRank = "0";
    root.dataset.state = "";
    ui.results.replaceChildren();
    ui.attempts.replaceChildren();
    ui.hiddenList.replaceChildren();
    ui.hiddenList.hidden = true;
    ui.hiddenInfo.hidden = true;
    ui.showHidden.setAttribute("aria-expanded", "false");
    ui.alertBox.hidden = true;
    ui.alertMatches.replaceChildren();
    ui.statusCounts.replaceChildren();
    ui.empty.hidden = false;
    ui.empty.textContent = "Waiting for the first candidates…";
    ui.pipeline.hidden = true;
    ui.staleBox.hidden = true;
    ui.state.textContent = "Loading";
    ui.state.className = "badge badge-unknown";
    const query = sessionStorage.getItem(QUERY_KEY + id);
    ui.searchQuery.textContent = query ? `“${query}”` : "";
    if (!query) {
      describeSearch(v);
    }
    setCount(v, 0);
    ui.resultsPanel.hidden = false;
    if (focus) {
      ui.resultsTitle.setAttribute("tabindex", "-1");
      ui.resultsTitle.focus();
    }

    loadAlert(v);
    // The stream (or the first poll) brings every row so far, then what follows.
    follow(v, 0);
  }

  /** The brief of a search opened from a link (best effort: the rows do not depend on it). */
  async function describeSearch(v) {
    try {
      const s = await api("GET", `/api/searches/${encodeURIComponent(v.id)}`);
      if (!v.closed && view === v) {
        const text = describe({
          query: s.query,
          role: s.role || undefined,
          location: s.location || undefined,
          min_years_experience: s.minYearsExperience ?? undefined,
          skills: s.skills && s.skills.length ? s.skills : undefined,
        });
        sessionStorage.setItem(QUERY_KEY + v.id, text);
        ui.searchQuery.textContent = `“${text}”`;
        renderSummary(v, s);
      }
    } catch {
      // errors of access are reported by the results themselves
    }
  }

  /** The brief as understood, each tier's state and error, credits and budget: nothing hidden. */
  function renderSummary(v, s) {
    const brief = s.brief || {};
    const briefText = [
      brief.role ? `role: ${brief.role}` : "",
      brief.location ? `location: ${brief.location}` : "",
      brief.minYearsExperience != null ? `${brief.minYearsExperience}+ years` : "",
      brief.skills && brief.skills.length ? `skills: ${brief.skills.join(", ")}` : "",
    ].filter(Boolean);
    const tiers = (s.tiers || []).map((t) =>
      h(
        "li",
        { class: `tier-state tier-${t.status}`, "data-tier": t.tier, "data-status": t.status },
        `${t.tier}: ${t.status.replace("_", " ")} (${t.calls || 0} calls)`,
        t.lastError ? h("span", { class: "inline-error" }, ` – ${t.lastError}`) : null,
      ),
    );
    const credits = s.credits || { total: 0, byProvider: {} };
    const byProvider = Object.entries(credits.byProvider || {})
      .map(([p, n]) => `${p} ${n}`)
      .join(", ");
    const budget = s.budget || {};
    const parts = [
      briefText.length ? h("p", { "data-part": "brief" }, `Understood as ${briefText.join(" · ")}`) : null,
      h("ul", { class: "tiers", "aria-label": "Discovery tiers" }, ...tiers),
      h(
        "p",
        { "data-part": "credits" },
        `Credits spent: ${credits.total}${byProvider ? ` (${byProvider})` : ""}; enrichments: ${s.enrichments || 0}`,
        budget.credits != null ? `; budget ${budget.credits}${budget.reached ? " – reached, backfill stopped" : ""}` : "",
      ),
    ];
    ui.summary.replaceChildren(...parts.filter(Boolean));
    ui.summary.hidden = false;
    const failed = (s.tiers || []).filter((t) => TIER_FAILED.has(t.status));
    if (s.status === "complete" && failed.length) {
      // A search whose providers failed says so, and can be run again.
      ui.staleTitle.textContent = "Some sources failed.";
      ui.staleText.textContent = failed
        .map((t) => `${t.tier}: ${t.status === "quota_exhausted" ? "provider out of credit" : "failed"}`)
        .join("; ");
      ui.staleBox.hidden = false;
      if (v.lastRank === 0) {
        ui.empty.textContent = "No candidates: the external sources failed (see above). Retry the search.";
      }
    } else if (s.status === "complete" && v.lastRank === 0 && budget.reached) {
      ui.empty.textContent = "No candidates before the credit budget was spent.";
    }
  }

  function resultsPath(v) {
    return `/api/results?searchId=${encodeURIComponent(v.id)}&after=${v.lastRank}`;
  }

  function streamingSupported() {
    return (
      typeof ReadableStream !== "undefined" &&
      typeof TextDecoderStream !== "undefined" &&
      typeof AbortController !== "undefined"
    );
  }

  function wantSse(v) {
    if (TRANSPORT === "poll" || !streamingSupported()) {
      return false;
    }
    return TRANSPORT === "sse" || !v.sseFailed;
  }

  /** Follow ``v`` until it is finished: SSE when available, else polling. */
  async function follow(v, pollDelay) {
    if (v.closed || v.mode) {
      return;
    }
    if (wantSse(v)) {
      v.mode = "sse";
      const outcome = await streamEvents(v);
      v.mode = null;
      if (v.closed || outcome === "done") {
        if (!v.closed) {
          setTransportInfo(v, "", "");
        }
        return;
      }
      v.sseFailed = true; // the stream broke: poll for the rest of this search
    }
    startPolling(v, pollDelay);
  }

  /** After a retry: pick the search up again, at once. */
  function resume(v) {
    if (v.closed) {
      return;
    }
    if (v.mode === "poll") {
      clearTimeout(v.timer);
      v.timer = setTimeout(() => pollOnce(v), 0);
    } else if (!v.mode) {
      follow(v, 0);
    }
    // mode "sse": the open stream reports the change itself
  }

  function startPolling(v, delay) {
    v.mode = "poll";
    setTransportInfo(v, "poll", "");
    clearTimeout(v.timer);
    v.timer = setTimeout(() => pollOnce(v), delay);
  }

  async function pollOnce(v) {
    if (v.closed) {
      return;
    }
    let data;
    try {
      data = await api("GET", resultsPath(v));
    } catch (err) {
      if (v.closed || handleAccessError(v, err)) {
        return;
      }
      setTransportInfo(v, "poll", "connection problem, retrying");
      v.timer = setTimeout(() => pollOnce(v), POLL_MS);
      return;
    }
    if (v.closed) {
      return;
    }
    setTransportInfo(v, "poll", "");
    const before = v.lastRank;
    applySnapshot(v, data);
    if (finished(v) && v.lastRank >= v.count) {
      v.mode = null;
      setTransportInfo(v, "", "");
      return;
    }
    // More rows than one page: fetch the rest at once rather than on the next tick.
    const behind = v.lastRank > before && v.lastRank < v.count;
    v.timer = setTimeout(() => pollOnce(v), behind ? 0 : POLL_MS);
  }

  function parseFrame(frame) {
    let event = "message";
    const data = [];
    for (const line of frame.split("\n")) {
      if (!line || line.startsWith(":")) {
        continue; // comments are heartbeats
      }
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) {
        value = value.slice(1);
      }
      if (field === "event") {
        event = value;
      } else if (field === "data") {
        data.push(value);
      }
    }
    return data.length ? { event, data: data.join("\n") } : null;
  }

  /** Returns "continue", "done" (complete/stale) or "broken". */
  function handleEvent(v, ev) {
    let body;
    try {
      body = JSON.parse(ev.data);
    } catch {
      return "broken";
    }
    switch (ev.event) {
      case "result":
        return appendResult(v, body) ? "continue" : "broken";
      case "status":
        setCount(v, body.resultCount);
        setStatus(v, body.status);
        setCounts(v, body.candidates);
        setHidden(v, body.hiddenCount);
        return body.status === "stale" ? "done" : "continue";
      case "candidate":
        upsertAttempt(v, body);
        return "continue";
      case "complete":
        setCount(v, body.resultCount);
        setStatus(v, body.status || "complete");
        if (body.candidates) {
          setCounts(v, body.candidates);
        }
        return "done";
      default:
        return "continue";
    }
  }

  /** Follow over SSE (fetch streaming, token in the header). "done" | "failed" | "closed". */
  async function streamEvents(v) {
    const ctrl = new AbortController();
    v.abort = ctrl;
    const url = `${API}/api/searches/${encodeURIComponent(v.id)}/events?after=${v.lastRank}`;
    try {
      const res = await fetch(url, {
        headers: { ...authHeaders(), Accept: "text/event-stream" },
        cache: "no-store",
        signal: ctrl.signal,
      });
      if (!res.ok || !res.body) {
        if (res.status === 401 || res.status === 403 || res.status === 404) {
          handleAccessError(v, await errorOf(res));
          return "closed";
        }
        return "failed";
      }
      setTransportInfo(v, "sse", "");
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) {
          return v.closed ? "closed" : "failed"; // ended without "complete"
        }
        buffer += value.replace(/\r\n?/g, "\n");
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const frame = parseFrame(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          if (!frame) {
            continue;
          }
          const outcome = handleEvent(v, frame);
          if (outcome !== "continue") {
            ctrl.abort();
            return outcome === "done" ? "done" : "failed";
          }
        }
      }
    } catch {
      return v.closed ? "closed" : "failed";
    } finally {
      if (v.abort === ctrl) {
        v.abort = null;
      }
    }
  }

  // --- actions ------------------------------------------------------------------------------

  async function retryCandidate(v, candidateId, button) {
    const li = button.closest("li");
    const error = li && li.querySelector(".inline-error");
    button.disabled = true;
    button.textContent = "Retrying…";
    if (error) {
      error.textContent = "";
    }
    try {
      await api(
        "POST",
        `/api/searches/${encodeURIComponent(v.id)}/candidates/${encodeURIComponent(candidateId)}/retry`,
      );
    } catch (err) {
      if (handleAccessError(v, err)) {
        return;
      }
      button.disabled = false;
      button.textContent = "Retry";
      if (error) {
        error.textContent = err instanceof ApiError ? err.message : "Network error; try again.";
      }
      return;
    }
    if (v.closed) {
      return;
    }
    // Shown as queued until the next update says otherwise; keep following until it settles.
    const known = li ? li.dataset.status : "";
    upsertAttempt(v, { candidateId, status: "queued", displayName: li && li.querySelector(".who").textContent });
    if (known && v.counts[known] > 0) {
      const counts = { ...v.counts, [known]: v.counts[known] - 1, queued: (v.counts.queued || 0) + 1 };
      setCounts(v, counts);
    }
    resume(v);
  }

  async function retrySearch() {
    const v = view;
    if (!v) {
      return;
    }
    ui.retrySearch.disabled = true;
    ui.retrySearchError.textContent = "";
    try {
      await api("POST", `/api/searches/${encodeURIComponent(v.id)}/retry`);
    } catch (err) {
      ui.retrySearch.disabled = false;
      if (!handleAccessError(v, err)) {
        ui.retrySearchError.textContent = err instanceof ApiError ? err.message : "Network error; try again.";
      }
      return;
    }
    ui.retrySearch.disabled = false;
    if (v.closed) {
      return;
    }
    setStatus(v, "running");
    resume(v);
  }

  function searchBody(form) {
    const data = new FormData(form);
    const body = { query: String(data.get("query") || "").trim() };
    const role = String(data.get("role") || "").trim();
    const location = String(data.get("location") || "").trim();
    const years = String(data.get("min_years_experience") || "").trim();
    const skills = String(data.get("skills") || "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    if (role) body.role = role;
    if (location) body.location = location;
    if (years) body.min_years_experience = Number(years);
    if (skills.length) body.skills = skills;
    return body;
  }

  function describe(body) {
    const parts = [body.query];
    if (body.role) parts.push(body.role);
    if (body.location) parts.push(body.location);
    if (body.min_years_experience !== undefined) parts.push(`${body.min_years_experience}+ years`);
    if (body.skills) parts.push(body.skills.join(", "));
    return parts.join(" · ");
  }

  function urlFor(searchId) {
    const url = new URL(window.location.href);
    if (searchId) {
      url.searchParams.set("search", searchId);
    } else {
      url.searchParams.delete("search");
    }
    return url.pathname + url.search;
  }

  async function submitSearch(event) {
    event.preventDefault();
    ui.searchError.textContent = "";
    const body = searchBody(ui.searchForm);
    if (!body.query) {
      ui.searchError.textContent = "Describe who you are looking for.";
      $("s-query").focus();
      return;
    }
    if (body.min_years_experience !== undefined && !(Number.isInteger(body.min_years_experience) && body.min_years_experience >= 0)) {
      ui.searchError.textContent = "Minimum years must be a whole number of 0 or more.";
      $("s-years").focus();
      return;
    }
    ui.searchSubmit.disabled = true;
    let created;
    try {
      created = await api("POST", "/api/searches", body);
    } catch (err) {
      ui.searchSubmit.disabled = false;
      if (err instanceof ApiError && err.status === 401) {
        signOut("Your session has ended. Sign in again.");
      } else if (err instanceof ApiError && err.status === 403) {
        ui.searchError.textContent = "Your role in this organisation does not search people: it needs the recruiter role.";
      } else {
        ui.searchError.textContent = err instanceof ApiError ? err.message : "Network error; try again.";
      }
      return;
    }
    ui.searchSubmit.disabled = false;
    const id = String(created.searchId);
    sessionStorage.setItem(QUERY_KEY + id, describe(body));
    window.history.pushState({ search: id }, "", urlFor(id));
    openSearch(id, { focus: true });
    loadTeam();
  }

  /** The team's recent searches, each with who started it (a team sees its members'). */
  async function loadTeam() {
    if (!session) {
      return;
    }
    ui.teamOrg.textContent = session.org ? `Searches of ${session.org}, newest first.` : "";
    let data;
    try {
      data = await api("GET", "/api/searches?limit=20");
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        signOut("Your session has ended. Sign in again.");
      } else if (err instanceof ApiError && err.status === 403) {
        ui.teamPanel.hidden = true;
      } else {
        ui.teamError.textContent = err instanceof ApiError ? err.message : "Network error; try again.";
      }
      return;
    }
    ui.teamError.textContent = "";
    const current = (new URLSearchParams(window.location.search).get("search") || "").trim();
    ui.teamSearches.replaceChildren(
      ...data.searches.map((x) => {
        const label = [x.query, x.role, x.location].filter(Boolean).join(" · ");
        const state = (SEARCH_STATE[x.status] || [x.status])[0];
        return h(
          "li",
          { "data-search-id": x.searchId },
          h(
            "a",
            { href: `${API}/recruit?search=${encodeURIComponent(x.searchId)}`, "aria-current": x.searchId === current ? "page" : null },
            label,
          ),
          h(
            "span",
            { class: "team-meta" },
            ` started by ${x.startedBy || "someone"} · ${plural(x.resultCount, "candidate", "candidates")} · ${state}`,
          ),
        );
      }),
    );
    ui.teamEmpty.hidden = data.searches.length > 0;
  }

  function routeFromUrl() {
    const id = (new URLSearchParams(window.location.search).get("search") || "").trim();
    if (!token()) {
      return;
    }
    if (id && UUID.test(id.trim())) {
      if (!view || view.id !== id) {
        openSearch(id);
      }
    } else {
      closeView();
      ui.resultsPanel.hidden = true;
    }
  }

  ui.searchForm.addEventListener("submit", submitSearch);
  ui.signOut.addEventListener("click", () => signOut(""));
  ui.retrySearch.addEventListener("click", retrySearch);
  ui.showHidden.addEventListener("click", showHidden);
  ui.exportCsv.addEventListener("click", exportCsv);
  ui.alertSave.addEventListener("click", saveAlert);
  window.addEventListener("popstate", routeFromUrl);

  async function start() {
    try {
      const res = await fetch(API + "/api/me", { headers: { Accept: "application/json" }, cache: "no-store" });
      if (res.ok) {
        const me = await res.json();
        const org = (me.organisations || []).find((o) => o.id === me.current);
        session = { csrf: me.csrfToken, email: me.user.email, org: org ? org.name : "" };
      }
    } catch {
      session = null;
    }
    renderAuth();
    if (root.dataset.searchId && !token()) {
      showMessage("Sign in to open this search.", "", "sign-in-to-open");
    }
    routeFromUrl();
    loadTeam();
  }

  start();
})();
