// The planstack API as the web UI calls it. The API key lives in this tab's sessionStorage only and
// goes out as a bearer token on every call.

const KEY_SLOT = "planstack.api_key";
let unauthorized = () => {}; // what to do when the key is refused (the app shows the login again)

export function onUnauthorized(handler) {
  unauthorized = handler;
}

export function rememberKey(value) {
  sessionStorage.setItem(KEY_SLOT, value);
}

export function forgetKey() {
  sessionStorage.removeItem(KEY_SLOT);
}

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error && body.error.message) || "HTTP " + status);
    this.status = status;
    this.code = body && body.error ? body.error.code : null;
  }
}

export function key() {
  return sessionStorage.getItem(KEY_SLOT);
}

export async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + key() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (_) {
    data = null;
  }
  if (response.status === 401) {
    forgetKey();
    unauthorized();
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// Server-sent events over fetch (EventSource cannot send an Authorization header).
export async function follow(runId, after, onEvent, signal) {
  const headers = { Authorization: "Bearer " + key(), Accept: "text/event-stream" };
  if (after) headers["Last-Event-ID"] = String(after);
  const response = await fetch("/v1/runs/" + encodeURIComponent(runId) + "/events", { headers, signal });
  if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => null));
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let type = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) type = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) onEvent(type, JSON.parse(data.join("\n")));
    }
  }
}
