/* Rostrum live debate / consultancy: the judge's side of the websocket.
 *
 * The server sends a snapshot on every (re)connection, then events. Turns are keyed by
 * their sequence number; streamed text arrives as deltas carrying their character offset,
 * so a duplicate is dropped and a gap (a lost frame) triggers a resync. The end of a reply can
 * be lost too (the server's link to Redis dropped): a later turn starting, the judge's turn
 * coming, or a reply being written with nothing heard for a while (data-quiet-seconds) also
 * asks for a resync, whose snapshot has the stored text. All text is put on the page with
 * textContent: nothing the model or a participant writes is parsed as HTML.
 *
 * On a small screen the page follows the message being written, keeping its newest line
 * above the status bar (which sticks to the bottom of the screen), until the reader scrolls
 * up; then a "New text below" button brings them back and following resumes. When the
 * conversation is over, the button to continue is scrolled into view.
 */
(function () {
  "use strict";

  var root = document.getElementById("live");
  if (!root) return;
  // Visible strings in the page's language: a JSON element the template writes
  // ({% ui_strings "live" %}, a data-strings attribute); the English text is the fallback.
  var ui = {};
  try { ui = JSON.parse(document.getElementById("ui-live").getAttribute("data-strings")); } catch (e) { ui = {}; }
  function say(key, fallback, values) {
    var text = ui[key] || fallback;
    Object.keys(values || {}).forEach(function (name) { text = text.split("%(" + name + ")s").join(values[name]); });
    return text;
  }
  var chat = document.getElementById("chat");
  var statusLine = document.getElementById("live-status");
  var saidBox = document.getElementById("live-said"); // finished replies, read out once
  var focusBack = false; // the keyboard was moved from the hidden question box to the status
  var baseTitle = document.title; // "Your turn · …" while it is: a cue in a background tab
  var composer = document.getElementById("composer");
  var question = document.getElementById("question");
  var sendButton = document.getElementById("send");
  var passButton = document.getElementById("pass");
  var retryBox = document.getElementById("retry-box");
  var retryButton = document.getElementById("retry");
  var finish = document.getElementById("finish");
  var finishHint = document.getElementById("finish-hint");
  var bar = root.querySelector(".live-bar");
  var newBelow = document.getElementById("new-below");
  var names = { A: say("name_A", "Debater A"), B: say("name_B", "Debater B"), C: say("name_C", "AI advisor"), J: say("name_J", "You") };

  var turns = {}; // seq -> {seq, speaker, round, target, text, status, el}
  var state = { next: "", round: 1, done: false, sides: {} };
  var socket = null;
  var connected = false;
  var waiting = false; // our question is on its way
  var reconnects = 0;
  var errorMessage = ""; // the server refused our last message: shown until the next event
  var wasJudgeTurn = false;
  var follow = true; // keep the message being written in view (false once the reader scrolls up)
  var lastY = window.scrollY;
  var wasOver = false;
  var quietMs = 1000 * (parseFloat(root.getAttribute("data-quiet-seconds")) || 10);
  var heard = Date.now(); // the last message from the server
  var announced = {}; // seq -> true: replies read out (or there when the page opened)
  var primed = false; // the first snapshot is history, not news

  // A screen reader hears the status line change ("Debater A is writing…", "Your turn"), not
  // the reply: the conversation is not a live region, or every streamed word would be read.
  // Each reply is read out once, whole, when it ends (after a reconnection too).
  function announceFinished() {
    Object.keys(turns).map(function (k) { return turns[k]; })
      .sort(function (a, b) { return a.seq - b.seq; })
      .forEach(function (t) {
        if (announced[t.seq] || t.speaker === "J" || !t.speaker || t.status !== "done" || !t.text) return;
        announced[t.seq] = true;
        if (!primed || !saidBox) return;
        var line = document.createElement("p");
        line.textContent = say("said", "%(name)s, %(when)s: %(text)s",
          { name: headText(t), when: say("round", "Round %(round)s", { round: t.round }), text: t.text });
        saidBox.appendChild(line);
        while (saidBox.childNodes.length > 3) saidBox.removeChild(saidBox.firstChild);
      });
  }

  function sideLabel(speaker) {
    var side = state.sides && state.sides[speaker];
    if (!side) return "";
    return side === "true" ? say("argues_true", " — argues the claim is TRUE") : say("argues_false", " — argues the claim is FALSE");
  }

  function headText(t) {
    if (t.speaker === "J") {
      if (t.target === "pass") return say("you_passed", "You passed");
      if (t.target === "both") return say("you_both", "You → both debaters");
      if (t.target === "C") return say("you_advisor", "You → the advisor");
      if (t.target) return say("you_debater", "You → Debater %(side)s", { side: t.target });
      return names.J;
    }
    return names[t.speaker] + sideLabel(t.speaker);
  }

  function render(t) {
    if (!t.el) {
      t.el = document.createElement("li");
      t.el.className = "msg msg-" + t.speaker.toLowerCase();
      var head = document.createElement("div");
      head.className = "msg-head";
      var who = document.createElement("span");
      var round = document.createElement("span");
      round.className = "msg-round";
      head.appendChild(who);
      head.appendChild(round);
      var body = document.createElement("div");
      body.className = "msg-text";
      t.el.appendChild(head);
      t.el.appendChild(body);
      var after = null;
      Object.keys(turns).forEach(function (key) {
        var other = turns[key];
        if (other.el && other.el.parentNode && other.seq > t.seq && (!after || other.seq < after.seq)) after = other;
      });
      chat.insertBefore(t.el, after ? after.el : null);
    }
    t.el.querySelector(".msg-head span").textContent = headText(t);
    t.el.querySelector(".msg-round").textContent = say("round", "Round %(round)s", { round: t.round });
    t.el.querySelector(".msg-text").textContent = t.text || (t.status === "failed" ? say("no_reply", "(no reply)") : "");
    t.el.classList.toggle("writing", t.status === "streaming" || t.status === "pending");
  }

  function upsert(fields) {
    var t = turns[fields.seq];
    if (!t) {
      t = turns[fields.seq] = { seq: fields.seq, speaker: "", round: 1, target: "", text: "", status: "pending", el: null };
    }
    Object.keys(fields).forEach(function (k) { if (fields[k] !== undefined) t[k] = fields[k]; });
    if (!t.speaker) return t;
    render(t);
    return t;
  }

  function maxSeq() {
    var max = 0;
    Object.keys(turns).forEach(function (k) { max = Math.max(max, turns[k].seq); });
    return max;
  }

  function resync() {
    if (socket && connected) socket.send(JSON.stringify({ type: "resync" }));
  }

  function unfinishedBefore(seq) {
    return Object.keys(turns).some(function (k) {
      var t = turns[k];
      return t.seq < seq && (t.status === "streaming" || t.status === "pending");
    });
  }

  function onDelta(m) {
    var t = turns[m.seq];
    if (!t || m.offset > t.text.length) { resync(); return; } // a frame was lost
    var end = m.offset + m.text.length;
    if (end <= t.text.length) return; // already have it
    t.text += m.text.slice(t.text.length - m.offset);
    t.status = "streaming";
    render(t);
  }

  function writing() {
    var busy = null;
    Object.keys(turns).forEach(function (k) {
      var t = turns[k];
      if (t.status === "streaming" || t.status === "pending") busy = t;
    });
    return busy;
  }

  function failed() {
    return Object.keys(turns).some(function (k) { return turns[k].status === "failed"; });
  }

  function refresh() {
    announceFinished();
    var busy = writing();
    var judgeTurn = connected && !busy && !waiting && state.next === "J" && !failed();
    if (!judgeTurn && !composer.hidden && composer.contains(document.activeElement)) {
      // The box the keyboard is in is about to hide: keep its place on the status line (read
      // out, as a status), and come back to the question box on the next turn.
      statusLine.focus({ preventScroll: true });
      focusBack = true;
    }
    composer.hidden = !judgeTurn;
    sendButton.disabled = passButton.disabled = !judgeTurn;
    retryBox.hidden = !failed() || !connected;
    if (finish) finish.disabled = !(state.done || failed());
    if (finishHint) finishHint.hidden = !finish || !finish.disabled;
    if (judgeTurn && !wasJudgeTurn) {
      // On a phone the question box can be far below: bring it into view when it opens.
      composer.scrollIntoView({ block: "nearest", behavior: "smooth" });
      if (focusBack && document.activeElement === statusLine) question.focus({ preventScroll: true });
      focusBack = false;
    }
    wasJudgeTurn = judgeTurn;
    var title = (judgeTurn ? say("title_your_turn", "Your turn") + " · " : "") + baseTitle;
    if (document.title !== title) document.title = title;
    var text;
    if (errorMessage) text = errorMessage;
    else if (!connected) text = say("lost", "Connection lost — reconnecting…");
    // The group's turn.failed message is not in the participant's language: say it here.
    else if (failed()) text = say("ai_failed", "The AI could not reply just now. You can try again, or go on to your final answer.");
    else if (busy) text = say("writing", "%(name)s is writing…", { name: names[busy.speaker] });
    else if (state.done) text = say("over", "The conversation is over. Continue to your final answer.");
    else if (waiting) text = say("sending", "Sending…");
    else if (state.next === "J") text = say("your_turn", "Your turn: ask a question, or pass.");
    else if (state.next) text = say("about_to_reply", "%(name)s is about to reply…", { name: names[state.next] });
    else text = "";
    // Refreshed on every streamed fragment: rewritten only when it changes, or a screen
    // reader may read the same status out again and again.
    if (statusLine.textContent !== text) statusLine.textContent = text;
  }

  // --- Following the text on a small screen ---------------------------------------------

  function visibleBottom() {
    // The status bar covers the bottom of the screen while it sticks there.
    return Math.min(bar.getBoundingClientRect().top, window.innerHeight) - 8;
  }

  function below(el) {
    return el.getBoundingClientRect().bottom > visibleBottom() + 1;
  }

  function bringUp(el) {
    var over = el.getBoundingClientRect().bottom - visibleBottom();
    if (over > 0) window.scrollBy(0, over);
    lastY = window.scrollY;
  }

  function lastMessage() {
    var last = null;
    Object.keys(turns).forEach(function (k) {
      if (turns[k].el && (!last || turns[k].seq > last.seq)) last = turns[k];
    });
    return last;
  }

  function over() {
    return !!finish && !finish.disabled && state.done;
  }

  function track() {
    var busy = writing();
    if (busy && busy.el && follow) bringUp(busy.el);
    if (over() && !wasOver && follow) {
      finish.scrollIntoView({ block: "center" });
      lastY = window.scrollY;
    }
    wasOver = over();
    var hidden = follow || !((busy && busy.el && below(busy.el)) || over());
    newBelow.textContent = over() ? say("continue_below", "Scroll to the Continue button ↓") : say("new_below", "Scroll to the new text ↓");
    newBelow.hidden = hidden;
  }

  window.addEventListener("scroll", function () {
    var y = window.scrollY;
    if (y < lastY - 2) follow = false; // the reader scrolled up to read
    lastY = y;
    var busy = writing();
    if (busy && busy.el && !below(busy.el)) follow = true; // back down at the new text
    if (over() && finish.getBoundingClientRect().bottom <= window.innerHeight) follow = true;
    if (follow) newBelow.hidden = true;
  }, { passive: true });

  newBelow.addEventListener("click", function () {
    follow = true;
    newBelow.hidden = true;
    if (over()) { finish.scrollIntoView({ block: "center" }); lastY = window.scrollY; return; }
    var target = writing() || lastMessage();
    if (target && target.el) bringUp(target.el);
  });

  function handle(m) {
    heard = Date.now();
    if (m.type !== "error") errorMessage = "";
    switch (m.type) {
      case "snapshot":
        turns = {};
        chat.textContent = "";
        state = m.state;
        m.turns.forEach(upsert);
        announceFinished();
        primed = true;
        break;
      case "state":
        state = m;
        Object.keys(turns).forEach(function (k) { render(turns[k]); });
        // Nobody is writing, yet a reply shows as being written: its end was lost.
        if ((state.next === "J" || state.done) && writing()) resync();
        break;
      case "turn.start":
        // A turn we never heard start, or one after a reply whose end never came.
        if (m.seq > maxSeq() + 1 || unfinishedBefore(m.seq)) { resync(); return; }
        upsert({ seq: m.seq, speaker: m.speaker, round: m.round, status: "streaming", text: "" });
        break;
      case "turn.delta":
        onDelta(m);
        break;
      case "turn.end":
        if (!turns[m.seq]) { resync(); return; }
        upsert({ seq: m.seq, text: m.text, status: "done" });
        break;
      case "turn.reset":
        upsert({ seq: m.seq, text: "", status: "streaming" });
        break;
      case "turn.failed":
        upsert({ seq: m.seq, text: "", status: "failed" });
        break;
      case "judge.message":
        waiting = false;
        question.value = "";
        question.dispatchEvent(new Event("input")); // its character-limit note, if shown, goes too
        state.next = ""; // the new state follows; until then it is not the judge's turn
        upsert({ seq: m.seq, speaker: "J", round: m.round, target: m.target, text: m.text, status: "done" });
        break;
      case "error":
        waiting = false;
        errorMessage = m.message;
        break;
    }
    refresh();
    track();
  }

  function send(target, text) {
    if (!socket || !connected || waiting) return;
    errorMessage = "";
    waiting = true;
    follow = true; // the judge is at the question box, below the conversation: show the replies
    socket.send(JSON.stringify({ type: "ask", target: target, text: text }));
    refresh();
  }

  sendButton.addEventListener("click", function () {
    var chosen = composer.querySelector('input[name="target"]:checked') || composer.querySelector('input[name="target"]');
    var text = question.value.trim();
    if (!text) { statusLine.textContent = say("write_first", "Write a question first, or pass."); question.focus(); return; }
    send(chosen.value, text);
  });
  passButton.addEventListener("click", function () { send("pass", ""); });
  retryButton.addEventListener("click", function () {
    if (socket && connected) socket.send(JSON.stringify({ type: "retry" }));
  });

  function connect() {
    var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + window.location.host + root.getAttribute("data-ws"));
    socket.addEventListener("open", function () { connected = true; reconnects = 0; refresh(); });
    socket.addEventListener("message", function (event) {
      var message;
      try { message = JSON.parse(event.data); } catch (e) { return; }
      handle(message);
    });
    socket.addEventListener("close", function (event) {
      connected = false;
      waiting = false;
      if (event.code === 4403) {
        statusLine.textContent = say("closed", "This conversation is no longer open. Reload the page to continue.");
        composer.hidden = true;
        return;
      }
      refresh();
      var delay = Math.min(500 * Math.pow(2, reconnects), 8000);
      reconnects += 1;
      setTimeout(connect, delay);
    });
  }

  // A reply being written, and nothing heard for a while: its end may have been lost.
  setInterval(function () {
    if (connected && writing() && Date.now() - heard > quietMs) {
      heard = Date.now();
      resync();
    }
  }, 1000);

  connect();
})();
