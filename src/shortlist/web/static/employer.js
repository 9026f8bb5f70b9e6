// The employer page (/employer): the organisation's listings with their status, a form that
// posts a job (POST /api/jobs) or edits one (PATCH /api/jobs/{id}), closing a listing (DELETE),
// and the organisation's e-mail intake address (GET /api/intake, POST /api/intake/rotate). All
// on the session cookie; every change carries the session's CSRF token (from GET /api/me).
"use strict";

(function () {
  const root = document.getElementById("employer");
  if (!root) return;
  const API = root.dataset.apiRoot || "";
  const $ = (id) => document.getElementById(id);
  const form = $("job-form");
  const STATUS = { open: "Open", closed: "Closed" };
  const INDEXED = { pending: "Being indexed", embedded: "Yes", failed: "Indexing failed" };
  let csrf = "";
  let editing = null; // the id of the listing the form edits (null: a new one)
  let organisation = "";

  const api = shortlistApi.client(API, () => csrf);
  const errorText = shortlistApi.errorText;

  function message(text, kind) {
    const box = $("page-message");
    box.textContent = text;
    box.className = "notice" + (kind === "error" ? " notice-error" : "");
    box.hidden = !text;
  }

  function when(iso) {
    return iso ? new Date(iso).toLocaleDateString() : "";
  }

  function cell(row, ...children) {
    const td = document.createElement("td");
    for (const child of children) td.append(child);
    row.appendChild(td);
    return td;
  }

  function button(label, name, onClick) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "btn btn-secondary btn-small";
    b.textContent = label;
    b.setAttribute("aria-label", name);
    b.addEventListener("click", onClick);
    return b;
  }

  async function loadListings() {
    const answer = await api("GET", "/api/org/listings");
    if (!answer.ok) return message(errorText(answer), "error");
    const tbody = $("listings");
    tbody.replaceChildren();
    for (const l of answer.data.listings) {
      const row = document.createElement("tr");
      row.dataset.listingId = l.id;
      row.dataset.status = l.status;
      const link = document.createElement("a");
      link.href = `${API}/jobs/${encodeURIComponent(l.detailPageSlug)}`;
      link.textContent = l.jobTitle;
      cell(row, link, ` · ${l.cityLocation}`);
      cell(row, STATUS[l.status] || l.status);
      cell(row, l.status === "closed" ? "No (closed)" : INDEXED[l.embeddingStatus] || l.embeddingStatus);
      cell(row, `${when(l.createdAt)}${l.postedBy ? ` by ${l.postedBy}` : ""}${l.source === "email" ? " (by e-mail)" : ""}`);
      const actions = cell(row);
      const wrap = document.createElement("div");
      wrap.className = "row-actions";
      wrap.append(button("Edit", `Edit ${l.jobTitle}`, () => edit(l.id)));
      if (l.status === "open")
        wrap.append(
          button("Close", `Close ${l.jobTitle}`, async () => {
            const done = await api("DELETE", `/api/jobs/${encodeURIComponent(l.id)}`);
            message(done.ok ? `${l.jobTitle} is closed: it left job search.` : errorText(done), done.ok ? "" : "error");
            loadListings();
          }),
        );
      actions.append(wrap);
      tbody.appendChild(row);
    }
    $("listings-empty").hidden = answer.data.listings.length > 0;
    return null;
  }

  function formBody() {
    const out = {};
    for (const el of form.elements) {
      if (!el.name || el.readOnly) continue;
      if (el.type === "number") out[el.name] = el.value === "" ? null : Number(el.value);
      else if (el.name === "work_mode") out[el.name] = el.value || null;
      else out[el.name] = el.value;
    }
    if (!editing) {
      out.company_name = organisation;
      for (const key of Object.keys(out)) if (out[key] === null) delete out[key];
    }
    return out;
  }

  function resetForm() {
    editing = null;
    form.reset();
    $("job-company").value = organisation;
    $("job-form-title").textContent = "Post a job";
    $("job-submit").textContent = "Post the job";
    $("job-cancel").hidden = true;
  }

  async function edit(id) {
    const answer = await api("GET", `/api/jobs/${encodeURIComponent(id)}`);
    if (!answer.ok) return message(errorText(answer), "error");
    const l = answer.data;
    editing = id;
    $("job-company").value = l.company_name;
    $("job-title").value = l.job_title;
    $("job-city").value = l.city_location;
    $("job-work-mode").value = l.work_mode || "";
    $("job-currency").value = l.currency_code;
    $("job-salary-min").value = l.salary_min_ks == null ? "" : String(l.salary_min_ks);
    $("job-salary-max").value = l.salary_max_ks == null ? "" : String(l.salary_max_ks);
    $("job-description").value = l.description;
    $("job-form-title").textContent = `Edit ${l.job_title}`;
    $("job-submit").textContent = "Save changes";
    $("job-cancel").hidden = false;
    $("job-title").focus();
    return null;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const error = $("job-error");
    error.textContent = "";
    const submit = $("job-submit");
    submit.disabled = true;
    try {
      const answer = editing
        ? await api("PATCH", `/api/jobs/${encodeURIComponent(editing)}`, formBody())
        : await api("POST", "/api/jobs", formBody());
      if (!answer.ok) {
        error.textContent = errorText(answer);
        return;
      }
      message(editing ? `Saved: ${answer.data.job_title}.` : `Posted: ${answer.data.job_title}.`);
      resetForm();
      loadListings();
    } finally {
      submit.disabled = false;
    }
  });
  $("job-cancel").addEventListener("click", resetForm);

  async function loadIntake(rotate) {
    const answer = rotate ? await api("POST", "/api/intake/rotate") : await api("GET", "/api/intake");
    $("intake-error").textContent = answer.ok ? "" : errorText(answer);
    if (answer.ok) $("intake-address").value = answer.data.address;
    if (rotate && answer.ok) message("A new intake address is set: the old one takes no more mail.");
  }
  $("intake-rotate").addEventListener("click", () => loadIntake(true));
  $("sign-out").addEventListener("click", async () => {
    await api("DELETE", "/api/session");
    window.location.assign(API + "/signin");
  });

  async function start() {
    const me = await api("GET", "/api/me");
    if (me.status === 401) {
      window.location.assign(API + "/signin?next=" + encodeURIComponent("/employer"));
      return;
    }
    csrf = (me.data && me.data.csrfToken) || "";
    const org = me.data && (me.data.organisations || []).find((o) => o.id === me.data.current);
    organisation = org ? org.name : "";
    if (organisation) $("employer-org").textContent = `The jobs of ${organisation}: post and edit them, see where each stands, and post by e-mail.`;
    resetForm();
    await loadListings();
    await loadIntake(false);
  }

  start();
})();
