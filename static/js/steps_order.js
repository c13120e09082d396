/* Rows whose place is their position: a study page's steps (a table) and a step page's
   questions (stacked forms). ↑ and ↓ move a row; every row's hidden position then follows
   the order on the page, and it is saved with the page's Save button. Rows added with
   "Add another …" are numbered too. A static file, no inline script (the admin's CSP).
   Without JavaScript, rows keep their order and new ones go last. */
(function () {
  "use strict";

  var GROUPS = ["steps-group", "questions-group"];

  function rowOf(element) {
    return element.closest("tr.form-row, div.inline-related");
  }

  function rows(container) {
    return Array.prototype.filter.call(
      container.querySelectorAll("tr.form-row, div.inline-related"),
      function (row) {
        return row.parentNode === container && !row.classList.contains("empty-form") &&
          row.querySelector('input[name$="-position"]');
      }
    );
  }

  function renumber(container) {
    rows(container).forEach(function (row, index) {
      var n = String(index + 1);
      row.querySelector('input[name$="-position"]').value = n;
      var label = row.querySelector("td.original p");
      if (label && /^\s*\d+\./.test(label.firstChild && label.firstChild.nodeValue || "")) {
        label.firstChild.nodeValue = label.firstChild.nodeValue.replace(/^(\s*)\d+\./, "$1" + n + ".");
      }
    });
  }

  function groups() {
    return GROUPS.map(function (id) { return document.getElementById(id); }).filter(Boolean);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest(".rostrum-move");
    if (!button) return;
    event.preventDefault();
    var row = rowOf(button);
    if (!row) return;
    var container = row.parentNode;
    var list = rows(container);
    var at = list.indexOf(row);
    var up = button.getAttribute("data-move") === "up";
    var other = list[up ? at - 1 : at + 1];
    if (!other) return;
    container.insertBefore(row, up ? other : other.nextSibling);
    renumber(container);
    button.focus();
  });

  document.addEventListener("formset:added", function (event) {
    groups().forEach(function (box) {
      var row = rowOf(event.target);
      if (box.contains(event.target) && row) renumber(row.parentNode);
    });
  });

  document.addEventListener("DOMContentLoaded", function () {
    groups().forEach(function (box) {
      // Frozen rows are shown read-only: nothing to move.
      box.querySelectorAll("tr.form-row, div.inline-related").forEach(function (row) {
        if (!row.querySelector('input[name$="-position"]')) {
          row.querySelectorAll(".rostrum-order").forEach(function (el) { el.remove(); });
        }
      });
    });
  });
})();
