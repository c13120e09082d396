/* The live progress of an LLM job on its admin page: polls the job's progress endpoint
   (data-progress-url) every 2 s and updates the bar and the counts; stops once the job
   has ended (done or cancelled). */
(function () {
  "use strict";
  var box = document.getElementById("job-progress");
  if (!box) return;
  var url = box.getAttribute("data-progress-url");
  var ENDED = { done: true, cancelled: true };

  function show(p) {
    box.querySelectorAll("[data-field]").forEach(function (el) {
      var name = el.getAttribute("data-field");
      if (name === "fill") el.style.width = p.percent + "%";
      else if (name === "bar") el.setAttribute("aria-valuenow", p.percent);
      else if (name in p) el.textContent = p[name] === null ? "?" : p[name];
    });
    box.setAttribute("data-status", p.status);
  }

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (p) {
        if (p) show(p);
        if (!p || !ENDED[p.status]) setTimeout(poll, 2000);
      })
      .catch(function () { setTimeout(poll, 2000); });
  }
  poll();
})();
