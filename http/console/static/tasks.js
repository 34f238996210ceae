// quan console: the task page. console.js binds the snapshot's fields;
// this keeps the status badge's colour in step with its text.
(function () {
  "use strict";
  var live = document.getElementById("task-live");
  if (!live) { return; }
  live.addEventListener("quan:snapshot", function (e) {
    var badge = live.querySelector("[data-status]");
    if (badge && e.detail.status) { badge.className = "status status-" + e.detail.status; }
  });
})();
