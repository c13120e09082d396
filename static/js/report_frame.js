// The report's frame in the admin as tall as the report it shows, so the figures and tables
// are read by scrolling the page, not a box 720 pixels high inside it (the researcher walk:
// what showed ended at the sample flow). The report is served from this site, so its height
// can be read; should it not be, the frame keeps the stylesheet's height.
(function () {
  "use strict";
  var frame = document.querySelector(".rostrum-report-frame");
  if (!frame) return;

  function fit() {
    try {
      var root = frame.contentDocument && frame.contentDocument.documentElement;
      if (root) frame.style.height = root.scrollHeight + 24 + "px";
    } catch (e) {
      /* not readable: the stylesheet's height stands */
    }
  }

  function follow() {
    fit();
    try {
      // Images load after the page: the height follows them.
      if (window.ResizeObserver) new ResizeObserver(fit).observe(frame.contentDocument.body);
    } catch (e) {
      /* as above */
    }
  }

  frame.addEventListener("load", follow);
  // This script is deferred: the report may have loaded before it ran (its load event gone).
  try {
    var doc = frame.contentDocument;
    if (doc && doc.readyState === "complete" && doc.URL !== "about:blank") follow();
  } catch (e) {
    /* as above */
  }
})();
