/* Rostrum persuasion dialogue: the participant's side of the websocket.
 *
 * The server sends a snapshot on every (re)connection and whenever the dialogue changes
 * (a turn was played, a partner joined, it ended); the opponent's text streams in between
 * as deltas carrying their character offset (a duplicate is dropped, a gap asks for a
 * resync). A turn's end can be lost too (the server's link to Redis dropped): a later turn
 * starting, or a turn being written or read with nothing heard for a while
 * (data-quiet-seconds), also asks for a resync. Everything written by a person or a model is put on the page with
 * textContent.
 * A draft survives a reload (sessionStorage, per dialogue page).
 */
(function () {
  "use strict";
  // Visible strings in the page's language: a JSON element the template writes
  // ({% ui_strings "persuasion" %}, a data-strings attribute); the English text is the fallback.
  var ui = {};
  try { ui = JSON.parse(document.getElementById("ui-persuasion").getAttribute("data-strings")); } catch (e) { ui = {}; }
  function say(key, fallback, values) {
    var text = ui[key] || fallback;
    Object.keys(values || {}).forEach(function (name) { text = text.split("%(" + name + ")s").join(values[name]); });
    return text;
  }

  var root = document.getElementById("persuasion");
  if (!root) return;
  var side = root.getAttribute("data-side");
  var maxSentences = parseInt(root.getAttribute("data-max-sentences"), 10) || 5;
  var chat = document.getElementById("p-chat");
  var statusLine = document.getElementById("p-status");
  var saidBox = document.getElementById("p-said"); // the opponent's finished turns, read out once
  var focusBack = false; // the keyboard was moved from the hidden text box to the status
  var baseTitle = document.title; // "Your turn · …" while it is: a cue in a background tab
  var stores = document.getElementById("stores");
  var storeOwn = document.getElementById("store-own");
  var storeOther = document.getElementById("store-other");
  var replies = document.getElementById("replies");
  var replyList = document.getElementById("reply-list");
  var composer = document.getElementById("p-composer");
  var textBox = document.getElementById("p-text");
  var hint = document.getElementById("p-hint");
  var errorBox = document.getElementById("p-error");
  var sendButton = document.getElementById("p-send");
  var finish = document.getElementById("p-finish");
  var finishHint = document.getElementById("p-finish-hint");
  var standIn = document.getElementById("p-stand-in");
  var waitSeconds = parseInt(root.getAttribute("data-wait-seconds"), 10) || 0;
  var waitText = waitSeconds >= 120
    ? say("minutes", "%(n)s minutes", { n: Math.round(waitSeconds / 60) })
    : say("seconds", "%(n)s seconds", { n: waitSeconds });
  var draftKey = "rostrum-persuasion-draft:" + root.getAttribute("data-ws");

  var snap = null;
  var turns = {}; // seq -> {seq, speaker, text, status, sentences}
  var socket = null;
  var connected = false;
  var sending = false;
  var sentAfter = 0; // the last turn's number when our turn was sent
  var reconnects = 0;
  var wasMyTurn = false;
  var wasEnded = false;

  var kindNames = {
    claim: say("move_claim", "claim"), why: say("move_why", "why"), concede: say("move_concede", "concede"),
    retract: say("move_retract", "retract"), since: say("move_since", "since"), question: say("move_question", "question")
  };

  try { textBox.value = sessionStorage.getItem(draftKey) || ""; } catch (e) { /* storage off */ }
  textBox.addEventListener("input", function () {
    try { sessionStorage.setItem(draftKey, textBox.value); } catch (e) { /* storage off */ }
    updateHint();
  });

  function roughSentences(text) {
    var parts = text.split(/[.!?]+(?:\s+|$)/).filter(function (p) { return p.trim().length > 0; });
    return parts.length;
  }

  function updateHint() {
    var n = roughSentences(textBox.value);
    var base = say("hint", "One to %(max)s sentences.", { max: maxSentences });
    var soFar = n === 1 ? say("so_far_one", "About one sentence so far.") : say("so_far", "About %(n)s sentences so far.", { n: n });
    hint.textContent = n ? base + " " + soFar : base;
  }

  function who(speaker) { return speaker === side ? say("you", "You") : say("opponent", "Your opponent"); }

  function sentenceList(t) {
    var list = document.createElement("ul");
    list.className = "moves";
    (t.sentences || []).forEach(function (s) {
      var item = document.createElement("li");
      var badge = document.createElement("span");
      badge.className = "move-kind" + (s.legal ? "" : " move-void");
      badge.textContent = s.kind ? kindNames[s.kind] || s.kind : say("not_a_move", "not a move");
      var text = document.createElement("span");
      text.className = "move-text";
      text.textContent = s.text;
      item.appendChild(badge);
      item.appendChild(text);
      if (!s.legal && s.reason) {
        var why = document.createElement("span");
        why.className = "move-reason";
        why.textContent = say("did_not_count", "Did not count: %(reason)s", { reason: s.reason });
        item.appendChild(why);
      }
      list.appendChild(item);
    });
    return list;
  }

  function render(t) {
    if (!t.el) {
      t.el = document.createElement("li");
      var after = null;
      Object.keys(turns).forEach(function (k) {
        var o = turns[k];
        if (o.el && o.el.parentNode && o.seq > t.seq && (!after || o.seq < after.seq)) after = o;
      });
      chat.insertBefore(t.el, after ? after.el : null);
    }
    t.el.className = "msg " + (t.speaker === side ? "msg-own" : "msg-other");
    t.el.classList.toggle("writing", t.status === "pending" || t.status === "streaming");
    t.el.textContent = "";
    var head = document.createElement("div");
    head.className = "msg-head";
    head.appendChild(document.createTextNode(who(t.speaker)));
    var number = document.createElement("span");
    number.className = "msg-round";
    number.textContent = say("turn", "Turn %(n)s", { n: t.seq });
    head.appendChild(number);
    t.el.appendChild(head);
    if (t.status === "done" && t.sentences && t.sentences.length) {
      t.el.appendChild(sentenceList(t));
    } else {
      var body = document.createElement("div");
      body.className = "msg-text";
      body.textContent = t.text || (t.status === "pending" ? "…" : "");
      t.el.appendChild(body);
      if (t.status === "reading") {
        var note = document.createElement("p");
        note.className = "hint";
        note.textContent = say("reading_turn", "Reading the moves in this turn…");
        t.el.appendChild(note);
      }
    }
  }

  function fillStore(list, items) {
    list.textContent = "";
    items.forEach(function (p) {
      var li = document.createElement("li");
      li.textContent = p;
      list.appendChild(li);
    });
  }

  function busyTurn() {
    var busy = null;
    Object.keys(turns).forEach(function (k) {
      var t = turns[k];
      if (t.status === "pending" || t.status === "streaming" || t.status === "reading") busy = t;
    });
    return busy;
  }

  function refresh() {
    announceFinished();
    if (!snap) return;
    var waitingRoom = snap.status === "waiting";
    stores.hidden = waitingRoom;
    var other = side === "pro" ? "con" : "pro";
    fillStore(storeOwn, snap.stores[side] || []);
    fillStore(storeOther, snap.stores[other] || []);
    var myTurn = connected && snap.my_turn && !sending && !busyTurn();
    if (!myTurn && !composer.hidden && composer.contains(document.activeElement)) {
      // The box the keyboard is in is about to hide: keep its place on the status line (read
      // out, as a status), and come back to the text box on the next turn.
      statusLine.focus({ preventScroll: true });
      focusBack = true;
    }
    composer.hidden = !myTurn;
    sendButton.disabled = !myTurn;
    replies.hidden = !myTurn || !snap.admissible.length;
    replyList.textContent = "";
    snap.admissible.forEach(function (a) {
      var li = document.createElement("li");
      var quote = document.createElement("q");
      quote.textContent = a.text;
      li.appendChild(document.createTextNode(say("reply_before", "their %(kind)s ", { kind: kindNames[a.kind] || a.kind })));
      li.appendChild(quote);
      var names = a.replies.map(function (r) { return kindNames[r] || r; });
      li.appendChild(document.createTextNode(say("reply_after", " with: %(replies)s", { replies: names.join(", ") })));
      replyList.appendChild(li);
    });
    if (myTurn && !wasMyTurn) {
      composer.scrollIntoView({ block: "nearest", behavior: "smooth" });
      if (focusBack && document.activeElement === statusLine) textBox.focus({ preventScroll: true });
      focusBack = false;
    }
    wasMyTurn = myTurn;
    var title = (myTurn ? say("title_your_turn", "Your turn") + " · " : "") + baseTitle;
    if (document.title !== title) document.title = title;
    finish.disabled = !snap.ended;
    if (finishHint) finishHint.hidden = snap.ended;
    if (standIn) standIn.hidden = snap.pairing !== "human_ai";
    var busy = busyTurn();
    var text, soon;
    if (snap.ended) text = snap.outcome;
    else if (!connected) text = say("lost", "Connection lost — reconnecting…");
    else if (waitingRoom) text = say("waiting_room", "Waiting for another participant to join (at most %(wait)s)…", { wait: waitText });
    else if (sending) text = say("sending", "Sending…");
    else if (busy && busy.status === "reading") text = busy.speaker === side ? say("reading_yours", "Reading the moves in your turn…") : say("reading_theirs", "Reading the moves in your opponent's turn…");
    else if (busy) text = say("opponent_writing", "Your opponent is writing…");
    else if (snap.my_turn && (soon = hurry())) text = say("reply_soon", "Your turn: reply within %(n)s seconds, or the dialogue ends.", { n: soon });
    else if (snap.my_turn) text = say("your_turn", "Your turn (turn %(n)s of at most %(max)s, both sides counted).", { n: snap.turns_played + 1, max: snap.max_turns });
    else text = say("waiting", "Waiting for your opponent…");
    // Rewritten only when it changes, or a screen reader may read it out again and again.
    if (statusLine.textContent !== text) statusLine.textContent = text;
    if (snap.ended && !wasEnded) {
      try { sessionStorage.removeItem(draftKey); } catch (e) { /* storage off */ }
      finish.focus();
    }
    wasEnded = snap.ended;
  }

  // Near the end of the silence limit on my turn, the status says so, once (a screen reader
  // reads it once: it is not a countdown): the seconds left when it appeared, else 0.
  var hurryFrom = 0;
  function hurry() {
    if (replyBy === null || !snap || !snap.my_turn || sending) { hurryFrom = 0; return 0; }
    var left = (replyBy - Date.now()) / 1000;
    var warnAt = Math.min(60, Math.round((snap.silence_seconds || 300) / 3));
    if (left > warnAt) { hurryFrom = 0; return 0; }
    if (!hurryFrom) hurryFrom = Math.max(1, left >= 10 ? Math.floor(left / 10) * 10 : Math.floor(left));
    return hurryFrom;
  }

  function maxSeq() {
    var max = 0;
    Object.keys(turns).forEach(function (k) { max = Math.max(max, turns[k].seq); });
    return max;
  }

  function resync() {
    if (socket && connected) socket.send(JSON.stringify({ type: "resync" }));
  }

  function streamingBefore(seq) {
    return Object.keys(turns).some(function (k) { return turns[k].seq < seq && turns[k].status === "streaming"; });
  }

  var quietMs = 1000 * (parseFloat(root.getAttribute("data-quiet-seconds")) || 10);
  var heard = Date.now(); // the last message from the server
  var replyBy = null; // on my turn: when (this browser's clock) the silence limit ends it
  var announced = {}; // seq -> true: opponent's turns read out (or there when the page opened)
  var primed = false; // the first snapshot is history, not news

  // The status line says whose turn it is; the opponent's words are read out once, whole, when
  // their turn ends (streamed or arriving in a snapshot), never word by word.
  function announceFinished() {
    Object.keys(turns).map(function (k) { return turns[k]; })
      .sort(function (a, b) { return a.seq - b.seq; })
      .forEach(function (t) {
        var finished = t.status === "reading" || t.status === "done";
        if (announced[t.seq] || t.speaker === side || !finished || !t.text) return;
        announced[t.seq] = true;
        if (!primed || !saidBox) return;
        var line = document.createElement("p");
        line.textContent = say("said", "%(name)s, %(when)s: %(text)s",
          { name: say("opponent", "Your opponent"), when: say("turn", "Turn %(n)s", { n: t.seq }), text: t.text });
        saidBox.appendChild(line);
        while (saidBox.childNodes.length > 3) saidBox.removeChild(saidBox.firstChild);
      });
  }

  function handle(m) {
    heard = Date.now();
    switch (m.type) {
      case "snapshot":
        snap = m;
        // Counted by the server: the browser's clock may be off.
        replyBy = typeof m.silence_left === "number" ? Date.now() + 1000 * m.silence_left : null;
        hurryFrom = 0; // the warning's seconds are counted again from the server's figure
        side = m.side || side;
        turns = {};
        chat.textContent = "";
        m.turns.forEach(function (t) { turns[t.seq] = t; render(t); });
        announceFinished();
        primed = true;
        break;
      case "turn.start":
        // A turn we never heard start, or one after a turn whose end never came.
        if (m.seq > maxSeq() + 1 || streamingBefore(m.seq)) { resync(); return; }
        turns[m.seq] = turns[m.seq] || { seq: m.seq, speaker: m.speaker, text: "", sentences: [] };
        turns[m.seq].status = "streaming";
        turns[m.seq].text = "";
        render(turns[m.seq]);
        break;
      case "turn.delta":
        var t = turns[m.seq];
        if (!t || m.offset > t.text.length) { resync(); return; }
        var end = m.offset + m.text.length;
        if (end <= t.text.length) return;
        t.text += m.text.slice(t.text.length - m.offset);
        t.status = "streaming";
        render(t);
        break;
      case "turn.reset":
        if (turns[m.seq]) { turns[m.seq].text = ""; render(turns[m.seq]); }
        break;
      case "turn.end":
        if (turns[m.seq]) { turns[m.seq].text = m.text; turns[m.seq].status = "reading"; render(turns[m.seq]); }
        break;
      case "error":
        sending = false;
        errorBox.textContent = m.message;
        errorBox.hidden = false;
        break;
    }
    if (m.type === "snapshot" && sending && m.turns.some(function (x) { return x.speaker === side && x.seq > sentAfter; })) {
      sending = false;
      textBox.value = "";
      textBox.dispatchEvent(new Event("input")); // the hints follow the emptied box
      try { sessionStorage.removeItem(draftKey); } catch (e) { /* storage off */ }
      updateHint();
    }
    refresh();
  }

  sendButton.addEventListener("click", function () {
    var text = textBox.value.trim();
    errorBox.hidden = true;
    if (!text) { errorBox.textContent = say("write_one", "Write at least one sentence."); errorBox.hidden = false; textBox.focus(); return; }
    if (!socket || !connected || sending) return;
    sending = true;
    sentAfter = maxSeq();
    socket.send(JSON.stringify({ type: "say", text: text }));
    refresh();
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
      sending = false;
      if (event.code === 4403) {
        // The step is over (or the dialogue is no longer this page's): the server knows.
        statusLine.textContent = say("closed", "This dialogue is no longer open here. Reload the page to continue.");
        composer.hidden = true;
        finish.disabled = false;
        return;
      }
      refresh();
      var delay = Math.min(500 * Math.pow(2, reconnects), 8000);
      reconnects += 1;
      setTimeout(connect, delay);
    });
  }

  // A turn being written or read, and nothing heard for a while: its end, or the snapshot
  // after it, may have been lost.
  setInterval(function () {
    var busy = Object.keys(turns).some(function (k) {
      var status = turns[k].status;
      return status === "pending" || status === "streaming" || status === "reading";
    });
    if (connected && busy && Date.now() - heard > quietMs) {
      heard = Date.now();
      resync();
    }
    if (replyBy !== null && snap && snap.my_turn && !hurryFrom && hurry()) refresh();
  }, 1000);

  updateHint();
  connect();
})();
