// Shared by the operator console and the customer chat: API calls, the live
// event stream (SSE read with fetch so the Authorization header goes along,
// resumed with Last-Event-ID), and the transcript with who wrote each message.
"use strict";

const session = { token: sessionStorage.getItem("amv-token") || "" };

const $ = (id) => document.getElementById(id);

function headers(json) {
  const h = {};
  if (session.token) h["Authorization"] = "Bearer " + session.token;
  if (json) h["Content-Type"] = "application/json";
  return h;
}

function takeTokenFromHash() {
  // A demo link may carry the token in the fragment (#token=…), which never reaches a server.
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get("token");
  if (token) {
    session.token = token;
    sessionStorage.setItem("amv-token", token);
    history.replaceState(null, "", location.pathname + location.search);
  }
  return params;
}

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw await errorOf(response);
  const type = response.headers.get("content-type") || "";
  return type.includes("json") ? response.json() : response.text();
}

// An Error for a failed response: the server's message and rejection code
// when the body is the API's error JSON, else the HTTP status.
async function errorOf(response) {
  let data = null;
  try {
    data = await response.json();
  } catch (_) {
    // not JSON (a proxy's error page, say): fall back to the status line
  }
  const message = (data && data.message) || "HTTP " + response.status + " " + response.statusText;
  return Object.assign(new Error(message), { code: data && data.code, status: response.status });
}

// Who the page's token belongs to. /api/me answers 401 for a token that matches
// no user (a wrong or expired link): that is "signed out, because the token
// is not valid", an expected state to show, not an error to pop up.
async function whoAmI() {
  try {
    return await api("GET", "../api/me");
  } catch (err) {
    if (err.status === 401) return { id: null, refused: err };
    throw err;
  }
}

function toast(text, isError) {
  const el = $("toast");
  el.textContent = text;
  el.className = "toast" + (isError ? " error" : "");
  el.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (el.hidden = true), isError ? 6000 : 3000);
}

function fail(err) {
  toast((err.code ? "[" + err.code + "] " : "") + err.message, true);
}

function threadPath(harnessKey, threadId) {
  return "../api/" + encodeURIComponent(harnessKey) + "/threads/" + encodeURIComponent(threadId);
}

// -- a thread's state, kept from a snapshot and then from its events -------
function threadFromSnapshot(snap) {
  return {
    messages: snap.messages,
    waits: snap.pendingWaits,
    activeAgent: snap.activeAgent,
    lastEventId: snap.lastEventId,
  };
}

// Folds one event into the thread; returns "render", "refresh" (ask for a
// snapshot: who has the thread after a wait closed) or null (nothing shown changed).
function applyEvent(thread, event) {
  const value = event.value || {};
  switch (event.name) {
    case "message": {
      const message = value.message;
      if (!message) return null;
      const at = thread.messages.findIndex((m) => m.id === message.id);
      if (at >= 0) thread.messages[at] = message;
      else thread.messages.push(message);
      return "render";
    }
    case "harness.handoff":
      if (value.to === null || typeof value.to === "string") {
        thread.activeAgent = value.to === "main" ? null : value.to;
      }
      return "render";
    case "wait.opened":
      // A snapshot read after a wait closed may already hold this wait.
      if (thread.waits.some((w) => w.waitId === value.waitId)) return null;
      thread.waits.push({ waitId: value.waitId, kind: value.kind, message: value.message });
      return "render";
    case "wait.closed":
      thread.waits = thread.waits.filter((w) => w.waitId !== value.waitId);
      return "refresh";
    default:
      return null;
  }
}

