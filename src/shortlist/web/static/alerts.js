// "Alert me" on the job search page: the search's query and filters saved as a job alert
// (POST /api/alerts) through the shared API client (api.js, loaded before this file: the
// session's CSRF token on the change, from GET /api/me when signed in). The answer is announced
// in the form's status line (role="status"); the API's messages are shown as plain text.
"use strict";

(function () {
  const form = document.querySelector("[data-alert-form]");
  if (!form) return;
  const status = form.querySelector("[data-alert-status]");
  const button = form.querySelector("[data-alert-submit]");
  let csrf = "";
  const api = shortlistApi.client(form.dataset.apiRoot || "", () => csrf);

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
    // The floor is in the currency the page showed salaries in; remote jobs open to a country,
    // visa sponsorship: the search's other filters a new job is held to.
    for (const name of ["currency", "remote_country", "visa"]) if (data.get(name)) body[name] = data.get(name);
    button.disabled = true;
    try {
      // Signed out, /api/me answers 401 and the save goes without a token (none is needed).
      const me = await api("GET", "/api/me");
      csrf = (me.ok && me.data && me.data.csrfToken) || "";
      const answer = await api("POST", "/api/alerts", body);
      if (answer.status === 202 && answer.data) {
        status.textContent =
          answer.data.status === "active"
            ? "Your alert is on: new jobs like these will be e-mailed to you."
            : answer.data.confirmationSent
              ? "Almost done: follow the link we e-mailed you to start the alert."
              : "Saved, but no confirmation e-mail could be sent (this board has no mail relay " +
                "working), so the alert cannot start yet. Signed in, an alert to your own " +
                "address starts at once.";
      } else {
        status.textContent = "The alert was not saved: " + shortlistApi.errorText(answer);
      }
    } catch (e) {
      status.textContent = "The alert was not saved: the server could not be reached.";
    } finally {
      button.disabled = false;
    }
  });
})();
