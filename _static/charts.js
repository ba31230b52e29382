/* The book's charts, laid out for the column they sit in (never drawn wide and scaled down).

   window.egChart(id, spec) embeds one Vega-Lite spec (written by embedding_geometry.book.charts.theme)
   into the element with that id:

   1. fonts: every font size below MIN_FONT px is raised to it, so no text of a chart is smaller;
   2. width: a single or layered view takes its declared width when that fits the column, else the
      column's width (autosize "fit-x": axes and legends included); a heatmap's cells narrow with it
      and drop their printed values when those no longer fit (hover still shows them); side-by-side
      panels and facets wrap into as many columns as fit; stacked panels each fit the column;
      a quantitative x axis gets at most one tick per 60 px of its plot, and labels closer than 4 px
      are thinned out, so that they never run together;
   3. legends wrap into as many columns as their longest label allows, and no label limit is wider
      than the column;
   4. after drawing, a chart still wider than its column (its axes took more room than estimated)
      is laid out again with that much less room, at most four times;
   5. a tap on a mark shows its tooltip, as hovering does with a mouse;
   6. under the chart, links download its data (CSV), its spec (JSON) and the picture (PNG, SVG).

   window.egFreeze() replaces every chart by a PNG picture of itself (the PDF of `make pdf`).

   The element gets data-eg-ready="1" once its final layout is drawn; a chart is laid out again
   when the column's width changes (a phone turned sideways). No dependencies besides the
   vega-embed bundle (window.vegaEmbed). */
