// "Alert me" on the job search page: the search's query and filters saved as a job alert
// (POST /api/alerts, JSON). Signed in, the request carries the session's CSRF token (from
// GET /api/me); the answer is announced in the form's status line (role="status"), and the
// API's messages are shown as plain text, never HTML.
"use strict";

(function () {
  const form = document.querySelector("[data-alert-form]");
  if (!form) return;
  const status = form.querySelector("[data-alert-status]");
  const button = form.querySelector("[data-alert-submit]");

  async function csrfToken() {
    try {
      const res = await fetch(form.action.replace(/\/api\/alerts$/, "/api/me"), {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      if (!res.ok) return "";
      const me = await res.json();
      return me.csrfToken || "";
    } catch (e) {
      return "";
    }
  }

  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    if (!form.reportValidity()) return;
    const data = new FormData(form);
    const body = {
      query: data.get("query"),
      email: data.get("email"),
      frequency: data.get("frequency"),
    };
    if (data.get("location")) body.location = data.get("location");
    // A daily or weekly digest goes at 08:00 where the browser is.
    try {
      const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
      if (zone) body.timezone = zone;
    } catch (e) {
      /* UTC */
    }
    if (data.get("work_mode")) body.work_mode = data.get("work_mode");
    const floor = parseInt(data.get("salary_min") || "", 10);
    if (!Number.isNaN(floor)) body.salary_min = floor;
    const headers = { "Content-Type": "application/json", Accept: "application/json" };
    const csrf = await csrfToken();
    if (csrf) headers["X-CSRF-Token"] = csrf;
    button.disabled = true;
    try {
      const res = await fetch(form.action, {
        method: "POST",
        headers,
        credentials: "same-origin",
        body: JSON.stringify(body),
      });
      let answer = null;
      try {
        answer = await res.json();
      } catch (e) {
        answer = null;
      }
      if (res.status === 202 && answer) {
        status.textContent =
          answer.status === "active"
            ? "Your alert is on: new jobs like these will be e-mailed to you."
            : "Almost done: follow the link we e-mailed you to start the alert.";
      } else {
        const msg = answer && answer.error && answer.error.message;
        status.textContent = "The alert was not saved: " + (msg || "please try again.");
      }
    } catch (e) {
      status.textContent = "The alert was not saved: the server could not be reached.";
    } finally {
      button.disabled = false;
    }
  });
})();
