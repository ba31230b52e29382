/* Sortable tables: click a header of a table with class "eg-sortable" to sort by that column
   (numbers numerically, text alphabetically); click again to reverse. No dependencies. */
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
  function init() {
    document.querySelectorAll("table.eg-sortable").forEach(function (table) {
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
        th.style.cursor = "pointer";
        th.addEventListener("click", function () { sortBy(table, column, th); });
      });
    });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", init); } else { init(); }
})();
