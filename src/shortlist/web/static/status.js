// Status page: refreshes the report every few seconds, and, with an admin token kept in
// sessionStorage (sent as Authorization: Bearer, never in a URL), shows the admin view.
"use strict";

(function () {
  const auth = document.getElementById("status-auth");
  const body = document.getElementById("status-body");
  if (!auth || !body) {
    return;
  }
  const KEY = "shortlist.adminToken";
  const REFRESH_MS = Math.max(1000, Number.parseInt(auth.dataset.refreshMs, 10) || 10000);
  const label = document.getElementById("status-auth-label");
  const signOutButton = document.getElementById("admin-sign-out");
  const panel = document.getElementById("admin-panel");
  const form = document.getElementById("admin-form");
  const input = document.getElementById("admin-token");
  const error = document.getElementById("admin-error");
  let timer = null;

  function renderAuth() {
    const signedIn = Boolean(sessionStorage.getItem(KEY));
    label.textContent = signedIn ? "Admin view" : "Public view";
    signOutButton.hidden = !signedIn;
    panel.hidden = signedIn;
  }

  async function refresh() {
    clearTimeout(timer);
    const token = sessionStorage.getItem(KEY);
    const headers = { Accept: "text/html" };
    if (token) {
      headers.Authorization = `Bearer ${token}`;
    }
    try {
      const res = await fetch(`${window.location.pathname}?fragment=1`, { headers, cache: "no-store" });
      if (res.status === 401) {
        sessionStorage.removeItem(KEY);
        renderAuth();
        error.textContent = "That token was not accepted.";
        panel.open = true;
      } else if (res.ok || res.status === 503) {
        body.innerHTML = await res.text(); // rendered (and escaped) by the server's templates
        const meta = body.querySelector(".status-meta");
        if (token && meta && meta.dataset.admin !== "true") {
          sessionStorage.removeItem(KEY);
          renderAuth();
          error.textContent = "That token is not an admin token.";
          panel.open = true;
        }
      }
    } catch {
      // offline for a moment: keep the last report and try again later
    }
    timer = setTimeout(refresh, REFRESH_MS);
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const value = input.value.trim();
    if (!value) {
      error.textContent = "Paste an admin token.";
      input.focus();
      return;
    }
    sessionStorage.setItem(KEY, value);
    input.value = "";
    error.textContent = "";
    renderAuth();
    refresh();
  });
  signOutButton.addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    renderAuth();
    refresh();
  });
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") {
      refresh();
    } else {
      clearTimeout(timer);
    }
  });

  renderAuth();
  if (sessionStorage.getItem(KEY)) {
    refresh();
  } else {
    timer = setTimeout(refresh, REFRESH_MS);
  }
})();
