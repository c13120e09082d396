/* Copy buttons in the admin (the Prolific study URL on the study page): a button with
   data-copy="#id" copies that field's value to the clipboard and says so. A static file,
   no inline script (the admin's CSP). */
(function () {
  "use strict";

  function done(button, text) {
    var label = button.getAttribute("data-label") || button.textContent;
    button.setAttribute("data-label", label);
    button.textContent = text;
    setTimeout(function () { button.textContent = label; }, 2000);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    event.preventDefault();
    var field = document.querySelector(button.getAttribute("data-copy"));
    if (!field) return;
    field.select();
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(
        function () { done(button, "Copied"); },
        function () { done(button, document.execCommand("copy") ? "Copied" : "Press Ctrl+C"); }
      );
    } else {
      done(button, document.execCommand("copy") ? "Copied" : "Press Ctrl+C");
    }
  });
})();
