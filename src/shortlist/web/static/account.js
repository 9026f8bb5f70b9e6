// The account pages (/signin, /invitation, /signin/reset, /setup, /account, /org): forms sent
// as JSON to the API with the session cookie; every change carries the session's CSRF token
// (X-CSRF-Token, from GET /api/me). Errors are shown next to the form that caused them and
// announced (role="alert"); the API's messages are plain text, never HTML.
"use strict";

(function () {
  const page = document.querySelector(".account-page");
  if (!page) return;
  const API = page.dataset.apiRoot || "";
  let csrf = "";

  function message(text, kind) {
    const box = document.getElementById("page-message");
    if (!box) return;
    box.textContent = text;
    box.className = "notice" + (kind === "error" ? " notice-error" : "");
    box.hidden = !text;
  }

  const api = shortlistApi.client(API, () => csrf);
  const errorText = shortlistApi.errorText;

  function formData(form) {
    const out = {};
    for (const el of form.elements) {
      if (!el.name) continue;
      if (el.type === "checkbox") out[el.name] = el.checked;
      else if (el.type === "number") out[el.name] = el.value === "" ? undefined : Number(el.value);
      else if (el.value !== "") out[el.name] = el.value;
    }
    return out;
  }

  function onSubmit(id, errorId, handler) {
    const form = document.getElementById(id);
    if (!form) return;
    const error = document.getElementById(errorId);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (error) error.textContent = "";
      const button = form.querySelector("button[type=submit]");
      if (button) button.disabled = true;
      try {
        const problem = await handler(formData(form), form);
        if (problem && error) {
          error.textContent = problem;
          const first = form.querySelector("input, select");
          if (first) first.setAttribute("aria-invalid", "true");
        }
      } finally {
        if (button) button.disabled = false;
      }
    });
  }

  function cell(row, text) {
    const td = document.createElement("td");
    td.textContent = text == null ? "" : String(text);
    row.appendChild(td);
    return td;
  }

  /** A button in its own cell: the verb shown, ``label`` (the verb and its object) its name. */
  function actionCell(row, label, onClick) {
    const td = document.createElement("td");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "btn btn-secondary btn-small";
    button.textContent = label.split(" ")[0];
    button.setAttribute("aria-label", label);
    button.addEventListener("click", onClick);
    td.appendChild(button);
    row.appendChild(td);
  }

  function when(iso) {
    return iso ? new Date(iso).toLocaleString() : "never";
  }

  function goNext() {
    const next = page.dataset.next;
    window.location.assign(next && next.startsWith("/") && !next.startsWith("//") ? next : API + "/account");
  }

  async function loadMe() {
    const me = await api("GET", "/api/me");
    if (me.status === 401) {
      window.location.assign(API + "/signin?next=" + encodeURIComponent(window.location.pathname));
      return null;
    }
    csrf = me.data.csrfToken || "";
    return me.data;
  }

  // --- sign in ----------------------------------------------------------------------------

  if (page.dataset.page === "signin") {
    onSubmit("signin-form", "signin-error", async (data) => {
      const answer = await api("POST", "/api/session", data);
      if (answer.ok) return goNext();
      const err = answer.data && answer.data.error;
      if (answer.status === 401 && err && /second-factor/.test(err.message) && !data.otp) {
        const field = document.getElementById("otp-field");
        field.hidden = false;
        document.getElementById("otp").focus();
      }
      return errorText(answer);
    });
    onSubmit("reset-request-form", "reset-request-error", async (data) => {
      const answer = await api("POST", "/api/password/reset-request", data);
      if (!answer.ok) return errorText(answer);
      message("If the address has an account, a link to reset its password is on its way.");
      return "";
    });
  }

  // --- links with a token -----------------------------------------------------------------

  const tokenPages = {
    invitation: "/api/invitations/accept",
    reset: "/api/password/reset",
    setup: "/api/setup",
  };
  if (tokenPages[page.dataset.page]) {
    onSubmit("token-form", "form-error", async (data) => {
      const answer = await api("POST", tokenPages[page.dataset.page], {
        ...data,
        token: page.dataset.token,
      });
      if (!answer.ok) return errorText(answer);
      if (page.dataset.page === "reset") {
        message("Your password is changed. Sign in with it.");
        window.location.assign(API + "/signin");
        return "";
      }
      window.location.assign(API + "/account");
      return "";
    });
  }

  // --- sign out (on every page of a signed-in person) -------------------------------------

  const signOutButton = document.getElementById("sign-out");
  if (signOutButton) {
    signOutButton.addEventListener("click", async () => {
      await api("DELETE", "/api/session");
      window.location.assign(API + "/signin");
    });
  }

  // --- your account -----------------------------------------------------------------------

  async function showAccount() {
    const me = await loadMe();
    if (!me) return;
    const who = document.getElementById("who");
    who.textContent = `Signed in as ${me.user.name ? me.user.name + " — " : ""}${me.user.email}.`;
    const select = document.getElementById("organisation");
    select.replaceChildren();
    for (const org of me.organisations) {
      const option = document.createElement("option");
      option.value = String(org.id);
      option.textContent = `${org.name} (${org.role})`;
      option.selected = org.id === me.current;
      select.appendChild(option);
    }
    document.getElementById("totp-state").textContent = me.secondFactor
      ? "An authenticator app is required when you sign in with your password."
      : "Not set up: only your password is asked.";
    const sessions = await api("GET", "/api/me/sessions");
    const tbody = document.getElementById("sessions");
    tbody.replaceChildren();
    for (const s of (sessions.data && sessions.data.sessions) || []) {
      const row = document.createElement("tr");
      cell(row, when(s.createdAt) + (s.current ? " (this one)" : ""));
      cell(row, when(s.lastSeenAt));
      cell(row, s.method);
      cell(row, s.userAgent || s.clientIp || "");
      if (s.current) cell(row, "");
      else
        actionCell(row, `End the session signed in ${when(s.createdAt)}`, async () => {
          await api("DELETE", `/api/me/sessions/${s.id}`);
          showAccount();
        });
      tbody.appendChild(row);
    }
    await showAlerts();
    const keys = await api("GET", "/api/keys");
    const kbody = document.getElementById("keys");
    kbody.replaceChildren();
    for (const k of (keys.data && keys.data.keys) || []) {
      const row = document.createElement("tr");
      cell(row, k.name);
      cell(row, k.organisation);
      cell(row, k.role);
      cell(row, when(k.expiresAt));
      cell(row, k.state);
      if (k.state !== "active") cell(row, "");
      else
        actionCell(row, `Revoke ${k.name}`, async () => {
          await api("DELETE", `/api/keys/${k.id}`);
          showAccount();
        });
      kbody.appendChild(row);
    }
  }

  /** The search as a job seeker typed it: its words, then the filters it was saved with. */
  function searchText(a) {
    const parts = [a.query ? `“${a.query}”` : "any job"];
    if (a.location) parts.push(`in ${a.location}`);
    if (a.work_mode) parts.push(a.work_mode);
    if (a.salary_min != null) parts.push(`salary from ${a.salary_min}k${a.currency ? " " + a.currency : ""}`);
    if (a.remote_country) parts.push(`remote from ${a.remote_country}`);
    if (a.visa) parts.push("visa sponsored");
    return parts.join(", ");
  }

  async function showAlerts() {
    const answer = await api("GET", "/api/alerts");
    const tbody = document.getElementById("alerts");
    tbody.replaceChildren();
    const alerts = (answer.ok && answer.data && answer.data.alerts) || [];
    document.getElementById("alerts-empty").hidden = alerts.length > 0;
    for (const a of alerts) {
      const row = document.createElement("tr");
      const search = document.createElement("td");
      const link = document.createElement("a");
      const params = new URLSearchParams({ q: a.query || "" });
      if (a.location) params.set("location", a.location);
      if (a.work_mode) params.set("work_mode", a.work_mode);
      if (a.salary_min != null) params.set("salary_min", String(a.salary_min));
      if (a.currency) params.set("currency", a.currency);
      if (a.remote_country) params.set("remote_country", a.remote_country);
      if (a.visa) params.set("visa", a.visa);
      link.href = `${API}/?${params}`;
      link.textContent = searchText(a);
      search.appendChild(link);
      row.appendChild(search);
      cell(row, a.frequency);
      cell(row, a.webhook ? `${a.email} and your organisation's webhooks` : a.email);
      cell(row, a.status === "pending" && !a.emailConfirmed ? "waiting for the address to confirm" : a.status);
      cell(row, when(a.createdAt));
      actionCell(row, `Stop ${searchText(a)}`, async () => {
        const ended = await api("DELETE", `/api/alerts/${a.id}`);
        message(ended.ok ? `Stopped ${searchText(a)}.` : errorText(ended), ended.ok ? "" : "error");
        showAlerts();
      });
      tbody.appendChild(row);
    }
  }

  if (page.dataset.page === "account") {
    showAccount();
    onSubmit("switch-form", "", async (data) => {
      const answer = await api("POST", "/api/session/organisation", {
        organisation: Number(data.organisation),
      });
      if (!answer.ok) return message(errorText(answer), "error");
      window.location.reload();
      return "";
    });
    document.getElementById("sign-out-everywhere").addEventListener("click", async () => {
      await api("DELETE", "/api/session?everywhere=true");
      window.location.assign(API + "/signin");
    });
    onSubmit("key-form", "key-error", async (data) => {
      const answer = await api("POST", "/api/keys", data);
      if (!answer.ok) return errorText(answer);
      const box = document.getElementById("new-key");
      document.getElementById("new-key-value").value = answer.data.token;
      box.hidden = false;
      document.getElementById("new-key-value").focus();
      showAccount();
      return "";
    });
    document.getElementById("totp-start").addEventListener("click", async () => {
      const answer = await api("POST", "/api/me/totp");
      if (!answer.ok) return message(errorText(answer), "error");
      document.getElementById("totp-secret").value = answer.data.secret;
      document.getElementById("totp-uri").href = answer.data.uri;
      document.getElementById("totp-setup").hidden = false;
      document.getElementById("totp-code").focus();
      return null;
    });
    onSubmit("totp-form", "totp-error", async (data) => {
      const answer = await api("POST", "/api/me/totp/confirm", data);
      if (!answer.ok) return errorText(answer);
      document.getElementById("totp-setup").hidden = true;
      message("Second factor on: your other sessions were signed out.");
      showAccount();
      return "";
    });
  }

  // --- the organisation -------------------------------------------------------------------

  async function showOrg() {
    const me = await loadMe();
    if (!me) return;
    const org = await api("GET", "/api/org");
    if (!org.ok) return message(errorText(org), "error");
    const o = org.data;
    document.getElementById("org-name").textContent = o.name;
    document.getElementById("org-kind").textContent = `An organisation that ${
      { employer: "posts jobs", recruiting: "searches people", both: "posts jobs and searches people" }[o.kind]
    }.`;
    for (const el of document.querySelectorAll(".manager-only")) el.hidden = !o.manager;
    const tbody = document.getElementById("members");
    tbody.replaceChildren();
    for (const m of o.members) {
      const row = document.createElement("tr");
      cell(row, m.email || `${m.name} (service account)`);
      const roleCell = document.createElement("td");
      if (o.manager && !m.service) {
        const select = document.createElement("select");
        select.setAttribute("aria-label", `Role of ${m.email}`);
        for (const r of ["owner", "admin", "recruiter", "employer", "reviewer"]) {
          const option = document.createElement("option");
          option.value = r;
          option.textContent = r;
          option.selected = r === m.role;
          select.appendChild(option);
        }
        select.addEventListener("change", async () => {
          const answer = await api("PUT", `/api/org/members/${m.id}`, { role: select.value });
          message(answer.ok ? `${m.email} is now ${select.value}.` : errorText(answer), answer.ok ? "" : "error");
        });
        roleCell.appendChild(select);
      } else roleCell.textContent = m.role;
      row.appendChild(roleCell);
      if (o.manager && !m.service)
        actionCell(row, `Remove ${m.email}`, async () => {
          const answer = await api("DELETE", `/api/org/members/${m.id}`);
          if (!answer.ok) message(errorText(answer), "error");
          showOrg();
        });
      else cell(row, "");
      tbody.appendChild(row);
    }
    const ibody = document.getElementById("invitations");
    ibody.replaceChildren();
    for (const i of o.invitations) {
      const row = document.createElement("tr");
      cell(row, i.email);
      cell(row, i.role);
      cell(row, when(i.expiresAt));
      cell(row, i.state);
      if (i.state !== "open") cell(row, "");
      else
        actionCell(row, `Withdraw ${i.email}`, async () => {
          await api("DELETE", `/api/org/invitations/${i.id}`);
          showOrg();
        });
      ibody.appendChild(row);
    }
    const domains = document.getElementById("domains");
    domains.replaceChildren();
    for (const d of o.domains) {
      const li = document.createElement("li");
      li.textContent = `${d.domain} (joins as ${d.defaultRole}) `;
      const button = document.createElement("button");
      button.type = "button";
      button.className = "btn btn-secondary btn-small";
      button.textContent = `Remove ${d.domain}`;
      button.addEventListener("click", async () => {
        await api("DELETE", `/api/org/domains/${encodeURIComponent(d.domain)}`);
        showOrg();
      });
      li.appendChild(button);
      domains.appendChild(li);
    }
    document.getElementById("require-second-factor").checked = o.requireSecondFactor;
    return null;
  }

  if (page.dataset.page === "org") {
    showOrg();
    onSubmit("invite-form", "invite-error", async (data) => {
      const answer = await api("POST", "/api/org/invitations", data);
      if (!answer.ok) return errorText(answer);
      const box = document.getElementById("invite-link");
      box.hidden = !answer.data.url;
      document.getElementById("invite-link-value").value = answer.data.url || "";
      message(answer.data.sent ? `Invitation sent to ${data.email}.` : "");
      showOrg();
      return "";
    });
    onSubmit("domain-form", "domain-error", async (data) => {
      const answer = await api("POST", "/api/org/domains", data);
      if (!answer.ok) return errorText(answer);
      showOrg();
      return "";
    });
    onSubmit("second-factor-form", "", async (data) => {
      const answer = await api("PATCH", "/api/org", data);
      message(answer.ok ? "Saved." : errorText(answer), answer.ok ? "" : "error");
      return "";
    });
  }
})();
