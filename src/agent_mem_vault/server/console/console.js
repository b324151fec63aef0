// Operator console: threads that wait for a person, a thread's transcript with
// who answered each message, operator replies, ending the pause, and moving a
// thread to another harness. Live through the thread's event stream.
"use strict";

const state = {
  harnesses: [],
  current: null, // {harness, threadId}
  thread: null, // see threadFromSnapshot in common.js
  stream: null,
};

async function signIn() {
  try {
    const me = await whoAmI();
    $("whoami").textContent = me.id ? "Signed in as " + me.id : "Not signed in";
    $("signin").hidden = !!me.id;
    $("signout").hidden = !me.id;
    // The sidebar shows once the harnesses are known: opening a thread needs one.
    $("sidebar").hidden = true;
    if (!me.id) {
      // Nothing here is shown to nobody: ask for a token first.
      $("empty-title").textContent = session.token ? "That token is not valid" : "Sign in";
      $("empty-text").textContent = "Enter your access token at the top right to see the threads you may answer.";
      if (session.token) sessionStorage.removeItem("amv-token");
      return;
    }
    $("empty-title").textContent = "No thread open";
    $("empty-text").textContent = "Pick a thread that waits for a person, or open one by its id.";
    state.harnesses = await api("GET", "../api/harnesses");
    fillHarnessSelects();
    $("sidebar").hidden = false;
    await refreshWaiting();
  } catch (err) {
    fail(err);
  }
}

function fillHarnessSelects() {
  for (const id of ["open-harness", "transfer-to"]) {
    const select = $(id);
    select.replaceChildren();
    for (const h of state.harnesses) {
      const option = document.createElement("option");
      option.value = h.key;
      option.textContent = h.name;
      select.appendChild(option);
    }
  }
}

// -- threads that wait for a person ------------------------------------------
async function refreshWaiting() {
  if (!session.token) return;
  const rows = [];
  for (const h of state.harnesses) {
    if (!h.allowHandoffToHuman) continue;
    try {
      rows.push(...(await api("GET", "../api/" + encodeURIComponent(h.key) + "/waiting")));
    } catch (err) {
      if (err.status !== 401) fail(err);
    }
  }
  const list = $("waiting");
  list.replaceChildren();
  for (const row of rows) {
    const li = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.thread = row.threadId;
    button.classList.toggle("current", !!state.current && state.current.threadId === row.threadId);
    const tid = document.createElement("span");
    tid.className = "tid";
    tid.textContent = row.threadId;
    const note = document.createElement("span");
    note.className = "note";
    note.textContent = row.message || "";
    const agent = document.createElement("span");
    agent.className = "was";
    agent.textContent = "was with " + (row.activeAgent || "the support desk");
    button.append(tid, note, agent);
    button.addEventListener("click", () => openThread(row.harness, row.threadId));
    li.appendChild(button);
    list.appendChild(li);
  }
  $("waiting-count").textContent = String(rows.length);
  $("waiting-count").classList.toggle("zero", rows.length === 0);
  $("waiting-empty").hidden = rows.length > 0;
}

// -- one thread ---------------------------------------------------------------
async function openThread(harnessKey, threadId) {
  try {
    const snap = await api("GET", threadPath(harnessKey, threadId));
    if (state.stream) state.stream.abort();
    state.current = { harness: harnessKey, threadId };
    state.thread = threadFromSnapshot(snap);
    $("empty").hidden = true;
    $("thread").hidden = false;
    $("thread-title").textContent = threadId;
    const harness = state.harnesses.find((h) => h.key === harnessKey);
    $("thread-harness").textContent = harness ? harness.name : harnessKey;
    const from = (snap.metadata || {})["harness:transferredFrom"];
    const source = from && state.harnesses.find((h) => h.name === from.harness);
    $("moved-from").hidden = !from;
    if (from) {
      $("moved-from").textContent = "moved from " + from.harness + " · " + from.threadId;
      $("moved-from").disabled = !source;
      $("moved-from").title = source ? "Open the thread it came from" : "";
      $("moved-from").onclick = source ? () => openThread(source.key, from.threadId) : null;
    }
    fillHandBack(harness);
    render();
    state.stream = followEvents(
      threadPath(harnessKey, threadId),
      state.thread,
      onEvent,
      (on) => setLiveChip($("live"), on),
    );
    for (const b of document.querySelectorAll("#waiting button")) {
      b.classList.toggle("current", b.dataset.thread === threadId);
    }
    // In one column the thread is below the lists: bring it into view.
    if (matchMedia("(max-width: 900px)").matches) $("thread").scrollIntoView();
  } catch (err) {
    fail(err);
  }
}

