// kgviz trace player: steps through a run's frames without reloading the page, so zoom and pan
// persist and the panel always describes the frame on screen. Data: #kp-data (see
// kgviz/viz/trace_player.py). All text is set with textContent or drawn on the canvas.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("kp-data").textContent);
  var N = D.steps.length;
  var box = document.getElementById("kp-graph");
  var slider = document.getElementById("kp-slider");
  var count = document.getElementById("kp-count");
  var prevBtn = document.getElementById("kp-prev");
  var nextBtn = document.getElementById("kp-next");
  var playBtn = document.getElementById("kp-play");
  var panelEl = document.getElementById("kp-panel");
  var legendEl = document.getElementById("kp-legend");
  var emptyEl = document.getElementById("kp-empty");
  var viewEl = document.getElementById("kp-view");
  var dim = {};
  D.dim.forEach(function (r) { dim[r] = true; });

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function tip(text) { return el("div", "kp-tip", text); }

  var nodes = new vis.DataSet(D.nodes.map(function (n, i) {
    return {id: i, label: n.label, title: tip(n.tip), shape: n.shape, x: n.x, y: n.y, hidden: true,
            color: n.colour, size: 12};
  }));
  var edges = new vis.DataSet(D.edges.map(function (e, i) {
    return {id: i, from: e.from, to: e.to, hidden: true, title: tip(e.tip), label: ""};
  }));
  var options = {
    physics: {enabled: false},
    layout: {improvedLayout: false},
    interaction: {hover: true, tooltipDelay: 150, keyboard: false},
    nodes: {font: {size: D.font, face: "DejaVu Sans, Arial, sans-serif", color: "#111", strokeWidth: 4,
                   strokeColor: "#ffffff"}, borderWidth: 1},
    edges: {arrows: {to: {enabled: true, scaleFactor: 0.5}},
            smooth: {enabled: true, type: "continuous", roundness: 0.2},
            font: {size: D.edgeFont, align: "middle", color: "#444", strokeWidth: 3, strokeColor: "#ffffff"},
            color: {inherit: false}}
  };
  var network = new vis.Network(box, {nodes: nodes, edges: edges}, options);
  network.once("afterDrawing", function () { document.body.dataset.kgvizStable = "1"; });

  var cur = -1;
  var focus = [];
  var key = [];  // the step's chosen / seed / context nodes: what the view keeps on screen first
  var weight = {};  // key node -> how much it counts when choosing where to look (its score rank)
  var timer = null;
  var log = [];
  var viewSet = false;

  function visual(i) { return D.visuals.length ? D.visuals[D.steps[i].v] : null; }

  function drawGraph(i) {
    var v = visual(i);
    var shownN = {}, shownE = {};
    focus = [];
    key = [];
    weight = {};
    if (v) {
      v.nodes.forEach(function (n) {
        shownN[n[0]] = n;
        if (!dim[n[1]]) { focus.push(n[0]); }
        if (n[1] === "chosen" || n[1] === "seed" || n[1] === "context") { key.push(n[0]); }
      });
      v.edges.forEach(function (e) { shownE[e[0]] = e; });
      // node sizes grow with the step's scores: the best-scored key node counts 4x the least
      var sz = key.map(function (k) { return shownN[k][2]; });
      var lo = Math.min.apply(null, sz), hi = Math.max.apply(null, sz);
      key.forEach(function (k) { weight[k] = hi > lo ? 1 + 3 * (shownN[k][2] - lo) / (hi - lo) : 1; });
    }
    var nu = D.nodes.map(function (meta, k) {
      var n = shownN[k];
      if (!n) { return {id: k, hidden: true}; }
      var role = n[1], now = !dim[role];
      var col = D.colours[role] || meta.colour;
      // n[4]: the reason a better-scored node was not taken, drawn on the node; n[5]: this step's line
      var label = n[3] && now ? meta.label + " · " + n[3] : meta.label;
      if (n[4] && now) { label += " · " + n[4]; }
      return {id: k, hidden: false, size: n[2], label: label,
              title: tip(n[5] && now ? meta.tip + "\n" + n[5] : meta.tip),
              borderWidth: now ? 3 : 1,
              color: {background: col, border: now ? "#333333" : "#c4c4c4",
                      highlight: {background: col, border: "#000000"}, hover: {background: col, border: "#000000"}},
              font: {color: now ? "#111111" : "#8c8c8c"}};
    });
    var eu = D.edges.map(function (meta, k) {
      var e = shownE[k];
      if (!e) { return {id: k, hidden: true}; }
      var role = e[1], now = !dim[role];
      var col = now ? (D.colours[role] || "#9a9a9a") : "#d4d4d4";
      return {id: k, hidden: false, width: e[2], label: now && e[3] ? e[3] : " ", dashes: role === "rejected",
              color: {color: col, highlight: "#333333", hover: "#333333"}};
    });
    nodes.update(nu);
    edges.update(eu);
    emptyEl.textContent = v && v.nodes.length ? "" :
      "Nothing on the graph yet: no step so far has touched a graph element.";
    legend(v);
  }

  function legend(v) {
    legendEl.textContent = "";
    if (!v) { return; }
    var used = {};
    v.nodes.forEach(function (n) { used[n[1]] = true; });
    v.edges.forEach(function (e) { used[e[1]] = true; });
    Object.keys(D.colours).forEach(function (r) {
      if (!used[r]) { return; }
      var item = el("span", "item");
      var sw = el("span", "sw");
      sw.style.background = D.colours[r];
      item.appendChild(sw);
      item.appendChild(document.createTextNode(D.legendNames[r] || r));
      legendEl.appendChild(item);
    });
    var shapes = D.shapes.map(function (s) { return s[0] + " = " + s[1]; }).join(", ");
    if (shapes) { legendEl.appendChild(el("span", "item", shapes)); }
  }

  function centroid(ids) {
    var x = 0, y = 0;
    ids.forEach(function (k) { x += D.nodes[k].x; y += D.nodes[k].y; });
    return {x: x / ids.length, y: y / ids.length};
  }
  // the view's inner box in DOM px (labels near the border get clipped): left, top, right, bottom
  function innerBox() { return [40, 30, box.clientWidth - 40, box.clientHeight - 20]; }
  function countInView(ids) {
    var r = innerBox();
    var a = network.DOMtoCanvas({x: r[0], y: r[1]}), b = network.DOMtoCanvas({x: r[2], y: r[3]});
    return ids.filter(function (k) {
      var p = D.nodes[k];
      return p.x >= a.x && p.x <= b.x && p.y >= a.y && p.y <= b.y;
    }).length;
  }
  function inView(ids) { return countInView(ids) === ids.length; }
  // where to look when ids do not fit at scale s: the window of the view's size that holds the most
  // of them, each counted by its weight (key nodes by score rank, others 1; windows centred on each
  // node; ties: nearest the centroid), centred on what it holds. Centring on the centroid of a
  // spread-out step could show none of its nodes; counting nodes alone showed a cluster of
  // low-scored ones rather than the step's best.
  function densest(ids, s) {
    var r = innerBox(), hw = (r[2] - r[0]) / 2 / s, hh = (r[3] - r[1]) / 2 / s;
    var c = centroid(ids), best = null, bestN = -1, bestD = 0;
    ids.forEach(function (k) {
      var p = D.nodes[k];
      var inside = ids.filter(function (j) {
        var q = D.nodes[j];
        return Math.abs(q.x - p.x) <= hw && Math.abs(q.y - p.y) <= hh;
      });
      var n = inside.reduce(function (a, j) { return a + (weight[j] || 1); }, 0);
      var d = (p.x - c.x) * (p.x - c.x) + (p.y - c.y) * (p.y - c.y);
      if (n > bestN + 1e-9 || (Math.abs(n - bestN) <= 1e-9 && d < bestD)) { best = inside; bestN = n; bestD = d; }
    });
    var xs = best.map(function (k) { return D.nodes[k].x; }), ys = best.map(function (k) { return D.nodes[k].y; });
    return {x: (Math.min.apply(null, xs) + Math.max.apply(null, xs)) / 2,
            y: (Math.min.apply(null, ys) + Math.max.apply(null, ys)) / 2};
  }
  function shownIds() { return nodes.getIds({filter: function (n) { return !n.hidden; }}); }
  function fitTo(ids, clamp) {
    if (!ids.length) { return; }
    network.fit({nodes: ids, animation: false});
    if (!clamp) { return; }
    var s = network.getScale(), lo = D.minLabelPx / D.font;
    if (s < lo || s > D.maxScale) {
      var scale = Math.min(D.maxScale, Math.max(lo, s));
      // too many to fit legibly: show the densest part of the step, its chosen nodes first
      var part = s < lo && key.length ? key : ids;
      network.moveTo({position: s < lo ? densest(part, scale) : centroid(ids), scale: scale, animation: false});
    }
  }
  function follow(animate) {
    if (!focus.length) { return; }
    if (!viewSet) { fitTo(focus, true); viewSet = true; return; }
    if (inView(focus)) { return; }
    // a step with many candidates rarely fits at a legible zoom: then keep its chosen nodes in view
    var target = key.length && !inView(key) ? key : (key.length ? null : focus);
    if (!target) { return; }
    // keep the user's zoom: only pan, so Next never changes the scale
    network.moveTo({position: densest(target, network.getScale()), scale: network.getScale(),
                    animation: animate ? {duration: D.panMs, easingFunction: "easeInOutQuad"} : false});
  }

  function row(cells, cls, tag) {
    var tr = el("tr", cls || "");
    cells.forEach(function (c, j) {
      var td = el(tag || "td", "", c);
      if (j >= 2 && tag !== "th" && /^[-+0-9.,]+$/.test(c)) { td.className = "num"; }
      tr.appendChild(td);
    });
    return tr;
  }
  function details(summary, text) {
    var d = el("details");
    d.appendChild(el("summary", "", summary));
    d.appendChild(el("pre", "", text));
    return d;
  }
  function drawPanel(i) {
    var p = D.steps[i].panel;
    panelEl.textContent = "";
    panelEl.appendChild(el("div", "kp-head", p.head));
    panelEl.appendChild(el("h3", "", p.title));
    if (p.ours) { panelEl.appendChild(el("p", "kp-ours", p.ours)); }
    if (p.detail) { panelEl.appendChild(el("p", "kp-detail", p.detail)); }
    if (p.note) { panelEl.appendChild(el("p", "kp-note", p.note)); }
    if (p.facts.length) {
      var ft = el("table", "facts");
      p.facts.forEach(function (f) { ft.appendChild(row(f)); });
      panelEl.appendChild(ft);
    }
    if (p.bars.length) {
      panelEl.appendChild(el("div", "kp-sec", "Token budgets"));
      p.bars.forEach(function (b) {
        panelEl.appendChild(el("div", "kp-bar-label", b.label));
        var bar = el("div", "bar"), fill = el("div");
        fill.style.width = (100 * b.fraction).toFixed(1) + "%";
        bar.appendChild(fill);
        panelEl.appendChild(bar);
      });
      if (p.budget_total) { panelEl.appendChild(el("div", "kp-bar-label", p.budget_total)); }
    }
    if (p.rows.length) {
      panelEl.appendChild(el("div", "kp-sec", "Why: " + p.why));
      var t = el("table", "kp-why");
      t.appendChild(row(p.columns, "", "th"));
      p.rows.forEach(function (r) {
        var cls = r[0].indexOf("chosen") >= 0 ? "chosen" : (r[0].indexOf("rejected") >= 0 ? "rejected" : "");
        t.appendChild(row(r, cls));
      });
      panelEl.appendChild(t);
    }
    if (p.llm) {
      panelEl.appendChild(el("div", "kp-sec", "LLM task"));
      panelEl.appendChild(el("p", "kp-llm", p.llm.line));
      if (p.llm.error) { panelEl.appendChild(el("p", "kp-warn", p.llm.error)); }
      panelEl.appendChild(details("Rendered prompt", p.llm.prompt));
      panelEl.appendChild(details("Raw output", p.llm.raw));
    }
    panelEl.appendChild(el("div", "kp-sec", "Cost of this step"));
    panelEl.appendChild(el("p", "kp-cost", p.cost));
    if (p.raw) { panelEl.appendChild(details("Step data (raw)", p.raw)); }
    panelEl.scrollTop = 0;
  }

  function go(i, animate) {
    i = Math.max(0, Math.min(N - 1, i));
    cur = i;
    drawGraph(i);
    drawPanel(i);
    slider.value = String(i + 1);
    count.textContent = "Step " + (i + 1) + " of " + N;
    prevBtn.disabled = i <= 0;
    nextBtn.disabled = i >= N - 1;
    document.body.dataset.kgvizStep = String(i + 1);
    follow(animate);
    viewNote();
    log.push({step: i + 1, panel: panelEl.firstChild ? panelEl.firstChild.textContent : "",
              count: count.textContent});
  }
  function stop() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    playBtn.textContent = "Play";
    playBtn.classList.remove("playing");
  }
  function play() {
    if (timer !== null) { stop(); return; }
    if (cur >= N - 1) { go(0, true); }
    playBtn.textContent = "Pause";
    playBtn.classList.add("playing");
    timer = setInterval(function () {
      if (cur >= N - 1) { stop(); return; }
      go(cur + 1, true);
      if (cur >= N - 1) { stop(); }
    }, D.interval);
  }

  slider.max = String(N);
  if (N <= 1) { slider.disabled = true; playBtn.disabled = true; }
  prevBtn.addEventListener("click", function () { stop(); go(cur - 1, true); });
  nextBtn.addEventListener("click", function () { stop(); go(cur + 1, true); });
  playBtn.addEventListener("click", play);
  slider.addEventListener("input", function () { stop(); go(parseInt(slider.value, 10) - 1, true); });
  document.getElementById("kp-fit").addEventListener("click", function () { fitTo(focus, true); viewNote(); });
  document.getElementById("kp-all").addEventListener("click", function () { fitTo(shownIds(), false); viewNote(); });
  document.addEventListener("keydown", function (ev) {
    if (ev.target && ev.target.tagName === "INPUT") { return; }
    if (ev.key === "ArrowRight") { stop(); go(cur + 1, true); ev.preventDefault(); }
    else if (ev.key === "ArrowLeft") { stop(); go(cur - 1, true); ev.preventDefault(); }
    else if (ev.key === " ") { play(); ev.preventDefault(); }
  });
  window.addEventListener("resize", function () { if (focus.length && !inView(focus)) { follow(false); } });
  // the overlay says when the step's key nodes do not all fit at a legible zoom, so "Fit step" showing
  // only part of a big step reads as a choice, not as a button that did nothing
  function viewNote() {
    var n = countInView(key);
    viewEl.textContent = key.length && n < key.length
      ? n + " of " + key.length + " highlighted in view: zoom out for the rest" : "";
  }
  network.on("animationFinished", viewNote);
  network.on("zoom", viewNote);
  network.on("dragEnd", viewNote);

  // for tests and for a teacher's console: the network, the step on screen and every step shown
  window.kgvizPlayer = {
    network: network, total: N, log: log, go: go,
    step: function () { return cur + 1; },
    playing: function () { return timer !== null; },
    focus: function () { return focus.slice(); },
    // how many of the step's chosen / seed / context nodes are inside the view, of how many, and
    // whether its best-scored one (the biggest) is
    keyInView: function () {
      var best = key.reduce(function (b, k) { return b === null || weight[k] > weight[b] ? k : b; }, null);
      return [countInView(key), key.length, best === null || countInView([best]) === 1];
    },
    // on-screen px of the smallest current-step label: zoom × font size (vis-network canvas units)
    labelPx: function () { return network.getScale() * D.font; }
  };
  document.body.dataset.kgvizRun = D.run || "";
  go(0, false);
  if (!focus.length) {  // the first step touches nothing: frame the first step that does
    for (var k = 1; k < N; k++) {
      var v = visual(k);
      if (v && v.nodes.length) {
        var ids = v.nodes.filter(function (n) { return !dim[n[1]]; }).map(function (n) { return n[0]; });
        if (ids.length) { fitTo(ids, true); viewSet = true; }
        break;
      }
    }
  }
}());