// Follows a thread's events until the returned controller is aborted. A 4xx
// answer (no access, unknown thread) stops it with the rejection shown; a
// dropped stream or a 5xx is retried from the last event id, waiting 1 s, then
// twice as long after each failure in a row, up to 30 s.
function followEvents(path, thread, onEvent, setLive) {
  const controller = new AbortController();
  (async () => {
    let failures = 0;
    while (!controller.signal.aborted) {
      const h = headers(false);
      if (thread.lastEventId) h["Last-Event-ID"] = thread.lastEventId;
      try {
        const response = await fetch(path + "/events", { headers: h, signal: controller.signal });
        if (response.status >= 400 && response.status < 500) {
          fail(await errorOf(response));
          setLive(false);
          return;
        }
        if (response.ok) {
          failures = 0;
          setLive(true);
          await readEvents(response.body, controller.signal, (event, id) => {
            if (id) thread.lastEventId = id;
            onEvent(event);
          });
        }
      } catch (err) {
        if (controller.signal.aborted) return;
      }
      setLive(false);
      await new Promise((resolve) => setTimeout(resolve, Math.min(1000 * 2 ** failures, 30000)));
      failures += 1;
    }
  })();
  return controller;
}

async function readEvents(body, signal, dispatch) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let data = [];
  let id = null;
  while (!signal.aborted) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let cut;
    while ((cut = buffer.search(/\r\n|\n|\r/)) >= 0) {
      // A "\r" at the end of a chunk may be the first half of "\r\n": read on
      // before ending the line, or the "\n" would count as a blank line.
      if (cut === buffer.length - 1 && buffer[cut] === "\r") break;
      const line = buffer.slice(0, cut);
      buffer = buffer.slice(cut + (buffer.startsWith("\r\n", cut) ? 2 : 1));
      if (line === "") {
        if (data.length) dispatch(JSON.parse(data.join("\n")), id);
        data = [];
        id = null;
      } else if (line.startsWith("data:")) {
        data.push(line.slice(5).replace(/^ /, ""));
      } else if (line.startsWith("id:")) {
        id = line.slice(3).trim();
      }
    }
  }
}

// -- the transcript -----------------------------------------------------------
function author(m, mainName) {
  const h = (m.metadata && m.metadata.harness) || {};
  if (m.role === "system") return isNote(m) ? "Transfer note" : "System";
  if (h.transfer && m.role === "assistant") return "Moved with the case";
  if (m.role === "user") return h.operatorAttachment ? "Operator · files" : "User";
  if (h.operator) return "Operator · " + h.operator;
  if (m.agent) return m.agent;
  return mainName || "Support desk";
}

function isNote(m) {
  const h = (m.metadata && m.metadata.harness) || {};
  return m.role === "system" && h.kind === "note";
}

function textOf(m) {
  return m.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
}

function describeTarget(to) {
  if (to && typeof to === "object" && to.human) return "a person";
  if (to === null || to === undefined || to === "main") return "the main model";
  return to;
}

function renderTranscript(list, messages, options) {
  const opts = options || {};
  list.replaceChildren();
  for (const m of messages) {
    if (m.role === "tool" || (m.role === "system" && !isNote(m))) continue;
    for (const call of m.parts.filter((p) => p.type === "tool-call" && p.name === "handoff")) {
      const args = call.arguments || {};
      const li = document.createElement("li");
      li.className = "event";
      li.dataset.kind = "handoff";
      li.textContent =
        author(m, opts.mainName) + " handed off to " +
        describeTarget(args.human ? { human: true } : args.to) +
        (args.note && opts.showNotes ? " — " + args.note : "");
      list.appendChild(li);
    }
    const text = textOf(m);
    if (!text) continue;
    const h = (m.metadata && m.metadata.harness) || {};
    const li = document.createElement("li");
    const mine = opts.mine ? opts.mine(m) : m.role === "user";
    li.className =
      "msg " + m.role + (isNote(m) ? " note" : mine ? " mine" : " theirs") +
      (h.operator ? " operator" : "") + (m.agent ? " agent" : "");
    li.dataset.role = m.role;
    li.dataset.author = author(m, opts.mainName);
    const who = document.createElement("div");
    who.className = "who";
    who.textContent = author(m, opts.mainName);
    const body = document.createElement("div");
    body.className = "body";
    body.textContent = text;
    li.append(who, body);
    list.appendChild(li);
  }
  list.scrollTop = list.scrollHeight;
}

function setLiveChip(el, on) {
  el.textContent = on ? "live" : "reconnecting…";
  el.classList.toggle("on", on);
  el.classList.toggle("off", !on);
}
