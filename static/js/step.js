/* Rostrum step pages: reading-time measurement and small conveniences.
 *
 * Active time counts only while the page is visible and the window has focus; hidden
 * time counts while the tab is in the background. Both survive a refresh of the same
 * step (sessionStorage), and are sent with the form as _active_ms, _hidden_ms, _blurs.
 * The server keeps its own clock too; the browser's figures are a second opinion.
 */
(function () {
  "use strict";

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

  function setUpForm(form) {
    var timer = new Timer(form.getAttribute("data-timing-key"));
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
        output.textContent = untouched ? "Move the slider to answer" : input.value;
        output.classList.toggle("untouched", untouched);
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
        note.textContent = n >= min ? n + " characters — enough." : n + " of at least " + min + " characters.";
        note.classList.toggle("ok", n >= min);
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
    if (form) setUpForm(form);
    setUpSliders();
    setUpConditionalFields();
    forgetMovedNotice();
    setUpCounters();
    setUpProgress();
    focusErrors();
  });
})();
