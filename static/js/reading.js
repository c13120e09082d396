/* Re-reading time on a page that offers the debate again (the judgement page).
 *
 * Counts the time the folded debate (<details data-reread="FIELD">) is open, on screen
 * (at least partly in the viewport), and the page visible with the window focused. The total
 * survives a refresh of the same step (sessionStorage) and is sent with the form in the
 * hidden input FIELD. The server caps it by its own time on the page and adds it to the
 * reading time behind the words-per-minute figure.
 */
(function () {
  "use strict";

  var form = document.getElementById("step-form");
  var recap = document.querySelector("details[data-reread]");
  if (!form || !recap) return;
  var field = form.elements[recap.getAttribute("data-reread")];
  if (!field) return;

  var key = "rostrum-reread:" + (form.getAttribute("data-timing-key") || "");
  var total = 0;
  try { total = Number(sessionStorage.getItem(key)) || 0; } catch (e) { total = 0; }
  var onScreen = !("IntersectionObserver" in window);
  var since = null;

  function counting() {
    return recap.open && onScreen && document.visibilityState === "visible" && document.hasFocus();
  }

  function update() {
    var now = performance.now();
    if (since !== null) total += now - since;
    since = counting() ? now : null;
    try { sessionStorage.setItem(key, String(Math.round(total))); } catch (e) { /* still sent with the form */ }
    field.value = String(Math.round(total));
  }

  if (!onScreen) {
    new IntersectionObserver(function (entries) {
      onScreen = entries[entries.length - 1].isIntersecting;
      update();
    }).observe(recap);
  }
  recap.addEventListener("toggle", update);
  document.addEventListener("visibilitychange", update);
  window.addEventListener("focus", update);
  window.addEventListener("blur", update);
  window.addEventListener("pagehide", update);
  form.addEventListener("submit", update);
  update();
})();
