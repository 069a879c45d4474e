// kgviz trace player: steps through a run's frames without reloading the page, so zoom and pan
// persist and the panel always describes the frame on screen. Data: #kp-data (and #kp-data-2 for
// a second run shown beside the first; see kgviz/viz/trace_player.py). One bar drives every pane,
// so two methods step in sync. All text is set with textContent or drawn on the canvas.
(function () {
  "use strict";
  var ROLE_GLYPH = {"✓ chosen": "✓", "✗ rejected": "✗", "candidate": "○", "seed": "●", "in context": "▣"};
  var GLYPH_NAME = {"✓": "chosen", "✗": "rejected", "○": "candidate", "●": "seed", "▣": "in context"};
  var SPEEDS = [0.5, 1, 2, 4];
  var KEY_ROLES = {chosen: true, seed: true, context: true};
  var DENSE = 12;  // current nodes above which a presentation step labels only some of them
  var DENSE_LABELS = 10;  // how many: a projector shows about this many labels apart

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function tip(text) { return el("div", "kp-tip", text); }
  function q(root, cls) { return root.querySelector("." + cls); }

  var present = false;

  // one run's graph, algorithm box and panel inside ``root``
  function Pane(root, D) {
    var N = D.steps.length;
    var box = q(root, "kp-graph"), panelEl = q(root, "kp-panel"), legendEl = q(root, "kp-legend");
    var emptyEl = q(root, "kp-empty"), viewEl = q(root, "kp-view"), algoEl = q(root, "kp-algo");
    var dim = {};
    D.dim.forEach(function (r) { dim[r] = true; });
    var nodes = new vis.DataSet(D.nodes.map(function (n, i) {
      return {id: i, label: n.label, title: tip(n.tip), shape: n.shape, x: n.x, y: n.y, hidden: true,
              color: n.colour, size: 12};
    }));
    var edges = new vis.DataSet(D.edges.map(function (e, i) {
      return {id: i, from: e.from, to: e.to, hidden: true, title: tip(e.tip), label: ""};
    }));
    function font() { return present ? D.presentFont : D.font; }
    function minPx() { return present ? D.presentMinLabelPx : D.minLabelPx; }
    var options = {
      physics: {enabled: false},
      layout: {improvedLayout: false},
      interaction: {hover: true, tooltipDelay: 150, keyboard: false},
      nodes: {font: {size: font(), face: "DejaVu Sans, Arial, sans-serif", color: "#111", strokeWidth: 4,
                     strokeColor: "#ffffff"}, borderWidth: 1},
      edges: {arrows: {to: {enabled: true, scaleFactor: 0.5}},
              smooth: {enabled: true, type: "continuous", roundness: 0.2},
              font: {size: D.edgeFont, align: "middle", color: "#444", strokeWidth: 3, strokeColor: "#ffffff"},
              color: {inherit: false}}
    };
    legendHeight();  // before the graph's first view: that view is fitted to the box's final size
    var network = new vis.Network(box, {nodes: nodes, edges: edges}, options);
    network.once("afterDrawing", function () { root.dataset.kgvizStable = "1"; });

    var cur = -1, focus = [], key = [], weight = {}, roleOf = {}, labelled = [], viewSet = false;
    var quizHidden = false;
    var picks = {};  // step -> the node the class picked before the reveal (predict, then reveal)

    function visual(i) { return D.visuals.length ? D.visuals[D.steps[i].v] : null; }

    // presentation mode: which of the step's nodes carry a label: all of a small step; of a dense
    // one at most DENSE_LABELS, its key nodes (chosen, seeds, context) first, then the rejected,
    // then the other candidates, each group best score (biggest node) first. Earlier steps' labels
    // are hidden.
    function labelSet(v) {
      var out = {};
      var now = v.nodes.filter(function (n) { return !dim[n[1]]; });
      if (now.length <= DENSE) { now.forEach(function (n) { out[n[0]] = true; }); return out; }
      function rank(n) { return KEY_ROLES[n[1]] ? 0 : (n[1] === "rejected" ? 1 : 2); }
      now.slice().sort(function (a, b) { return rank(a) - rank(b) || b[2] - a[2] || a[0] - b[0]; })
        .slice(0, DENSE_LABELS).forEach(function (n) { out[n[0]] = true; });
      return out;
    }
    function dense(v) { return v.nodes.filter(function (n) { return !dim[n[1]]; }).length > DENSE; }

    function drawGraph(i) {
      var v = visual(i);
      var shownN = {}, shownE = {}, show = null;
      focus = []; key = []; weight = {}; roleOf = {}; labelled = [];
      if (v) {
        v.nodes.forEach(function (n) {
          shownN[n[0]] = n;
          roleOf[n[0]] = n[1];
          if (!dim[n[1]]) { focus.push(n[0]); }
          if (KEY_ROLES[n[1]]) { key.push(n[0]); }
        });
        v.edges.forEach(function (e) { shownE[e[0]] = e; });
        // node sizes grow with the step's scores: the best-scored key node counts 4x the least
        var sz = key.map(function (k) { return shownN[k][2]; });
        var lo = Math.min.apply(null, sz), hi = Math.max.apply(null, sz);
        key.forEach(function (k) { weight[k] = hi > lo ? 1 + 3 * (shownN[k][2] - lo) / (hi - lo) : 1; });
        if (present) { show = labelSet(v); }
      }
      var hideRoles = quizHidden;
      var quiet = present && v && dense(v);  // a dense step's edge labels would cover its node labels
      var nu = D.nodes.map(function (meta, k) {
        var n = shownN[k];
        if (!n) { return {id: k, hidden: true}; }
        var role = n[1], now = !dim[role];
        var col = hideRoles && now ? D.colours.candidate : (D.colours[role] || meta.colour);
        // n[4]: the reason a better-scored node was not taken, drawn on the node; n[5]: this step's line
        var label = n[3] && now ? meta.label + " · " + n[3] : meta.label;
        if (n[4] && now && !hideRoles) { label += " · " + n[4]; }
        var picked = quiz.on && picks[i] === k && now;
        if (picked) { label = "☞ " + label; }
        var drawn = show ? !!show[k] || picked : true;
        if (drawn && now) { labelled.push(k); }
        return {id: k, hidden: false, size: n[2], label: drawn ? label : "",
                title: tip(n[5] && now && !hideRoles ? meta.tip + "\n" + n[5] : meta.tip),
                borderWidth: picked ? 6 : (now ? 3 : 1),
                color: {background: col, border: picked ? "#b8860b" : (now ? "#333333" : "#c4c4c4"),
                        highlight: {background: col, border: "#000000"}, hover: {background: col, border: "#000000"}},
                font: {color: now ? "#111111" : "#8c8c8c"}};
      });
      var eu = D.edges.map(function (meta, k) {
        var e = shownE[k];
        if (!e) { return {id: k, hidden: true}; }
        var role = e[1], now = !dim[role];
        var col = now ? (D.colours[hideRoles ? "candidate" : role] || "#9a9a9a") : "#d4d4d4";
        return {id: k, hidden: false, width: e[2], label: now && e[3] && !quiet ? e[3] : " ",
                dashes: role === "rejected" && !hideRoles, color: {color: col, highlight: "#333333", hover: "#333333"}};
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
        if (!used[r] || (present && dim[r])) { return; }  // the short legend: this step's roles only
        var item = el("span", "item");
        var sw = el("span", "sw");
        sw.style.background = D.colours[r];
        item.appendChild(sw);
        item.appendChild(document.createTextNode(D.legendNames[r] || r));
        legendEl.appendChild(item);
      });
      if (present) { return; }
      // one item per shape, so a narrow graph wraps the legend between them instead of cutting it
      D.shapes.forEach(function (s) { legendEl.appendChild(el("span", "item", s[0] + " = " + s[1])); });
    }

    // the legend keeps the height of its tallest step for the whole run, so the graph below it keeps
    // one size from step to step (a legend that wraps onto another line would shrink it and move
    // the view under the class's eyes)
    function legendHeight() {
      legendEl.style.minHeight = "";
      var tallest = 0;
      D.visuals.forEach(function (v) { legend(v); tallest = Math.max(tallest, legendEl.offsetHeight); });
      legendEl.style.minHeight = tallest + "px";
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
    // node and, for up to PAIRS nodes, midway between each two: two nodes more than half a window
    // apart share no window centred on either; ties: nearest the centroid), centred on what it holds
    var PAIRS = 40;
    function densest(ids, s) {
      var r = innerBox(), hw = (r[2] - r[0]) / 2 / s, hh = (r[3] - r[1]) / 2 / s;
      var c = centroid(ids), best = null, bestN = -1, bestD = 0;
      var centres = ids.map(function (k) { return D.nodes[k]; });
      if (ids.length <= PAIRS) {
        ids.forEach(function (a, i) {
          ids.slice(i + 1).forEach(function (b) {
            centres.push({x: (D.nodes[a].x + D.nodes[b].x) / 2, y: (D.nodes[a].y + D.nodes[b].y) / 2});
          });
        });
      }
      centres.forEach(function (p) {
        var inside = ids.filter(function (j) {
          var qq = D.nodes[j];
          return Math.abs(qq.x - p.x) <= hw && Math.abs(qq.y - p.y) <= hh;
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
      var s = network.getScale(), lo = minPx() / font();
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
      // keep the user's zoom unless it is below legible: only pan, so Next never changes the scale
      var s = Math.max(network.getScale(), minPx() / font());
      network.moveTo({position: densest(target, s), scale: s,
                      animation: animate ? {duration: D.panMs, easingFunction: "easeInOutQuad"} : false});
    }
    function viewNote() {
      var n = countInView(key);
      viewEl.textContent = key.length && n < key.length
        ? n + " of " + key.length + " highlighted in view: zoom out for the rest" : "";
    }
    // a resized graph box (a collapsed sidebar, a wrapped bar) rescales the view: never below legible
    // (after vis-network's own handler, which rescales the view to the new size)
    function legible() {
      var lo = minPx() / font();
      if (network.getScale() < lo - 1e-9) { network.moveTo({scale: lo, animation: false}); }
    }
    network.on("resize", function () { window.setTimeout(function () { legible(); viewNote(); }, 0); });
    // predict: while a decision step is hidden, a click on one of its nodes is the class's pick
    network.on("click", function (params) {
      if (!quizHidden || !params.nodes.length || dim[roleOf[params.nodes[0]]]) { return; }
      pane.pick(params.nodes[0]);
    });
    network.on("animationFinished", viewNote);
    network.on("zoom", viewNote);
    network.on("dragEnd", viewNote);

    function row(cells, cls, tag) {
      var tr = el("tr", cls || "");
      cells.forEach(function (c, j) {
        var td = el(tag || "td", "", c);
        if (j === 0 && tag !== "th" && present && ROLE_GLYPH[c]) {
          td.textContent = ROLE_GLYPH[c];  // a fixed-width mark that never wraps; the name in its tooltip
          td.title = c;
          td.className = "kp-mark";
        } else if (j >= 2 && tag !== "th" && /^[-+0-9.,]+$/.test(c)) { td.className = "num"; }
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
      var pick = picks[i];
      if (quizHidden) {
        panelEl.appendChild(el("p", "kp-quiz", pick === undefined
          ? "Predict: which will the method choose? Click a node on the graph, then press Reveal."
          : "The class picked " + D.nodes[pick].label + ". Press Reveal to see the method's choice."));
        return;
      }
      if (quiz.on && pick !== undefined) {
        var said = roleOf[pick] === "chosen" ? "the method chose it too" : "the method marked it " + (roleOf[pick] || "—");
        panelEl.appendChild(el("p", "kp-quiz", "The class picked " + D.nodes[pick].label + ": " + said + "."));
      }
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
        var glyphs = {};
        p.rows.forEach(function (r) {
          var cls = r[0].indexOf("chosen") >= 0 ? "chosen" : (r[0].indexOf("rejected") >= 0 ? "rejected" : "");
          if (ROLE_GLYPH[r[0]]) { glyphs[ROLE_GLYPH[r[0]]] = true; }
          t.appendChild(row(r, cls));
        });
        if (present && Object.keys(glyphs).length) {
          panelEl.appendChild(el("div", "kp-marks", Object.keys(glyphs).map(function (g) {
            return g + " " + GLYPH_NAME[g];
          }).join(" · ")));
        }
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

    // the paper's algorithm with the current step's line lit and "ours" lines marked
    var algoLines = [];
    if (D.algo && algoEl) {
      algoEl.appendChild(el("div", "kp-algo-title", D.algo.title + (D.algo.reconstruction ? " — reconstruction" : "")));
      algoEl.appendChild(el("div", "kp-algo-source", D.algo.source));
      var ol = el("ol", "kp-algo-lines");
      D.algo.lines.forEach(function (ln) {
        var li = el("li", "depth" + ln.depth);
        li.appendChild(el("span", "n", ln.n));
        li.appendChild(el("span", "t", ln.text));
        if (ln.ours) {
          var m = el("span", "kp-ours-mark", "ours");
          m.title = ln.ours;
          li.appendChild(m);
        }
        ol.appendChild(li);
        algoLines.push(li);
      });
      algoEl.appendChild(ol);
    } else if (algoEl) { algoEl.style.display = "none"; }
    function litLine(i) { return D.algo ? D.algo.steps[i] : null; }
    function drawAlgo(i) {
      var n = litLine(i);
      algoLines.forEach(function (li, k) {
        var on = D.algo.lines[k].n === n;
        li.classList.toggle("lit", on);
        // scroll the box itself only: scrollIntoView would scroll the page around the player too
        if (on && (li.offsetTop < algoEl.scrollTop || li.offsetTop + li.offsetHeight > algoEl.scrollTop + algoEl.clientHeight)) {
          algoEl.scrollTop = Math.max(0, li.offsetTop - algoEl.clientHeight / 3);
        }
      });
    }

    function go(i, animate) {
      var j = Math.max(0, Math.min(N - 1, i));
      cur = j;
      quizHidden = quiz.on && D.steps[j].decision && !quiz.revealed[j];
      drawGraph(j);
      drawPanel(j);
      if (D.algo) { drawAlgo(j); }
      root.dataset.kgvizStep = String(j + 1);
      follow(animate);
      viewNote();
    }
    function setPresent() {
      legendHeight();
      network.setOptions({nodes: {font: {size: font()}}, edges: {font: {size: present ? D.presentEdgeFont : D.edgeFont}}});
      if (cur >= 0) {
        var s = network.getScale(), lo = minPx() / font();
        if (s < lo) { network.moveTo({scale: lo, animation: false}); }
        drawGraph(cur); drawPanel(cur); follow(false); viewNote();
      }
    }
    function contrast() {
      var by = {};
      focus.forEach(function (k) { (by[roleOf[k]] = by[roleOf[k]] || []).push(k); });
      var out = {};
      Object.keys(by).forEach(function (r) { out[r] = [countInView(by[r]), by[r].length]; });
      return out;
    }
    var pane = {
      n: N, D: D, network: network, go: go, setPresent: setPresent,
      step: function () { return cur + 1; },
      focus: function () { return focus.slice(); },
      keyInView: function () {
        var best = key.reduce(function (b, k) { return b === null || weight[k] > weight[b] ? k : b; }, null);
        return [countInView(key), key.length, best === null || countInView([best]) === 1];
      },
      // on-screen px of the smallest label of the step's key nodes: zoom × font size (canvas units)
      // (every label is drawn at the same font; 0 when the step labels no node)
      labelPx: function () { return labelled.length ? network.getScale() * font() : 0; },
      labelled: function () { return labelled.length; },
      contrast: contrast,
      algoLine: function () {
        var n = litLine(cur);
        if (n === null || n === undefined) { return ""; }
        var ln = D.algo.lines.filter(function (l) { return l.n === n; })[0];
        return ln ? ln.n + " " + ln.text : "";
      },
      fit: function () { fitTo(focus, true); viewNote(); },
      whole: function () { fitTo(shownIds(), false); viewNote(); },
      refollow: function () { if (focus.length && !inView(focus)) { follow(false); } },
      decision: function () { return !!D.steps[cur].decision; },
      pick: function (k) { picks[cur] = k; drawGraph(cur); drawPanel(cur); },
      hidden: function () { return quizHidden; },
      startView: function () {
        if (focus.length) { return; }  // the first step touches nothing: frame the first step that does
        for (var k = 1; k < N; k++) {
          var v = visual(k);
          if (v && v.nodes.length) {
            var ids = v.nodes.filter(function (n) { return !dim[n[1]]; }).map(function (n) { return n[0]; });
            if (ids.length) { fitTo(ids, true); viewSet = true; }
            break;
          }
        }
      }
    };
    return pane;
  }

  // --- the bar, the timeline and the panes --------------------------------------------------------
  var quiz = {on: false, revealed: {}};
  var datas = [JSON.parse(document.getElementById("kp-data").textContent)];
  var second = document.getElementById("kp-data-2");
  if (second) { datas.push(JSON.parse(second.textContent)); }
  var roots = document.querySelectorAll(".kp-pane");
  var N = Math.max.apply(null, datas.map(function (D) { return D.steps.length; }));
  var count = document.getElementById("kp-count");
  var prevBtn = document.getElementById("kp-prev");
  var nextBtn = document.getElementById("kp-next");
  var playBtn = document.getElementById("kp-play");
  var speedSel = document.getElementById("kp-speed");
  var presentBtn = document.getElementById("kp-present");
  var quizBtn = document.getElementById("kp-quiz");
  var revealBtn = document.getElementById("kp-reveal");
  var timelineEl = document.getElementById("kp-timeline");
  var questionEl = document.getElementById("kp-question");
  if (datas[0].question) { questionEl.textContent = "Question: " + datas[0].question; } else { questionEl.hidden = true; }
  var cur = -1, timer = null, speed = 1, log = [];

  // the timeline: one segment per step, markers (seed, hop / round, backtrack, budget cut, answer)
  // named on their segment; a click jumps there. One row per pane.
  var segs = [];
  datas.forEach(function (D, k) {
    var rowEl = el("div", "kp-tl-row");
    if (datas.length > 1) { rowEl.appendChild(el("span", "kp-tl-name", D.run)); }
    var track = el("div", "kp-tl-track");
    var mine = [];
    D.steps.forEach(function (s, i) {
      var b = el("button", "kp-seg" + (s.marker ? " mark mark-" + s.marker.kind : ""));
      b.type = "button";
      b.title = "Step " + (i + 1) + ": " + s.panel.title;
      b.dataset.step = String(i + 1);
      if (s.marker) { b.appendChild(el("span", "kp-mark-label", s.marker.label)); }
      b.addEventListener("click", function () { go(i, true); });
      track.appendChild(b);
      mine.push(b);
    });
    rowEl.appendChild(track);
    timelineEl.appendChild(rowEl);
    segs.push(mine);
  });
  // the panes last: the question and the timeline above them are laid out by now, so the graphs'
  // first view is fitted to their final size (a later resize would rescale it)
  var panes = datas.map(function (D, k) { return Pane(roots[k], D); });

  function go(i, animate) {
    i = Math.max(0, Math.min(N - 1, i));
    cur = i;
    panes.forEach(function (p) { p.go(i, animate); });
    segs.forEach(function (mine) {
      mine.forEach(function (b, k) { b.classList.toggle("now", k === Math.min(i, mine.length - 1)); });
    });
    count.textContent = "Step " + (i + 1) + " of " + N;
    prevBtn.disabled = i <= 0;
    nextBtn.disabled = i >= N - 1;
    document.body.dataset.kgvizStep = String(i + 1);
    var asking = quiz.on && panes.some(function (p) { return p.decision(); }) && !quiz.revealed[i];
    revealBtn.hidden = !asking;
    if (asking && timer !== null) { stop(); }  // predict, then reveal: Play waits at a decision
    var head = document.querySelector(".kp-pane .kp-panel .kp-head");
    log.push({step: i + 1, panel: head ? head.textContent : "", count: count.textContent});
  }
  function stop() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    playBtn.textContent = "Play";
    playBtn.classList.remove("playing");
  }
  function tick() {
    if (cur >= N - 1) { stop(); return; }
    go(cur + 1, true);
    if (cur >= N - 1) { stop(); }
  }
  function start() {
    if (timer !== null) { clearInterval(timer); }
    timer = setInterval(tick, datas[0].interval / speed);
    playBtn.textContent = "Pause";
    playBtn.classList.add("playing");
  }
  function play() {
    if (timer !== null) { stop(); return; }
    if (cur >= N - 1) { go(0, true); }
    start();
  }
  // stepping by hand while playing keeps playing from the new step (the next tick a full interval away)
  function jump(i) { go(i, true); if (timer !== null) { start(); } }

  if (N <= 1) { playBtn.disabled = true; }
  prevBtn.addEventListener("click", function () { jump(cur - 1); });
  nextBtn.addEventListener("click", function () { jump(cur + 1); });
  playBtn.addEventListener("click", play);
  SPEEDS.forEach(function (s) {
    var o = el("option", "", s + "×");
    o.value = String(s);
    if (s === 1) { o.selected = true; }
    speedSel.appendChild(o);
  });
  speedSel.addEventListener("change", function () {
    speed = parseFloat(speedSel.value);
    if (timer !== null) { start(); }
  });
  document.getElementById("kp-fit").addEventListener("click", function () { panes.forEach(function (p) { p.fit(); }); });
  document.getElementById("kp-all").addEventListener("click", function () { panes.forEach(function (p) { p.whole(); }); });
  function setPresent(on) {
    present = on;
    document.body.classList.toggle("present", on);
    presentBtn.setAttribute("aria-pressed", on ? "true" : "false");
    panes.forEach(function (p) { p.setPresent(); });
    if (cur >= 0) { go(cur, false); }
  }
  presentBtn.addEventListener("click", function () { setPresent(!present); });
  quizBtn.addEventListener("click", function () {
    quiz.on = !quiz.on;
    quiz.revealed = {};
    quizBtn.setAttribute("aria-pressed", quiz.on ? "true" : "false");
    go(cur, false);
  });
  revealBtn.addEventListener("click", function () { quiz.revealed[cur] = true; go(cur, false); });
  document.addEventListener("keydown", function (ev) {
    if (ev.target && (ev.target.tagName === "INPUT" || ev.target.tagName === "SELECT")) { return; }
    if (ev.key === "ArrowRight") { jump(cur + 1); ev.preventDefault(); }
    else if (ev.key === "ArrowLeft") { jump(cur - 1); ev.preventDefault(); }
    else if (ev.key === " ") { play(); ev.preventDefault(); }
  });
  window.addEventListener("resize", function () { panes.forEach(function (p) { p.refollow(); }); });

  // presentation mode: on with ?present=1 in the page's URL or as the data says (the app's toggle,
  // kept in its session and URL; a lesson file); the Present button switches it for this view
  present = /[?&]present=1\b/.test(window.location.search) || !!datas[0].present;
  document.body.classList.toggle("present", present);
  presentBtn.setAttribute("aria-pressed", present ? "true" : "false");
  panes.forEach(function (p) { p.setPresent(); });

  // for tests and for a teacher's console: the first pane's network, the step on screen, every step shown
  window.kgvizPlayer = {
    network: panes[0].network, panes: panes, total: N, log: log,
    go: function (i) { jump(i); },
    step: function () { return cur + 1; },
    playing: function () { return timer !== null; },
    present: function () { return present; },
    setPresent: setPresent,
    setSpeed: function (s) { speedSel.value = String(s); speedSel.dispatchEvent(new Event("change")); },
    interval: function () { return datas[0].interval / speed; },
    focus: function () { return panes[0].focus(); },
    keyInView: function () { return panes[0].keyInView(); },
    contrast: function () { return panes[0].contrast(); },
    // the smallest on-screen label of the step's key nodes over every pane (0: none labelled)
    labelPx: function () {
      var px = panes.map(function (p) { return p.labelPx(); }).filter(function (x) { return x > 0; });
      return px.length ? Math.min.apply(null, px) : 0;
    },
    // the lit line of the algorithm box ("3 for hop = 1 … max_hops:"); one per pane when two
    algoLine: function () {
      return panes.length > 1 ? panes.map(function (p) { return p.algoLine(); }) : panes[0].algoLine();
    },
    steps: function () { return panes.map(function (p) { return p.step(); }); },
    quiz: function () { return quiz.on; },
    asking: function () { return !revealBtn.hidden; }
  };
  document.body.dataset.kgvizRun = datas.map(function (D) { return D.run || ""; }).join(" + ");
  go(0, false);
  panes.forEach(function (p) { p.startView(); });
  // in the app, presentation mode brings the whole player on screen below the page's header
  if (present && window.frameElement) {
    try { window.frameElement.scrollIntoView({block: "end"}); } catch (e) { /* a cross-origin frame: left as is */ }
  }
  function markStable() {
    var all = Array.prototype.every.call(roots, function (r) { return r.dataset.kgvizStable === "1"; });
    if (all) { document.body.dataset.kgvizStable = "1"; } else { window.setTimeout(markStable, 50); }
  }
  markStable();
}());
