/* The study page's steps: ↑ and ↓ move a step's row; every row's hidden position then
   follows the order of the table, and the study is saved with the page's Save button.
   Rows added with "Add another Step" are numbered too. A static file, no inline script
   (the admin's CSP). Without JavaScript, steps keep their order and new ones go last. */
(function () {
  "use strict";

  function rows(body) {
    return Array.prototype.filter.call(body.querySelectorAll("tr.form-row"), function (row) {
      return !row.classList.contains("empty-form") && row.querySelector('input[name$="-position"]');
    });
  }

  function renumber(body) {
    rows(body).forEach(function (row, index) {
      var n = String(index + 1);
      row.querySelector('input[name$="-position"]').value = n;
      var label = row.querySelector("td.original p");
      if (label && /^\s*\d+\./.test(label.firstChild && label.firstChild.nodeValue || "")) {
        label.firstChild.nodeValue = label.firstChild.nodeValue.replace(/^(\s*)\d+\./, "$1" + n + ".");
      }
    });
  }

  function group() {
    return document.getElementById("steps-group");
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest(".rostrum-move");
    if (!button) return;
    event.preventDefault();
    var row = button.closest("tr.form-row");
    var body = row.parentNode;
    var list = rows(body);
    var at = list.indexOf(row);
    var up = button.getAttribute("data-move") === "up";
    var other = list[up ? at - 1 : at + 1];
    if (!other) return;
    body.insertBefore(row, up ? other : other.nextSibling);
    renumber(body);
    button.focus();
  });

  document.addEventListener("formset:added", function (event) {
    var box = group();
    if (box && box.contains(event.target)) renumber(box.querySelector("tbody"));
  });

  document.addEventListener("DOMContentLoaded", function () {
    var box = group();
    if (!box) return;
    // A frozen study's steps are shown read-only: nothing to move.
    box.querySelectorAll("tr.form-row").forEach(function (row) {
      if (!row.querySelector('input[name$="-position"]')) {
        row.querySelectorAll(".rostrum-order").forEach(function (el) { el.remove(); });
      }
    });
  });
})();
