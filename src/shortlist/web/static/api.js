// The JSON API as the pages call it (account.js, employer.js, alerts.js; loaded
// before them): same-origin with the session cookie, never cached, the session's CSRF token
// (X-CSRF-Token, from GET /api/me) on every change, and the API's error message as plain text.
"use strict";

window.shortlistApi = (function () {
  // A client of the API under apiRoot; csrf() gives the token to send (empty before /api/me).
  function client(apiRoot, csrf) {
    return async function api(method, path, body) {
      const headers = { Accept: "application/json" };
      if (body !== undefined) headers["Content-Type"] = "application/json";
      if (method !== "GET" && csrf()) headers["X-CSRF-Token"] = csrf();
      const res = await fetch(apiRoot + path, {
        method,
        headers,
        credentials: "same-origin",
        cache: "no-store",
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      let data = null;
      if (res.status !== 204) {
        try {
          data = await res.json();
        } catch (e) {
          data = null;
        }
      }
      return { ok: res.ok, status: res.status, data };
    };
  }

  // What to show for a failed answer: the API's own message, else its status.
  function errorText(answer) {
    const err = answer.data && answer.data.error;
    return err && err.message ? err.message : `The request failed (HTTP ${answer.status}).`;
  }

  return { client, errorText };
})();
