// The login form: the key is checked with one API call, then kept in this tab only.

import { api, forgetKey, rememberKey } from "./api.js";
import { h, show } from "./dom.js";

export function showLogin(onOpen, message) {
  const input = h("input", { type: "password", id: "api-key", autocomplete: "off", placeholder: "API key", required: true });
  const problem = h("p", { class: "error", id: "login-error" }, message || "");
  const form = h(
    "form",
    { class: "card login", id: "login-form" },
    h("h1", {}, "planstack"),
    h("p", { class: "muted" }, "The key is kept in this tab only (sessionStorage) and sent as a bearer token."),
    h("label", { for: "api-key" }, "API key"),
    input,
    h("button", { type: "submit", id: "login" }, "Open"),
    problem,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    rememberKey(input.value.trim());
    try {
      await api("GET", "/v1/runs?limit=1");
      onOpen();
    } catch (error) {
      forgetKey();
      showLogin(onOpen, error.status === 401 ? "That key was not accepted." : error.message);
    }
  });
  show(form);
  input.focus();
}
