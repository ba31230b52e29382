/* Charts that fit their column. Before a chart is embedded, egFit adapts its Vega-Lite spec to the
   width of the column it sits in: side-by-side panels wrap into as many columns as fit, views wider
   than the column are narrowed, and legends wrap into rows. After rendering, egShrink scales down
   whatever is still wider (a heatmap with many fixed-size cells), keeping its proportions. */
(function () {
  var PADDING = 90;   // axis labels, titles and legends around a view's plotting area
  var SPACING = 20;   // Vega-Lite's default spacing between concatenated views
  var DEFAULT_WIDTH = 560;  // the book theme's continuousWidth

  function viewWidth(view) {
    if (typeof view.width === "number") return view.width;
    if (view.layer) return Math.max.apply(null, view.layer.map(viewWidth).concat([0])) || DEFAULT_WIDTH;
    if (view.width && view.width.step) return null;  // sized by its data: left to egShrink
    return DEFAULT_WIDTH;
  }

  function narrow(view, available) {
    var width = viewWidth(view);
    if (width !== null && width + PADDING > available) {
      view.width = Math.max(120, available - PADDING);
      (view.layer || []).forEach(function (layer) { if (typeof layer.width === "number") delete layer.width; });
    }
  }

  function wrap(spec, parts, available) {
    var widths = parts.map(function (part) { return (viewWidth(part) || DEFAULT_WIDTH) + PADDING; });
    var widest = Math.max.apply(null, widths);
    var columns = Math.max(1, Math.floor((available + SPACING) / (widest + SPACING)));
    parts.forEach(function (part) { narrow(part, available); });
    if (columns < parts.length) spec.columns = columns;
  }

  // The width a chart may take: its own box, but never more than the page's text column (the box
  // of a chart inside a notebook output can grow with what it holds).
  function columnWidth(available) {
    var column = document.querySelector("article.bd-article") || document.querySelector("article");
    var limit = column ? column.clientWidth : 0;
    return available && limit ? Math.min(available, limit) : (available || limit);
  }

  window.egFit = function (original, available) {
    available = columnWidth(available);
    if (!available) return original;
    var spec = JSON.parse(JSON.stringify(original));
    if (spec.hconcat) { spec.concat = spec.hconcat; delete spec.hconcat; wrap(spec, spec.concat, available); }
    else if (spec.concat) { wrap(spec, spec.concat, available); }
    else if (spec.facet && spec.spec) { wrap(spec, [spec.spec], available); spec.columns = Math.min(spec.columns || 99, Math.max(1, Math.floor((available + SPACING) / ((viewWidth(spec.spec) || DEFAULT_WIDTH) + PADDING + SPACING)))); }
    else if (spec.vconcat) { spec.vconcat.forEach(function (part) { if (part.hconcat) { part.concat = part.hconcat; delete part.hconcat; wrap(part, part.concat, available); } else { narrow(part, available); } }); }
    else { narrow(spec, available); }
    spec.config = spec.config || {};
    spec.config.legend = Object.assign({}, spec.config.legend, {columns: Math.max(1, Math.floor(available / 230))});
    return spec;
  };

  window.egShrink = function (element) {
    var drawn = element.querySelector("svg, canvas");
    if (!drawn) return;
    var width = drawn.getBoundingClientRect().width;
    if (width > columnWidth(element.clientWidth) + 1) {
      drawn.style.maxWidth = "100%";
      drawn.style.height = "auto";
    }
  };
})();
