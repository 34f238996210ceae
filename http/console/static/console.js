// quan console: the little JavaScript the pages need. Everything works
// without it except what is live (progress, preview, charts).
(function () {
  "use strict";
  var body = document.body;
  var csrf = body.getAttribute("data-csrf") || "";

  // Times are shown in the browser's time zone: tell the server once.
  var zone = "";
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) {}
  if (zone && document.cookie.indexOf("quan_tz=") < 0) {
    document.cookie = "quan_tz=" + encodeURIComponent(zone) + "; path=/console; max-age=31536000; samesite=lax";
    if (zone !== body.getAttribute("data-zone")) { location.reload(); return; }
  }

  document.querySelectorAll("form[data-confirm]").forEach(function (f) {
    f.addEventListener("submit", function (e) {
      if (!window.confirm(f.getAttribute("data-confirm"))) { e.preventDefault(); }
    });
  });

  // get returns the value at a dotted path of an object.
  function get(obj, path) {
    return path.split(".").reduce(function (o, k) { return o == null ? undefined : o[k]; }, obj);
  }

  // show fills the elements of root bound to a snapshot: data-field sets
  // the text, data-value a progress or meter's value, data-max its max,
  // data-show="path" shows an element while the value is true.
  function show(root, snap) {
    root.querySelectorAll("[data-field]").forEach(function (el) {
      var v = get(snap, el.getAttribute("data-field"));
      if (v !== undefined && v !== null) { el.textContent = v; }
    });
    root.querySelectorAll("[data-value]").forEach(function (el) {
      var v = get(snap, el.getAttribute("data-value"));
      if (v !== undefined) { el.value = v; }
      var m = el.getAttribute("data-max");
      if (m) { var mv = get(snap, m); if (mv) { el.max = mv; } }
    });
    root.querySelectorAll("[data-show]").forEach(function (el) {
      el.hidden = !get(snap, el.getAttribute("data-show"));
    });
  }
  window.quanShow = show;

  // Live sections: [data-events] streams snapshots as Server-Sent Events.
  document.querySelectorAll("[data-events]").forEach(function (root) {
    var es = new EventSource(root.getAttribute("data-events"));
    es.addEventListener("snapshot", function (e) {
      var snap = JSON.parse(e.data);
      show(root, snap);
      root.dispatchEvent(new CustomEvent("quan:snapshot", { detail: snap }));
    });
    es.addEventListener("end", function () {
      es.close();
      root.setAttribute("data-ended", "true");
      root.dispatchEvent(new CustomEvent("quan:end"));
      if (root.hasAttribute("data-reload-on-end")) { location.reload(); }
    });
  });

  // The template form: show the inputs of the chosen kind, scope and
  // validity, and preview the discount on the example order.
  var tf = document.getElementById("template-form");
  if (tf) {
    var pick = function (attr, value) {
      tf.querySelectorAll("[" + attr + "]").forEach(function (el) {
        el.hidden = el.getAttribute(attr).split(" ").indexOf(value) < 0;
      });
    };
    var out = document.getElementById("preview-out");
    var timer = 0;
    var preview = function () {
      var data = new URLSearchParams(new FormData(tf));
      fetch("/console/templates/preview", { method: "POST", body: data, headers: { "X-CSRF-Token": csrf }, credentials: "same-origin" })
        .then(function (r) { return r.json(); })
        .then(function (p) { out.textContent = p.error || p.text; out.classList.toggle("field-error", !!p.error); })
        .catch(function () {});
    };
    var update = function () {
      pick("data-kinds", tf.elements["kind"].value);
      pick("data-scopes", tf.elements["scope.type"].value);
      pick("data-validity", tf.elements["validity.type"].value);
      clearTimeout(timer);
      timer = setTimeout(preview, 150);
    };
    tf.addEventListener("input", update);
    tf.addEventListener("change", update);
    update();
  }

  // Charts: [data-chart] holds the id of a JSON block
  // {"x": [unix seconds], "series": [{"label": "...", "values": [...]}]}.
  window.quanChart = function (el, data) {
    if (!window.uPlot) { return null; }
    el.textContent = "";
    var colors = ["#c7302c", "#1a5fd0", "#1f7a3e", "#9a6700", "#6b3fa0", "#444"];
    var series = [{}].concat(data.series.map(function (s, i) {
      return { label: s.label, stroke: colors[i % colors.length], width: 2 };
    }));
    var opts = { width: Math.max(300, el.clientWidth), height: 300, series: series, axes: [{}, {}] };
    var plot = new window.uPlot(opts, [data.x].concat(data.series.map(function (s) { return s.values; })), el);
    el.setAttribute("data-drawn", "true");
    window.addEventListener("resize", function () { plot.setSize({ width: Math.max(300, el.clientWidth), height: 300 }); });
    return plot;
  };
  document.querySelectorAll("[data-chart]").forEach(function (el) {
    var src = document.getElementById(el.getAttribute("data-chart"));
    if (src) { window.quanChart(el, JSON.parse(src.textContent)); }
  });
})();