function fillHandBack(harness) {
  const select = $("handback-to");
  select.replaceChildren();
  const targets = [["main", "main model"]].concat(
    ((harness && harness.agents) || []).map((a) => [a, a]),
  );
  for (const [value, label] of targets) {
    const option = document.createElement("option");
    option.value = value;
    option.textContent = label;
    select.appendChild(option);
  }
  const transferTo = $("transfer-to");
  for (const option of transferTo.options) {
    option.disabled = !!harness && option.value === harness.key;
  }
  const other = [...transferTo.options].find((o) => !o.disabled);
  if (other) transferTo.value = other.value;
}

function humanWait() {
  return state.thread && state.thread.waits.find((w) => w.kind === "human");
}

function render() {
  const thread = state.thread;
  renderTranscript($("transcript"), thread.messages, {
    showNotes: true,
    mainName: "Main model",
    mine: (m) => m.role === "assistant",
  });
  const wait = humanWait();
  $("wait-banner").hidden = !wait;
  $("wait-note").textContent = wait && wait.message ? wait.message : "";
  $("active-agent").textContent =
    "answers next: " + (wait ? "a person (you)" : thread.activeAgent || "main model");
  $("end-pause").hidden = !wait;
  // After the pause, messages the user sent during it wait for a turn.
  const last = thread.messages[thread.messages.length - 1];
  const attachment = last && last.metadata && last.metadata.harness && last.metadata.harness.operatorAttachment;
  $("held").hidden = !!wait || !last || last.role !== "user" || !!attachment;
  $("reply-send").disabled = !wait;
  $("reply-text").disabled = !wait;
  $("reply-text").placeholder = wait
    ? "Reply to the user as operator…"
    : "Replies open while the thread waits for a person";
}

function onEvent(event) {
  const outcome = applyEvent(state.thread, event);
  if (outcome === "render") render();
  if (outcome === "refresh") refreshThread();
  if (event.name === "wait.opened" || event.name === "wait.closed") refreshWaiting();
}

// Who has the thread after a wait closed is decided by the host: read it from a
// snapshot, unless the operator opened another thread meanwhile, or the stream
// has already gone past what the snapshot holds (then read again).
async function refreshThread() {
  const target = state.current;
  const thread = state.thread;
  try {
    let snap;
    do {
      snap = await api("GET", threadPath(target.harness, target.threadId));
    } while (Number(snap.lastEventId) < Number(thread.lastEventId) && state.thread === thread);
    if (state.thread !== thread) return;
    thread.activeAgent = snap.activeAgent;
    thread.waits = snap.pendingWaits;
    render();
  } catch (err) {
    fail(err);
  }
}

// -- operator actions ---------------------------------------------------------
async function act(path, body, done) {
  const target = state.current;
  try {
    const result = await api("POST", threadPath(target.harness, target.threadId) + path, body);
    if (done) done(result);
  } catch (err) {
    fail(err);
  }
}

$("reply").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("reply-text").value.trim();
  if (!text) return;
  act("/messages", { text, as: "operator" }, () => ($("reply-text").value = ""));
});

$("resume").addEventListener("click", () => {
  const wait = humanWait();
  if (!wait) return;
  act("/answer", { questionId: wait.waitId, value: { resume: true } }, () =>
    toast("The agent before the handoff has the thread again."),
  );
});

$("handback").addEventListener("click", () => {
  const wait = humanWait();
  const to = $("handback-to").value;
  if (!wait) return;
  act("/answer", { questionId: wait.waitId, value: { handBack: to } }, () =>
    toast("Handed back to " + describeTarget(to) + "."),
  );
});

$("continue").addEventListener("click", () => {
  $("continue").disabled = true;
  act("/continue", {}, (turn) => toast("Answered: the turn " + turn.status + ".")).finally(
    () => ($("continue").disabled = false),
  );
});

$("transfer").addEventListener("submit", (e) => {
  e.preventDefault();
  const to = $("transfer-to").value;
  const body = { to, note: $("transfer-note").value, messages: $("transfer-messages").value };
  act("/transfer", body, (result) => {
    toast("Moved to " + to + " as thread " + result.threadId + ".");
    $("transfer-note").value = "";
    openThread(result.harness, result.threadId);
  });
});

$("open-thread").addEventListener("submit", (e) => {
  e.preventDefault();
  openThread($("open-harness").value, $("open-id").value.trim());
});

$("signin").addEventListener("submit", (e) => {
  e.preventDefault();
  session.token = $("token").value.trim();
  sessionStorage.setItem("amv-token", session.token);
  $("token").value = "";
  signIn();
});

$("signout").addEventListener("click", () => {
  session.token = "";
  sessionStorage.removeItem("amv-token");
  if (state.stream) state.stream.abort();
  location.reload();
});

takeTokenFromHash();
signIn();
setInterval(refreshWaiting, 3000);
