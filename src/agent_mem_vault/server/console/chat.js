// Customer chat for the demo: one thread of the desk harness, live. With
// #operator=<id> in the link, the owner shares each new thread with that
// operator (harness design §4, "Share the thread with the operator").
"use strict";

const params = takeTokenFromHash();
const query = new URLSearchParams(location.search);
const harnessKey = query.get("harness") || "desk";
const chat = {
  threadId: query.get("thread") || sessionStorage.getItem("amv-chat-thread") || newThreadId(),
  operator: params.get("operator") || sessionStorage.getItem("amv-chat-operator"),
  thread: { messages: [], waits: [], activeAgent: null, lastEventId: null },
  stream: null,
};
if (chat.operator) sessionStorage.setItem("amv-chat-operator", chat.operator);
sessionStorage.setItem("amv-chat-thread", chat.threadId);

function newThreadId() {
  return "case-" + Math.random().toString(36).slice(2, 8);
}

function render() {
  renderTranscript($("transcript"), chat.thread.messages, { showNotes: false });
  const waiting = chat.thread.waits.some((w) => w.kind === "human");
  $("active-agent").textContent = waiting
    ? "a person will answer"
    : "with " + (chat.thread.activeAgent || "the support desk");
  // Whatever the model said (a real one may say nothing), a customer handed to a
  // person reads that a person will answer, and that writing meanwhile is fine.
  $("with-person").hidden = !waiting;
}

async function start() {
  $("thread-title").textContent = "Conversation " + chat.threadId;
  try {
    const me = await whoAmI();
    $("whoami").textContent = me.id ? "Signed in as " + me.id : "Not signed in";
    if (!me.id) {
      if (me.refused) {
        $("signed-out-reason").textContent = "The sign-in token of this link is not valid.";
        sessionStorage.removeItem("amv-token");
      }
      $("signed-out").hidden = false;
      $("text").disabled = $("send-button").disabled = true;
      $("live").textContent = "signed out";
      return;
    }
    const snap = await api("GET", threadPath(harnessKey, chat.threadId));
    chat.thread = threadFromSnapshot(snap);
    follow();
  } catch (err) {
    if (err.code !== "thread_not_found") fail(err);
    else $("live").textContent = "new conversation";
  }
  render();
}

function follow() {
  if (chat.stream) return;
  chat.stream = followEvents(
    threadPath(harnessKey, chat.threadId),
    chat.thread,
    (event) => {
      const outcome = applyEvent(chat.thread, event);
      if (outcome) render();
    },
    (on) => setLiveChip($("live"), on),
  );
}

$("send").addEventListener("submit", async (e) => {
  e.preventDefault();
  const text = $("text").value.trim();
  if (!text) return;
  $("text").value = "";
  $("send-button").disabled = true;
  try {
    const isNew = !chat.stream;
    await api("POST", threadPath(harnessKey, chat.threadId) + "/messages", { text });
    if (isNew) {
      if (chat.operator) {
        await api("POST", threadPath(harnessKey, chat.threadId) + "/members", {
          userId: chat.operator,
          role: "operator",
        });
      }
      const snap = await api("GET", threadPath(harnessKey, chat.threadId));
      chat.thread = threadFromSnapshot(snap);
      render();
      follow();
    }
  } catch (err) {
    fail(err);
  } finally {
    $("send-button").disabled = false;
  }
});

start();
