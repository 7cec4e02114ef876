// On a narrow screen every table reads as a stack of cards, one a row, each
// cell a line "Label: value" (app.css, "narrow screens"). The labels are the
// column headers: this copies each header's words onto its column's cells
// as data-label, on load and after every htmx swap (a row that arrives by
// itself comes without them), so that no template repeats its headers and a
// new column is labelled without anyone remembering to. A table it labelled
// is marked table-stack; without JavaScript a table keeps its header row and
// scrolls sideways inside its card.
(function () {
  function label(table) {
    var head = table.tHead && table.tHead.rows[0];
    if (!head) {
      return;
    }
    var names = [];
    Array.prototype.forEach.call(head.cells, function (th) {
      for (var i = 0; i < th.colSpan; i++) {
        names.push(th.textContent.replace(/\s+/g, " ").trim());
      }
    });
    Array.prototype.forEach.call(table.tBodies, function (body) {
      Array.prototype.forEach.call(body.rows, function (tr) {
        var col = 0;
        Array.prototype.forEach.call(tr.cells, function (cell) {
          if (!cell.hasAttribute("data-label")) {
            cell.setAttribute("data-label", names[col] || "");
          }
          col += cell.colSpan;
        });
      });
    });
    table.classList.add("table-stack");
  }
  function labelAll() {
    document.querySelectorAll("table.table").forEach(label);
  }
  labelAll();
  document.addEventListener("htmx:afterSwap", labelAll);
})();
