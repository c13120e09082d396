/* Rostrum step pages: reading-time measurement and small conveniences.
 *
 * Active time counts only while the page is visible and the window has focus; hidden
 * time counts while the tab is in the background. Both survive a refresh of the same
 * step (sessionStorage), and are sent with the form as _active_ms, _hidden_ms, _blurs.
 * The server keeps its own clock too; the browser's figures are a second opinion.
 *
 * Free text: how it was written, never what. For each textarea of the step form the script
 * counts key presses, pastes (and drops), the characters pasted, and the typing time (the
 * gaps between key presses, each counted up to 2 s), and sends them with the form as
 * _keys.NAME, _pastes.NAME, _pasted.NAME and _typing_ms.NAME. Pasted text is read only for
 * its length; these counts keep no key and no text, only counts and durations. The server
 * clamps them and derives flags (participants/flags.py).
 *
 * Drafts: what the participant has typed or chosen on the page is kept in sessionStorage (this
 * tab only, the answers themselves) until the next page opens, and put back after a refresh, a
 * crash of the tab or a send that failed, where the server did not fill the form itself (a page
 * shown again with its errors has the answers).
 */
(function () {
  "use strict";
  // Visible strings in the page's language: a JSON element the template writes
  // ({% ui_strings "step" %}, a data-strings attribute); the English text is the fallback.
  var ui = {};
  try { ui = JSON.parse(document.getElementById("ui-step").getAttribute("data-strings")); } catch (e) { ui = {}; }
  function say(key, fallback, values) {
    var text = ui[key] || fallback;
    Object.keys(values || {}).forEach(function (name) { text = text.split("%(" + name + ")s").join(values[name]); });
    return text;
  }

  function Timer(key) {
    this.key = "rostrum-timing:" + key;
    var saved = null;
    try { saved = JSON.parse(sessionStorage.getItem(this.key) || "null"); } catch (e) { saved = null; }
    this.active = (saved && saved.active) || 0;
    this.hidden = (saved && saved.hidden) || 0;
    this.blurs = (saved && saved.blurs) || 0;
    this.state = this.currentState();
    this.since = performance.now();
  }
  Timer.prototype.currentState = function () {
    if (document.visibilityState === "hidden") return "hidden";
    return document.hasFocus() ? "active" : "idle";
  };
  Timer.prototype.tick = function () {
    var now = performance.now();
    var elapsed = now - this.since;
    if (this.state === "active") this.active += elapsed;
    else if (this.state === "hidden") this.hidden += elapsed;
    this.since = now;
  };
  Timer.prototype.change = function () {
    this.tick();
    var next = this.currentState();
    if (this.state === "active" && next !== "active") this.blurs += 1;
    this.state = next;
    this.save();
  };
  Timer.prototype.save = function () {
    try {
      sessionStorage.setItem(this.key, JSON.stringify({ active: this.active, hidden: this.hidden, blurs: this.blurs }));
    } catch (e) { /* storage may be disabled: timing still goes with the form */ }
  };
  Timer.prototype.fill = function (form) {
    this.tick();
    this.save();
    form.elements._active_ms.value = String(Math.round(this.active));
    form.elements._hidden_ms.value = String(Math.round(this.hidden));
    form.elements._blurs.value = String(this.blurs);
  };

  var TYPING_GAP_MS = 2000;

  function Typing(key, box) {
    this.box = box;
    this.key = "rostrum-typing:" + key + ":" + box.name;
    var saved = null;
    try { saved = JSON.parse(sessionStorage.getItem(this.key) || "null"); } catch (e) { saved = null; }
    this.keys = (saved && saved.keys) || 0;
    this.pastes = (saved && saved.pastes) || 0;
    this.pasted = (saved && saved.pasted) || 0;
    this.typingMs = (saved && saved.typingMs) || 0;
    this.last = null;
    var self = this;
    box.addEventListener("keydown", function () { self.keyPressed(); });
    box.addEventListener("paste", function (event) {
      self.inserted(event.clipboardData ? event.clipboardData.getData("text").length : 0);
    });
    box.addEventListener("drop", function (event) {
      self.inserted(event.dataTransfer ? event.dataTransfer.getData("text").length : 0);
    });
  }
  Typing.prototype.keyPressed = function () {
    var now = performance.now();
    if (this.last !== null) this.typingMs += Math.min(now - this.last, TYPING_GAP_MS);
    this.last = now;
    this.keys += 1;
    this.save();
  };
  Typing.prototype.inserted = function (length) {
    this.pastes += 1;
    this.pasted += length;
    this.save();
  };
  Typing.prototype.save = function () {
    try {
      sessionStorage.setItem(this.key, JSON.stringify({
        keys: this.keys, pastes: this.pastes, pasted: this.pasted, typingMs: this.typingMs
      }));
    } catch (e) { /* storage may be disabled: the counts still go with the form */ }
  };
  Typing.prototype.fill = function (form) {
    var name = this.box.name;
    hidden(form, "_keys." + name, this.keys);
    hidden(form, "_pastes." + name, this.pastes);
    hidden(form, "_pasted." + name, this.pasted);
    hidden(form, "_typing_ms." + name, Math.round(this.typingMs));
  };

  function hidden(form, name, value) {
    var input = form.elements.namedItem(name);
    if (!input) {
      input = document.createElement("input");
      input.type = "hidden";
      input.name = name;
      form.appendChild(input);
    }
    input.value = String(value);
  }

  // The answer controls a draft keeps: not hidden fields, not the honeypot (outside the form,
  // joined to it by its form attribute).
  function answerControls(form) {
    return Array.prototype.filter.call(form.elements, function (el) {
      if (!el.name || el.name.charAt(0) === "_" || el.name === "csrfmiddlewaretoken") return false;
      if (el.type === "hidden" || el.type === "submit" || el.type === "button" || el.disabled) return false;
      return !el.closest(".hp-field") && form.contains(el);
    });
  }

  function Draft(key, form) {
    this.key = "rostrum-draft:" + key;
    this.form = form;
  }
  function isChoice(el) { return el.type === "radio" || el.type === "checkbox"; }
  // A control's answer, or null: an unchecked choice, an untouched slider, an empty box.
  function answerOf(el) {
    if (isChoice(el)) return el.checked ? el.value : null;
    if (el.type === "range") return el.hasAttribute("data-untouched") ? null : el.value;
    return el.value || null;
  }

  Draft.prototype.save = function () {
    var values = {};
    answerControls(this.form).forEach(function (el) {
      var answer = answerOf(el);
      if (answer === null) return;
      if (isChoice(el)) (values[el.name] = values[el.name] || []).push(answer);
      else values[el.name] = answer;
    });
    try { sessionStorage.setItem(this.key, JSON.stringify(values)); } catch (e) { /* storage off */ }
  };
  Draft.prototype.restore = function () {
    var values = null;
    try { values = JSON.parse(sessionStorage.getItem(this.key) || "null"); } catch (e) { values = null; }
    if (!values) return;
    var form = this.form;
    var controls = answerControls(form);
    var answered = function (name) {
      return controls.some(function (el) { return el.name === name && answerOf(el) !== null; });
    };
    Object.keys(values).forEach(function (name) {
      if (answered(name)) return; // the server's (or the browser's) own value stands
      controls.forEach(function (el) {
        if (el.name !== name) return;
        var saved = values[name];
        if (isChoice(el)) {
          el.checked = Array.isArray(saved) && saved.indexOf(el.value) !== -1;
          if (el.checked) el.dispatchEvent(new Event("change", { bubbles: true }));
        } else {
          el.value = saved;
          el.dispatchEvent(new Event("input", { bubbles: true }));
        }
      });
    });
  };
  // Drafts of earlier pages: their answers were accepted (this page is the next), or belong
  // to a page no longer current. Kept until now, not dropped when sent: a send that failed
  // (the network, an error page) and the back button find the draft again.
  Draft.prototype.forgetOthers = function () {
    try {
      for (var i = sessionStorage.length - 1; i >= 0; i--) {
        var key = sessionStorage.key(i);
        if (key && key.indexOf("rostrum-draft:") === 0 && key !== this.key) sessionStorage.removeItem(key);
      }
    } catch (e) { /* storage off */ }
  };

  function setUpForm(form) {
    var timer = new Timer(form.getAttribute("data-timing-key"));
    // One page of a step is one served page: a new page (of a multi-page step) counts afresh.
    var pageKey = form.getAttribute("data-timing-key") + ":" + (form.getAttribute("data-page-key") || "");
    var draft = new Draft(pageKey, form);
    draft.forgetOthers();
    if (!document.getElementById("errors")) draft.restore(); // shown again with errors: the answers are there
    form.addEventListener("input", function () { draft.save(); });
    form.addEventListener("change", function () { draft.save(); });
    var typings = Array.prototype.map.call(form.querySelectorAll("textarea[name]"), function (box) {
      return new Typing(pageKey, box);
    });
    var onChange = function () { timer.change(); };
    document.addEventListener("visibilitychange", onChange);
    window.addEventListener("focus", onChange);
    window.addEventListener("blur", onChange);
    window.addEventListener("pagehide", function () { timer.tick(); timer.save(); });
    setInterval(function () { timer.tick(); timer.save(); }, 5000);

    var submitting = false;
    form.addEventListener("submit", function (event) {
      if (submitting) { event.preventDefault(); return; }
      submitting = true;
      timer.fill(form);
      typings.forEach(function (typing) { typing.fill(form); });
      // Disable the buttons only after the browser has read the clicked one's value.
      setTimeout(function () {
        Array.prototype.forEach.call(form.querySelectorAll("button"), function (b) { b.disabled = true; });
      }, 0);
    });
  }

  // A page restored from the back-forward cache must not keep its buttons disabled.
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) window.location.reload();
  });

  function setUpSliders() {
    Array.prototype.forEach.call(document.querySelectorAll('input[type="range"]'), function (input) {
      var output = document.querySelector('output[for="' + input.id + '"]');
      var touched = input.form && input.form.elements[input.name + "__touched"];
      var show = function () {
        if (!output) return;
        var untouched = input.hasAttribute("data-untouched");
        var notice = say("slider_untouched", "Move the slider to answer");
        output.textContent = untouched ? notice : input.value;
        output.classList.toggle("untouched", untouched);
        // A screen reader read an untouched slider as answered ("50"): say it is not, yet.
        if (untouched) input.setAttribute("aria-valuetext", notice);
        else input.removeAttribute("aria-valuetext");
      };
      var touch = function () {
        input.removeAttribute("data-untouched");
        if (touched) touched.value = "1";
        show();
      };
      input.addEventListener("input", touch);
      input.addEventListener("change", touch);
      input.addEventListener("pointerdown", touch);
      input.addEventListener("keydown", function (event) {
        if (/^(Arrow|Page|Home|End)/.test(event.key)) touch();
      });
      show();
    });
  }

  // Questions that only apply after a particular answer ("If yes: which side?").
  function setUpConditionalFields() {
    Array.prototype.forEach.call(document.querySelectorAll("[data-show-if]"), function (block) {
      var parts = block.getAttribute("data-show-if").split("=");
      var form = block.closest("form");
      if (!form || parts.length !== 2) return;
      var update = function () {
        var chosen = form.querySelector('input[name="' + parts[0] + '"]:checked');
        block.hidden = !(chosen && chosen.value === parts[1]);
      };
      form.addEventListener("change", update);
      update();
    });
  }

  // Drop ?moved=1 once its notice has been shown, so a refresh does not repeat it.
  function forgetMovedNotice() {
    if (window.location.search.indexOf("moved=1") !== -1 && window.history.replaceState) {
      window.history.replaceState(null, "", window.location.pathname);
    }
  }

  function setUpCounters() {
    Array.prototype.forEach.call(document.querySelectorAll(".counter[data-for]"), function (note) {
      var box = document.getElementById(note.getAttribute("data-for"));
      var min = parseInt(note.getAttribute("data-min"), 10) || 0;
      if (!box) return;
      var show = function () {
        var n = box.value.trim().length;
        note.textContent = n >= min
          ? say("counter_enough", "%(count)s characters — enough.", { count: n })
          : say("counter_short", "%(count)s of at least %(min)s characters.", { count: n, min: min });
        note.classList.toggle("ok", n >= min);
      };
      box.addEventListener("input", show);
      show();
    });
  }

  // A box with a character limit (maxlength) silently cut a longer paste: say so when it is full.
  function setUpLimits() {
    var boxes = document.querySelectorAll('textarea[maxlength], input[type="text"][maxlength]');
    Array.prototype.forEach.call(boxes, function (box) {
      var max = parseInt(box.getAttribute("maxlength"), 10);
      if (!box.id || !max || box.closest(".hp-field")) return;
      var note = document.createElement("p");
      note.className = "limit-note";
      note.id = box.id + "_limit";
      note.hidden = true;
      var after = document.querySelector('.counter[data-for="' + box.id + '"]') || box;
      after.parentNode.insertBefore(note, after.nextSibling);
      var described = (box.getAttribute("aria-describedby") || "").split(" ").filter(Boolean);
      box.setAttribute("aria-describedby", described.concat([note.id]).join(" "));
      var show = function () {
        var full = box.value.length >= max;
        if (full) note.textContent = say("limit", "This box holds at most %(max)s characters: anything beyond that was not kept.", { max: max });
        note.hidden = !full;
      };
      box.addEventListener("input", show);
      show();
    });
  }

  function setUpProgress() {
    var fill = document.querySelector(".progress-fill[data-width]");
    if (fill) fill.style.width = fill.getAttribute("data-width") + "%";
  }

  function focusErrors() {
    var errors = document.getElementById("errors");
    if (errors) errors.focus();
  }

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.querySelector("form.step-form[data-timing-key]");
    setUpSliders();
    setUpConditionalFields();
    setUpCounters();
    setUpLimits();
    if (form) setUpForm(form); // after the others: a restored draft fires their events
    forgetMovedNotice();
    setUpProgress();
    focusErrors();
  });
})();
