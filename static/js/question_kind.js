/* A questionnaire item's form shows only the fields of its kind: options for single choice
   and Likert (and a slider's two end labels), bounds for numbers and sliders, a minimum
   length for free text, an expected answer (attention check) for every kind but free text.
   Runs on the step page's Question rows, new rows included. A static file (the admin's CSP). */
(function () {
  "use strict";

  var FIELDS = {
    single_choice: ["options", "specify_option", "expected_answer"],
    likert: ["options", "expected_answer"],
    slider: ["options", "min_value", "expected_answer"],
    number: ["min_value", "expected_answer"],
    text: ["min_length"],
  };
  var OPTIONAL = ["options", "specify_option", "min_value", "min_length", "expected_answer"];

  function apply(select) {
    var form = select.closest(".inline-related");
    if (!form) return;
    var shown = FIELDS[select.value];
    OPTIONAL.forEach(function (name) {
      var row = form.querySelector(".form-row.field-" + name);
      if (row) row.hidden = Boolean(shown) && shown.indexOf(name) === -1;
    });
  }

  function kinds(root) {
    return root.querySelectorAll('select[name^="questions-"][name$="-kind"]');
  }

  document.addEventListener("change", function (event) {
    if (event.target.matches('select[name^="questions-"][name$="-kind"]')) apply(event.target);
  });
  document.addEventListener("formset:added", function (event) {
    kinds(event.target).forEach(apply);
  });
  document.addEventListener("DOMContentLoaded", function () {
    kinds(document).forEach(apply);
  });
})();
