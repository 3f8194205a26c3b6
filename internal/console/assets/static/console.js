// The console's one script, loaded from the server (the page's
// Content-Security-Policy allows no inline script). Everything works
// without it; it adds a confirmation before deleting and an automatic
// refresh that the browser remembers for the tab.
"use strict";

document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      if (!window.confirm(form.getAttribute("data-confirm"))) {
        ev.preventDefault();
      }
    });
  });

  var box = document.getElementById("autorefresh");
  if (!box) {
    return;
  }
  var key = "mcpe-console-autorefresh";
  var timer = null;
  function arm() {
    if (timer !== null) {
      window.clearTimeout(timer);
      timer = null;
    }
    if (box.checked) {
      timer = window.setTimeout(function () { window.location.reload(); }, 5000);
    }
  }
  box.checked = window.sessionStorage.getItem(key) === "on";
  box.addEventListener("change", function () {
    window.sessionStorage.setItem(key, box.checked ? "on" : "off");
    arm();
  });
  arm();
});