(function () {
  "use strict";
  var MIN_FONT = 11;        // px: the smallest text a chart may draw
  var PAD = 80;             // px: first estimate of the axes and titles around a view's plotting area
  var pad = PAD;            // the estimate of the chart being laid out (grows when it came out too wide)
  var SPACING = 20;         // px: Vega-Lite's default spacing between concatenated views
  var DEFAULT_WIDTH = 560;  // px: the book theme's continuousWidth
  var DEFAULT_STEP = 20;    // px: Vega-Lite's default band step
  var CHAR = 0.62;          // a character's width, as a share of the font size
  var TICK_SPACING = 60;    // px: the least room per tick of a quantitative x axis ("0.0" and "0.1" never touch)
  var LABEL_SEPARATION = 4; // px: axis labels closer than this are thinned out (Vega-Lite's labelOverlap)
  var charts = {};          // id -> {spec, width, view}

  function clone(value) { return JSON.parse(JSON.stringify(value)); }
  function isNumber(value) { return typeof value === "number" && isFinite(value); }

  // ------------------------------------------------------------------ fonts

  function raiseFonts(node) {
    if (Array.isArray(node)) { node.forEach(raiseFonts); return; }
    if (!node || typeof node !== "object") return;
    Object.keys(node).forEach(function (key) {
      if (key === "datasets" || key === "values") return;  // data, not style
      var value = node[key];
      if (/fontsize$/i.test(key) && isNumber(value) && value < MIN_FONT) node[key] = MIN_FONT;
      else raiseFonts(value);
    });
  }

  function configFonts(config) {
    var wanted = {axis: {labelFontSize: 12, titleFontSize: 13}, legend: {labelFontSize: 12, titleFontSize: 12},
                  header: {labelFontSize: 12, titleFontSize: 13}, title: {fontSize: 15, subtitleFontSize: 12},
                  text: {fontSize: 12}};
    Object.keys(wanted).forEach(function (group) {
      config[group] = config[group] || {};
      Object.keys(wanted[group]).forEach(function (key) {
        if (!isNumber(config[group][key])) config[group][key] = wanted[group][key];
        config[group][key] = Math.max(MIN_FONT, config[group][key]);
      });
    });
  }

  // ------------------------------------------------------------------ data

  function rowsOf(spec, data) {
    if (!data) return [];
    if (Array.isArray(data.values)) return data.values;
    if (data.name && spec.datasets && spec.datasets[data.name]) return spec.datasets[data.name];
    return [];
  }

  function distinct(rows, field) {
    var seen = {};
    rows.forEach(function (row) { seen[JSON.stringify(row[field])] = true; });
    return Object.keys(seen).length;
  }

  function discreteX(view) {
    var layers = [view].concat(view.layer || []);
    for (var i = 0; i < layers.length; i++) {
      var x = layers[i].encoding && layers[i].encoding.x;
      if (x && x.field && (x.type === "nominal" || x.type === "ordinal")) return {field: x.field, layer: layers[i], def: x};
    }
    return null;
  }

  // ------------------------------------------------------------------ widths

  // The plotting width a view asks for: its number, its step times its categories, or the default.
  function natural(spec, view, data) {
    data = view.data || data;
    if (isNumber(view.width)) return view.width;
    var x = discreteX(view);
    var n = x ? distinct(rowsOf(spec, x.layer.data || data), x.field) : 0;
    if (view.width && isNumber(view.width.step)) return view.width.step * Math.max(n, 1);
    if (view.layer) {
      var widths = view.layer.map(function (layer) { return isNumber(layer.width) ? layer.width : 0; });
      var widest = Math.max.apply(null, widths.concat([0]));
      if (widest) return widest;
    }
    return x ? DEFAULT_STEP * Math.max(n, 1) : DEFAULT_WIDTH;
  }

  // Characters of the longest printed value of a text layer (its format, else its data).
  function textChars(spec, layer, data) {
    var text = layer.encoding && layer.encoding.text;
    if (!text) return 0;
    var format = text.format || "";
    var digits = /\.(\d+)/.exec(format);
    if (digits && /f$/.test(format)) return +digits[1] + 3;
    if (digits) return +digits[1] + 4;
    if (!text.field) return 0;
    return rowsOf(spec, layer.data || data).reduce(function (most, row) {
      return Math.max(most, String(row[text.field] === undefined ? "" : row[text.field]).length);
    }, 0);
  }

  function textLayers(view) {
    return (view.layer || []).filter(function (layer) {
      var mark = layer.mark && (layer.mark.type || layer.mark);
      return mark === "text" && layer.encoding && layer.encoding.text;
    });
  }

  function fontOf(layer) { return (layer.mark && layer.mark.fontSize) || 12; }

  // ------------------------------------------------------------------ wrapping text

  // Greedy word wrap of `text` into lines of at most `room` px at `size` px (a word longer than a
  // line stays whole on its own line).
  function wrapLines(text, room, size, bold) {
    var perChar = size * (bold ? 0.66 : CHAR), lines = [], line = "";
    var words = [];
    String(text).split(/\s+/).forEach(function (word) {  // a word too long for a line breaks after a / or -
      if (word.length * perChar <= room) { words.push(word); return; }
      var piece = "";
      word.split(/(?<=[\/\-])/).forEach(function (part) {
        if (piece && (piece + part).length * perChar > room) { words.push(piece); piece = part; } else { piece += part; }
      });
      if (piece) words.push(piece);
    });
    words.forEach(function (word) {
      var next = line ? line + " " + word : word;
      if (line && next.length * perChar > room) { lines.push(line); line = word; } else { line = next; }
    });
    if (line) lines.push(line);
    return lines;
  }

  // A title (string, array or {text}) wrapped to `room` px.
  function wrapTitle(node, room, size) {
    if (!node || !node.title) return;
    var title = typeof node.title === "object" && !Array.isArray(node.title) ? node.title : {text: node.title};
    var text = Array.isArray(title.text) ? title.text.join(" ") : title.text;
    if (!text) return;
    var lines = wrapLines(text, room - 10, title.fontSize || size, true);
    if (lines.length > 1) { title.text = lines; node.title = title; }
  }

  // A Vega expression that prints each label of `labels` longer than `room` px on several lines.
  function wrapExpression(labels, room, size) {
    var keys = [], values = [];
    labels.forEach(function (label) {
      var lines = wrapLines(label, room, size, false);
      if (lines.length > 1) { keys.push(label); values.push(lines); }
    });
    if (!keys.length) return null;
    var k = JSON.stringify(keys), v = JSON.stringify(values);
    return "indexof(" + k + ", datum.label) >= 0 ? " + v + "[indexof(" + k + ", datum.label)] : datum.label";
  }

  // Fit one single or layered view into `room` px (axes included). `top`: the view is the whole
  // chart, so Vega-Lite's autosize "fit-x" can size it exactly.
  function fitView(spec, view, room, data, top) {
    data = view.data || data;
    if (view.width === "container") view.width = Math.max(80, room - pad);  // the room, laid out here
    var width = natural(spec, view, data), declared = width;
    var x = discreteX(view);
    var n = x ? Math.max(distinct(rowsOf(spec, x.layer.data || data), x.field), 1) : 0;
    var labels = x ? textLayers(view) : [];
    var needed = labels.reduce(function (most, layer) {
      return Math.max(most, textChars(spec, layer, data) * CHAR * fontOf(layer) + 6);
    }, 0);
    if (n && needed && width / n < needed) width = n * needed;  // room for the printed values
    var y = discreteY(view);
    var fits = width + pad <= room;
    var plot = fits ? width : Math.max(80, room - pad);
    wrapTitle(view, fits ? width + pad : room, 15);
    (view.layer || []).forEach(function (layer) { wrapTitle(layer, fits ? width + pad : room, 15); });
    if (y) wrapAxisLabels(spec, view, y, "y", room, data);
    if (x) wrapAxisLabels(spec, view, x, "x", room, data);
    wrapAxisTitles(view, plot);
    xTicks(view, plot);
    if (!fits || (n && needed && !(view.width && isNumber(view.width.step) && view.width.step >= needed))) {
      if (top && !fits && !y) {
        view.width = room;
        spec.autosize = {type: "fit-x", contains: "padding"};
      } else {
        view.width = Math.round(plot);
      }
      if (isNumber(view.height) && view.height === declared) view.height = Math.round(plot);  // a square stays square
      (view.layer || []).forEach(function (layer) { delete layer.width; });
    }
    if (n && labels.length && plot / n < needed) {
      view.layer = view.layer.filter(function (layer) { return labels.indexOf(layer) < 0; });
    }
    return Math.min(room, plot + pad);
  }

  function discreteY(view) {
    var layers = [view].concat(view.layer || []);
    for (var i = 0; i < layers.length; i++) {
      var y = layers[i].encoding && layers[i].encoding.y;
      if (y && y.field && (y.type === "nominal" || y.type === "ordinal")) return {field: y.field, layer: layers[i], def: y};
    }
    return null;
  }

  // Long category labels on a y axis (an x axis) print on several lines, at most 45 % (40 %) of the
  // room wide; the rows grow to hold them.
  function wrapAxisLabels(spec, view, axis, channel, room, data) {
    var rows = rowsOf(spec, axis.layer.data || data), seen = {};
    rows.forEach(function (row) { seen[String(row[axis.field])] = true; });
    var labels = Object.keys(seen), size = 12, limit = Math.max(90, Math.floor(room * (channel === "y" ? 0.45 : 0.4)));
    var expression = wrapExpression(labels, limit, size);
    var most = labels.reduce(function (m, label) { return Math.max(m, wrapLines(label, limit, size).length); }, 1);
    if (axis.def.axis === null) return;
    [view].concat(view.layer || []).forEach(function (layer) {
      var def = layer.encoding && layer.encoding[channel];
      if (def && def.field === axis.field && def.axis !== null) {
        def.axis = Object.assign({}, def.axis, {labelLimit: limit + 20}, expression ? {labelExpr: expression} : {});
      }
    });
    var step = view.height && isNumber(view.height.step) ? view.height.step : DEFAULT_STEP;
    var wanted = most * (size + 2) + 6;
    if (channel === "y" && most > 1 && step < wanted) view.height = {step: wanted};
  }

  // A quantitative x axis (relative depth, an angle, a position) gets at most one tick per
  // TICK_SPACING px of its plot, unless the chart chose its ticks: "0.0 0.2 … 1.0" on a phone,
  // "0.0 0.1 … 1.0" in a wide column.
  function xTicks(view, plot) {
    var count = Math.max(2, Math.floor(plot / TICK_SPACING));
    var axes = [view].concat(view.layer || []).map(function (layer) { return layer.encoding && layer.encoding.x; })
      .filter(function (def) { return def && def.type === "quantitative" && def.axis !== null; });
    // layers share one x axis: one tick count for all, or none where one of them chose its ticks
    // (Vega-Lite warns of conflicting counts)
    if (axes.some(function (def) { return def.axis && (def.axis.tickCount !== undefined || def.axis.values !== undefined); })) return;
    axes.forEach(function (def) { def.axis = Object.assign({}, def.axis || {}, {tickCount: count}); });
  }

  // Axis titles longer than the plot print on several lines.
  function wrapAxisTitles(view, plot) {
    [view].concat(view.layer || []).forEach(function (layer) {
      ["x", "y"].forEach(function (channel) {
        var def = layer.encoding && layer.encoding[channel];
        if (!def || typeof def.title !== "string") return;
        var lines = wrapLines(def.title, channel === "x" ? plot : 280, 13, true);
        if (lines.length > 1) def.title = lines;
      });
    });
  }

  function panelsOf(spec) { return spec.hconcat || spec.concat; }

  // The width a (possibly compound) chart asks for, axes included.
  function wanted(spec, part, data) {
    data = part.data || data;
    var panels = panelsOf(part);
    if (panels) {
      var widths = panels.map(function (p) { return wanted(spec, p, data); });
      var columns = part.columns || widths.length;
      return Math.max.apply(null, widths) * Math.min(columns, widths.length) + SPACING * (Math.min(columns, widths.length) - 1);
    }
    if (part.vconcat) return Math.max.apply(null, part.vconcat.map(function (p) { return wanted(spec, p, data); }));
    if (part.facet && part.spec) return wanted(spec, part.spec, data);
    return natural(spec, part, data) + pad;
  }

  function fitPart(spec, part, room, data, top) {
    data = part.data || data;
    var panels = panelsOf(part);
    if (panels || part.vconcat || (part.facet && part.spec)) wrapTitle(part, room, 15);
    if (panels) {
      var widest = Math.max.apply(null, panels.map(function (p) { return wanted(spec, p, data); }));
      var total = panels.reduce(function (sum, p) { return sum + wanted(spec, p, data); }, 0) + SPACING * (panels.length - 1);
      if (total > room || part.concat) {
        var columns = Math.max(1, Math.min(panels.length, Math.floor((room + SPACING) / (widest + SPACING))));
        if (part.hconcat && columns < panels.length) { part.concat = part.hconcat; delete part.hconcat; }
        if (part.concat) part.columns = Math.min(part.columns || columns, columns);
        var each = Math.floor((room - SPACING * ((part.concat ? part.columns : panels.length) - 1)) /
                              (part.concat ? part.columns : panels.length));
        panels.forEach(function (p) { fitPart(spec, p, each, data, false); });
      }
      return;
    }
    if (part.vconcat) { part.vconcat.forEach(function (p) { fitPart(spec, p, room, data, false); }); return; }
    if (part.facet && part.spec) { fitFacet(spec, part, room, data); return; }
    fitView(spec, part, room, data, top);
  }

  function fitFacet(spec, part, room, data) {
    var facet = part.facet;
    if (facet.column && !facet.row) { part.facet = facet.column; facet = part.facet; }
    var inner = natural(spec, part.spec, data) + pad;
    if (facet.field && !facet.row) {
      var n = Math.max(1, distinct(rowsOf(spec, part.data || data), facet.field));
      var columns = Math.max(1, Math.min(n, Math.floor((room + SPACING) / (inner + SPACING))));
      part.columns = Math.min(part.columns || columns, columns);
      fitView(spec, part.spec, Math.floor((room - SPACING * (part.columns - 1)) / part.columns), data, false);
    } else {
      fitView(spec, part.spec, room, data, false);
    }
  }

  // ------------------------------------------------------------------ legends

  var LEGEND_CHANNELS = ["color", "fill", "stroke", "strokeDash", "shape", "size", "opacity"];

  function legendLabels(spec, node, data, found) {
    if (Array.isArray(node)) { node.forEach(function (n) { legendLabels(spec, n, data, found); }); return found; }
    if (!node || typeof node !== "object") return found;
    data = node.data || data;
    var encoding = node.encoding || {};
    LEGEND_CHANNELS.forEach(function (channel) {
      var def = encoding[channel];
      if (!def || def.legend === null || (def.type !== "nominal" && def.type !== "ordinal")) return;
      var domain = def.scale && Array.isArray(def.scale.domain) ? def.scale.domain : null;
      (domain || rowsOf(spec, data).map(function (row) { return row[def.field]; })).forEach(function (value) {
        found[String(value)] = true;
      });
    });
    ["layer", "hconcat", "vconcat", "concat"].forEach(function (key) { if (node[key]) legendLabels(spec, node[key], data, found); });
    if (node.spec) legendLabels(spec, node.spec, data, found);
    return found;
  }

  function capLimits(node, limit) {
    if (Array.isArray(node)) { node.forEach(function (n) { capLimits(n, limit); }); return; }
    if (!node || typeof node !== "object") return;
    Object.keys(node).forEach(function (key) {
      if (key === "datasets" || key === "values") return;
      if (key === "labelLimit" && isNumber(node[key]) && node[key] > limit) node[key] = limit;
      else capLimits(node[key], limit);
    });
  }

  // Legends stack their entries in as many columns as the longest label allows; a label longer
  // than the room left of the plot's start (a bottom legend starts where the plot does, after the
  // y axis: the axes estimate `pad`) prints on several lines; several legends stack one above the other.
  function fitLegends(spec, room) {
    var labels = Object.keys(legendLabels(spec, spec, spec.data, {}));
    var size = spec.config.legend.labelFontSize;
    var longest = labels.reduce(function (most, label) { return Math.max(most, label.length); }, 0);
    var entry = longest * CHAR * size + 36;
    var columns = Math.max(1, Math.min(labels.length || 1, Math.floor((room - 10) / entry)));
    var limit = Math.max(100, room - pad - 20);  // a legend starts where the plot does, after the y axis
    var legend = {columns: columns, labelLimit: limit + 20, layout: {bottom: {direction: "vertical", anchor: "start"},
                                                                        top: {direction: "vertical", anchor: "start"}}};
    spec.config.legend = Object.assign({}, spec.config.legend, legend);
    capLimits(spec, limit + 20);
    var expression = wrapExpression(labels, limit, size);
    // every legend gets the room's limit, a chart's own narrower one too (its labels wrap instead)
    legendEncodings(spec).forEach(function (def) {
      def.legend = Object.assign({}, def.legend, {labelLimit: limit + 20}, expression ? {labelExpr: expression} : {});
    });
  }

  // Every encoding that draws a legend (a nominal or ordinal colour, dash, shape, size or opacity).
  function legendEncodings(node, found) {
    found = found || [];
    if (Array.isArray(node)) { node.forEach(function (n) { legendEncodings(n, found); }); return found; }
    if (!node || typeof node !== "object") return found;
    var encoding = node.encoding || {};
    LEGEND_CHANNELS.forEach(function (channel) {
      var def = encoding[channel];
      if (def && def.field && def.legend !== null && (def.type === "nominal" || def.type === "ordinal")) found.push(def);
    });
    ["layer", "hconcat", "vconcat", "concat"].forEach(function (key) { if (node[key]) legendEncodings(node[key], found); });
    if (node.spec) legendEncodings(node.spec, found);
    return found;
  }

  // ------------------------------------------------------------------ the whole chart

  function columnWidth(element) {
    var column = element.closest("article.bd-article") || document.querySelector("article.bd-article, article");
    var own = element.clientWidth;
    var limit = column ? column.clientWidth : 0;
    return own && limit ? Math.min(own, limit) : (own || limit);
  }

  window.egFit = function (original, room, extra) {
    var spec = clone(original);
    spec.config = spec.config || {};
    raiseFonts(spec);
    configFonts(spec.config);
    spec.config.axis = Object.assign({labelSeparation: LABEL_SEPARATION}, spec.config.axis);
    if (!room) return spec;
    pad = PAD + (extra || 0);  // each retry: the axes took that much more room than estimated
    room = Math.floor(room - (extra || 0) / 2);
    fitLegends(spec, room);
    fitPart(spec, spec, room, spec.data, true);
    return spec;
  };

  // ------------------------------------------------------------------ downloads

  function slug(spec) {
    var title = spec.title && (spec.title.text || spec.title);
    title = Array.isArray(title) ? title.join(" ") : String(title || "chart");
    return title.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "").slice(0, 60) || "chart";
  }

  function csvCell(value) {
    if (value === null || value === undefined) return "";
    var text = typeof value === "object" ? JSON.stringify(value) : String(value);
    return /[",\n]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }

  // Every dataset of the spec as one CSV; with several, a first column names each row's dataset.
  function toCsv(spec) {
    var sets = Object.keys(spec.datasets || {}).map(function (name) { return [name, spec.datasets[name]]; });
    (function inline(node) {
      if (Array.isArray(node)) { node.forEach(inline); return; }
      if (!node || typeof node !== "object") return;
      if (node.data && Array.isArray(node.data.values)) sets.push(["inline " + (sets.length + 1), node.data.values]);
      Object.keys(node).forEach(function (key) { if (key !== "datasets" && key !== "data") inline(node[key]); });
    })(spec);
    var fields = [];
    sets.forEach(function (set) { set[1].forEach(function (row) {
      Object.keys(row).forEach(function (key) { if (fields.indexOf(key) < 0) fields.push(key); });
    }); });
    var several = sets.length > 1;
    var lines = [(several ? ["dataset"] : []).concat(fields).map(csvCell).join(",")];
    sets.forEach(function (set, i) { set[1].forEach(function (row) {
      lines.push((several ? [String(i + 1)] : []).concat(fields.map(function (f) { return row[f]; })).map(csvCell).join(","));
    }); });
    return lines.join("\n") + "\n";
  }

  function download(name, type, content) {
    var link = document.createElement("a");
    link.download = name;
    link.href = typeof content === "string" && content.slice(0, 5) === "data:" ? content
      : URL.createObjectURL(new Blob([content], {type: type}));
    document.body.appendChild(link);
    link.click();
    link.remove();
  }

  function tools(element, entry) {
    var bar = document.createElement("div");
    bar.className = "eg-chart-tools";
    bar.appendChild(document.createTextNode("Download: "));
    var name = slug(entry.spec);
    var items = [
      ["data (CSV)", function () { download(name + ".csv", "text/csv", toCsv(entry.spec)); }],
      ["spec (JSON)", function () { download(name + ".vl.json", "application/json", JSON.stringify(entry.spec, null, 1)); }],
      ["PNG", function () { entry.view.toImageURL("png", 2).then(function (url) { download(name + ".png", "image/png", url); }); }],
      ["SVG", function () { entry.view.toSVG().then(function (svg) { download(name + ".svg", "image/svg+xml", svg); }); }]
    ];
    items.forEach(function (item, i) {
      if (i) bar.appendChild(document.createTextNode(" · "));
      var button = document.createElement("button");
      button.type = "button";
      button.textContent = item[0];
      button.addEventListener("click", item[1]);
      bar.appendChild(button);
    });
    element.insertAdjacentElement("afterend", bar);
  }

  // ------------------------------------------------------------------ tapping

  // A tap shows the tooltip of the mark tapped, as hovering does with a mouse: Vega shows a tooltip
  // on pointermove, which a tap does not fire, so the tap's click (fired last) is passed on as one.
  // Vega hides it on mouseout, which the next tap elsewhere fires.
  function tappable(element) {
    var drawn = element.querySelector("svg"), touch = false;
    if (!drawn) return;
    drawn.addEventListener("pointerdown", function (event) { touch = event.pointerType !== "mouse"; });
    drawn.addEventListener("click", function (event) {
      if (!touch) return;
      event.target.dispatchEvent(new PointerEvent("pointermove", {
        bubbles: true, clientX: event.clientX, clientY: event.clientY, pointerType: "touch"}));
    });
  }

  // ------------------------------------------------------------------ drawing

  function draw(id, attempt, extra) {
    var entry = charts[id], element = document.getElementById(id);
    if (!entry || !element) return;
    var room = columnWidth(element);
    entry.width = room;
    if (entry.view) { entry.view.finalize(); entry.view = null; }
    window.vegaEmbed(element, window.egFit(entry.spec, room, extra), {actions: false, renderer: "svg"})
      .then(function (result) {
        entry.view = result.view;
        var drawn = element.querySelector("svg");
        var over = drawn ? drawn.getBoundingClientRect().width - room : 0;
        if (over > 1 && attempt < 4) { draw(id, attempt + 1, (extra || 0) + over + 4); return; }
        tappable(element);
        element.setAttribute("data-eg-ready", "1");
        if (!element.nextElementSibling || !element.nextElementSibling.classList.contains("eg-chart-tools")) tools(element, entry);
      })
      .catch(function (error) { element.textContent = "Chart error: " + error; element.setAttribute("data-eg-ready", "1"); });
  }

  window.egChart = function (id, spec) {
    charts[id] = {spec: spec, width: 0, view: null};
    draw(id, 0, 0);
  };

  // Every chart replaced by a PNG picture of itself, at twice its resolution (for print: the PDF
  // of `make pdf`). Resolves once every picture is in place.
  window.egFreeze = function () {
    return Promise.all(Object.keys(charts).map(function (id) {
      var entry = charts[id], element = document.getElementById(id);
      if (!entry.view || !element) return null;
      var drawn = element.querySelector("svg"), width = drawn ? drawn.getBoundingClientRect().width : 0;
      return entry.view.toImageURL("png", 2).then(function (url) {
        var picture = document.createElement("img");
        picture.src = url;
        picture.className = "eg-chart-image";
        picture.alt = slug(entry.spec).replace(/-/g, " ");
        if (width) picture.style.width = Math.round(width) + "px";
        element.replaceChildren(picture);
        return new Promise(function (resolve) { if (picture.complete) resolve(); else picture.onload = resolve; });
      });
    }));
  };

  var pending = null;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(function () {
      Object.keys(charts).forEach(function (id) {
        var element = document.getElementById(id);
        if (element && Math.abs(columnWidth(element) - charts[id].width) > 8) {
          element.removeAttribute("data-eg-ready");
          draw(id, 0, 0);
        }
      });
    }, 250);
  });
})();
