// Sorting and filtering of the layer tables. The charts are inline SVG and need no script.
(function () {
  "use strict";
  function value(td, numeric) {
    var v = td ? td.getAttribute("data-v") : "";
    if (!numeric) return (v || "").toLowerCase();
    if (v === null || v === "") return null;
    var x = parseFloat(v);
    return isNaN(x) ? null : x;
  }
  function sortBy(table, th) {
    var col = +th.getAttribute("data-col");
    var numeric = th.getAttribute("data-num") === "1";
    var asc = th.getAttribute("aria-sort") !== "ascending";
    if (numeric && th.getAttribute("aria-sort") === "none") asc = col === 0;
    var ths = table.tHead.rows[0].cells;
    for (var i = 0; i < ths.length; i++) ths[i].setAttribute("aria-sort", "none");
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.forEach(function (r, i) { r._i = i; });
    rows.sort(function (a, b) {
      var x = value(a.cells[col], numeric), y = value(b.cells[col], numeric);
      if (x === null && y === null) return a._i - b._i;
      if (x === null) return 1;   // empty cells last, either way
      if (y === null) return -1;
      var c = x < y ? -1 : x > y ? 1 : 0;
      return (asc ? c : -c) || a._i - b._i;
    });
    var frag = document.createDocumentFragment();
    rows.forEach(function (r) { frag.appendChild(r); });
    body.appendChild(frag);
  }
  function applyFilter(box) {
    var table = document.getElementById(box.getAttribute("data-for"));
    if (!table) return;
    var text = box.querySelector(".f-text");
    var bound = box.querySelector(".f-bound");
    var merged = box.querySelector(".f-merged");
    var q = text ? text.value.trim().toLowerCase() : "";
    var b = bound ? bound.value : "";
    var hide = merged ? merged.checked : false;
    var rows = table.tBodies[0].rows, shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i];
      var bounds = (r.getAttribute("data-bounds") || "").split(" ").filter(Boolean);
      var ok = true;
      if (q) ok = (r.textContent + " " + bounds.join(" ")).toLowerCase().indexOf(q) >= 0;
      if (ok && b) ok = bounds.indexOf(b) >= 0;
      if (ok && hide) {
        var busy = bounds.filter(function (x) { return x !== "fused" && x !== "elided"; });
        ok = r.getAttribute("data-status") !== "folded" && (bounds.length === 0 || busy.length > 0);
      }
      r.hidden = !ok;
      if (ok) shown++;
    }
    var count = box.querySelector(".f-count");
    if (count) count.textContent = shown + " of " + rows.length + " layers";
  }
  var tables = document.querySelectorAll("table.sortable");
  Array.prototype.forEach.call(tables, function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      th.addEventListener("click", function () { sortBy(table, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, th); }
      });
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll(".filters"), function (box) {
    Array.prototype.forEach.call(box.querySelectorAll("input, select"), function (el) {
      el.addEventListener("input", function () { applyFilter(box); });
      el.addEventListener("change", function () { applyFilter(box); });
    });
  });
  document.documentElement.setAttribute("data-ready", "1");
})();
