/* Rows of a table field in the admin (studies/rows.py): "Add a …" appends a blank row from
   the row template and counts it in the formset's TOTAL_FORMS; a numbered list (evidence
   units) gets the next number. Without JavaScript the table still works: it always shows
   one blank row. A static file, no inline script (the admin's CSP). */
(function () {
  "use strict";

  function addRow(box) {
    var prefix = box.getAttribute("data-prefix");
    var total = box.querySelector('input[name="' + prefix + '-TOTAL_FORMS"]');
    var template = box.querySelector("template.rostrum-empty-row");
    var body = box.querySelector("tbody");
    if (!total || !template || !body) return;
    var index = Number(total.value);
    body.insertAdjacentHTML("beforeend", template.innerHTML.replace(/__prefix__/g, String(index)));
    total.value = String(index + 1);
    var row = body.lastElementChild;
    var number = String(body.children.length);
    row.querySelector(".rostrum-row-number").textContent = number;
    row.querySelectorAll(".rostrum-n").forEach(function (span) { span.textContent = " " + number; });
    var own = numberInput(box, row);
    if (own) own.value = String(highestNumber(box) + 1);
    var first = row.querySelector("input:not([type=hidden]):not([type=checkbox]), textarea, select");
    if (first) first.focus();
  }

  function numberInput(box, row) {
    var numbered = box.getAttribute("data-autonumber");
    return numbered ? row.querySelector('input[name$="-' + numbered + '"]') : null;
  }

  function highestNumber(box) {
    var highest = 0;
    box.querySelectorAll("tbody .rostrum-row").forEach(function (row) {
      var input = numberInput(box, row);
      var n = input ? parseInt(input.value, 10) : NaN;
      if (!isNaN(n) && n > highest) highest = n;
    });
    return highest;
  }

  // An empty numbered list (a new case's evidence) starts at 1 in its blank row; a row with
  // only its number is still blank, and ignored (studies/rows.py).
  function numberBlankRows(box) {
    if (highestNumber(box) > 0) return;
    box.querySelectorAll("tbody .rostrum-row").forEach(function (row) {
      var input = numberInput(box, row);
      if (input && input.value === "") input.value = String(highestNumber(box) + 1);
    });
  }

  function ready() {
    document.querySelectorAll(".rostrum-rows[data-autonumber]").forEach(numberBlankRows);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready);
  else ready();

  document.addEventListener("click", function (event) {
    var button = event.target.closest(".rostrum-add-row");
    if (!button) return;
    event.preventDefault();
    addRow(button.closest(".rostrum-rows"));
  });
})();
