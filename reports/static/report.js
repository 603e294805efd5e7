/* hpubench report: draw the embedded plotly charts, make tables sortable and filterable. No network. */
(function () {
  "use strict";

  function drawCharts() {
    var specs = document.querySelectorAll("script[data-chart-for]");
    Array.prototype.forEach.call(specs, function (el) {
      var div = document.getElementById(el.getAttribute("data-chart-for"));
      var spec = JSON.parse(el.textContent);
      window.Plotly.newPlot(div, spec.data, spec.layout, {
        displaylogo: false,
        responsive: true,
        // two buttons, not nine: the bar leaves the chart's title readable at a phone's width (drag still zooms)
        modeBarButtons: [["toImage", "resetScale2d"]],
        toImageButtonOptions: { format: "png", scale: 2 }
      });
    });
  }

  // A cell sorts by its data-v attribute where it has one (raw numbers), else by its text.
  function sortValue(row, index) {
    var cell = row.cells[index];
    if (!cell) return "";
    var v = cell.getAttribute("data-v");
    return v === null ? cell.textContent.trim() : v;
  }

  function compareValues(a, b) {
    var x = Number(a), y = Number(b);
    if (isFinite(x) && isFinite(y)) return x - y;
    return a.localeCompare(b, undefined, { numeric: true, sensitivity: "base" });
  }

  function sortTable(table, index, header) {
    var dir = header.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      th.removeAttribute("aria-sort");
    });
    header.setAttribute("aria-sort", dir);
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var a = sortValue(r1, index), b = sortValue(r2, index);
      if (a === "" || b === "") return a === b ? 0 : a === "" ? 1 : -1; // missing values last, both ways
      var c = compareValues(a, b);
      return dir === "ascending" ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }

  function makeSortable(table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      th.tabIndex = 0;
      th.addEventListener("click", function () { sortTable(table, index, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          sortTable(table, index, th);
        }
      });
    });
  }

  // Every whitespace-separated term must occur somewhere in the row's text.
  function makeFilter(input) {
    var table = document.getElementById(input.getAttribute("data-filter-for"));
    var counter = document.getElementById(input.getAttribute("data-count-in"));
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    function apply() {
      var terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      var shown = 0;
      rows.forEach(function (row) {
        var text = row.textContent.toLowerCase();
        var keep = terms.every(function (t) { return text.indexOf(t) >= 0; });
        row.hidden = !keep;
        if (keep) shown += 1;
      });
      if (counter) counter.textContent = shown + " of " + rows.length + " rows";
    }
    input.addEventListener("input", apply);
    apply();
  }

  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), makeSortable);
  Array.prototype.forEach.call(document.querySelectorAll("input[data-filter-for]"), makeFilter);
  drawCharts();
})();
