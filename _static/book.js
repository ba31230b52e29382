/* Sortable tables: click a header of a table with class "eg-sortable" to sort by that column
   (numbers numerically, text alphabetically); click again to reverse.
   Filtered tables: in a ".eg-dashboard", each select box with data-filter="<name>" keeps only the
   rows whose data-<name> attribute equals its value (an empty value keeps every row), and the
   ".eg-filter-count" says how many rows are shown.
   Folded sections: a link to an element inside a closed <details> (a claim's card) opens it.
   No dependencies. */
(function () {
  function key(cell) {
    var text = cell.textContent.trim();
    var number = parseFloat(text);
    return isNaN(number) ? text.toLowerCase() : number;
  }
  function sortBy(table, column, header) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    rows.sort(function (a, b) {
      var x = key(a.cells[column]), y = key(b.cells[column]);
      if (typeof x !== typeof y) { x = String(x); y = String(y); }
      return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }
  function filterRows(board) {
    var selects = Array.prototype.slice.call(board.querySelectorAll("select[data-filter]"));
    var rows = board.querySelectorAll("table tbody tr");
    var shown = 0;
    Array.prototype.forEach.call(rows, function (row) {
      var keep = selects.every(function (select) {
        return !select.value || row.getAttribute("data-" + select.getAttribute("data-filter")) === select.value;
      });
      row.hidden = !keep;
      if (keep) { shown += 1; }
    });
    var count = board.querySelector(".eg-filter-count");
    if (count) { count.textContent = shown + " of " + rows.length + " claims"; }
  }
  function unfoldTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (!target) { return; }
    for (var node = target.parentElement; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") { node.open = true; }
    }
    target.scrollIntoView();
  }
  function init() {
    unfoldTarget();
    window.addEventListener("hashchange", unfoldTarget);
    document.querySelectorAll("table.eg-sortable").forEach(function (table) {
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
        th.style.cursor = "pointer";
        th.addEventListener("click", function () { sortBy(table, column, th); });
      });
    });
    document.querySelectorAll(".eg-dashboard").forEach(function (board) {
      board.querySelectorAll("select[data-filter]").forEach(function (select) {
        select.addEventListener("change", function () { filterRows(board); });
      });
      filterRows(board);  // a browser may restore a selection on reload
    });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", init); } else { init(); }
})();
