// The daemon's JSON API, same origin. Every request that is not a GET says
// Content-Type: application/json, as the daemon requires of a write.

export class ApiError extends Error {
  constructor(status, code, detail) {
    super(`${code}: ${detail}`);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

function withQuery(path, params = {}) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === "") continue;
    for (const one of Array.isArray(value) ? value : [value]) query.append(name, String(one));
  }
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

async function request(method, path, body) {
  const init = { method, headers: { Accept: "application/json" }, credentials: "omit" };
  if (method !== "GET") {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body ?? {});
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, "unreachable", `the daemon did not answer (${err.message}); is it running?`);
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    throw new ApiError(response.status, data?.error ?? "http_error", data?.detail ?? response.statusText);
  }
  return data;
}

export const get = (path, params) => request("GET", withQuery(path, params));
export const post = (path, body, params) => request("POST", withQuery(path, params), body);
