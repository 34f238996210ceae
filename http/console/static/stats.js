// quan console: the live template page. console.js binds each snapshot's
// plain fields (data-field); this draws what it cannot: the rolling
// chart of claims a second, the rates rounded, and rows for refusal codes
// the page did not know when it was rendered.
(function () {
  "use strict";
  var root = document.getElementById("live");
  if (!root) { return; }
  var labels = {};
  var lb = document.getElementById("live-labels");
  if (lb) { try { labels = JSON.parse(lb.textContent) || {}; } catch (e) {} }
  var chartEl = document.getElementById("live-chart");
  var tbody = document.querySelector("#live-refusals tbody");
  var plot = null;

  root.addEventListener("quan:snapshot", function (e) {
    var s = e.detail;
    root.querySelectorAll("[data-rate]").forEach(function (el) {
      var v = Number(el.textContent);
      if (!isNaN(v)) { el.textContent = v.toFixed(1); }
    });
    if (tbody && s.refusals) {
      Object.keys(s.refusals).sort().forEach(function (code) {
        var cell = tbody.querySelector('[data-field="refusals.' + code + '"]');
        if (!cell) {
          var tr = document.createElement("tr");
          var th = document.createElement("th");
          th.scope = "row";
          th.textContent = (labels[code] || code) + " ";
          var c = document.createElement("code");
          c.textContent = code;
          th.appendChild(c);
          cell = document.createElement("td");
          cell.className = "num";
          cell.setAttribute("data-field", "refusals." + code);
          tr.appendChild(th);
          tr.appendChild(cell);
          tbody.appendChild(tr);
        }
        cell.textContent = s.refusals[code];
      });
    }
    if (!chartEl || !s.chart || !window.quanChart) { return; }
    var data = [s.chart.x, s.chart.claims, s.chart.refused];
    if (plot) { plot.setData(data); return; }
    plot = window.quanChart(chartEl, { x: s.chart.x, series: [
      { label: labels.claims || "claims/s", values: s.chart.claims },
      { label: labels.refused || "refused/s", values: s.chart.refused }
    ] });
  });
})();
