// ptxdiff's HTML report: what the page does with JavaScript (it reads without it).
// Sorts and filters the table, and draws a row's PTX view when the row is opened (its SASS view
// when that fold is opened), from the inert JSON blocks the page carries
// (`<script type="application/json">`). Every text goes into the page as textContent, never as markup.
(function () {
  "use strict";
  var doc = document;
  var CONTEXT = 3;          // unchanged lines kept around a change; longer stretches fold
  var CHUNK = 1500;         // lines drawn at a time where nothing folds

  function all(sel, root) { return Array.prototype.slice.call((root || doc).querySelectorAll(sel)); }
  function el(tag, cls, text) {
    var e = doc.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function data(id) {
    var s = doc.getElementById(id);
    return s ? JSON.parse(s.textContent) : null;
  }

  // ---- the table: sort by a header, filter by verdict and kernel ------------------------------
  var diffMode = doc.body.getAttribute("data-mode") === "diff";

  function sortKey(text) {
    var m = /\(([+-]?\d+(?:\.\d+)?)\)\s*$/.exec(text);      // old→new (+delta): the delta
    if (m) { return parseFloat(m[1]); }
    if (/^-?\d+(\.\d+)?$/.test(text)) { return diffMode ? 0 : parseFloat(text); }   // unchanged: no delta
    return null;
  }

  function makeSortable(table) {
    var body = table.tBodies[0];
    all("th", table.tHead).forEach(function (th, col) {
      th.tabIndex = 0;
      th.title = diffMode ? "sort (metrics by their change)" : "sort";
      function sort() {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        all("th", table.tHead).forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var rows = Array.prototype.slice.call(body.rows);
        var keyed = rows.map(function (r, i) {
          var t = r.cells[col] ? r.cells[col].textContent.trim() : "";
          return { row: r, text: t, num: sortKey(t), i: i };
        });
        keyed.sort(function (a, b) {
          var c;
          if (a.num !== null && b.num !== null) { c = a.num - b.num; }
          else if (a.num !== null) { c = -1; }
          else if (b.num !== null) { c = 1; }
          else { c = a.text.localeCompare(b.text, undefined, { numeric: true }); }
          return (asc ? c : -c) || a.i - b.i;
        });
        keyed.forEach(function (k) { body.appendChild(k.row); });
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (ev) { if (ev.key === "Enter") { sort(); } });
    });
  }

  function setUpFilters() {
    var box = doc.getElementById("filters");
    if (!box) { return; }
    var select = doc.getElementById("f-verdict"), input = doc.getElementById("f-kernel"),
      count = doc.getElementById("f-count");
    var items = all("[data-verdict]");
    var rows = items.filter(function (e) { return e.tagName === "TR"; });
    var verdicts = {};
    rows.forEach(function (r) { verdicts[r.getAttribute("data-verdict")] = (verdicts[r.getAttribute("data-verdict")] || 0) + 1; });
    Object.keys(verdicts).sort().forEach(function (v) {
      var o = el("option", null, v + " (" + verdicts[v] + ")");
      o.value = v;
      select.appendChild(o);
    });
    function apply() {
      var v = select.value, q = input.value.trim().toLowerCase(), n = 0;
      items.forEach(function (e) {
        var ok = (!v || e.getAttribute("data-verdict") === v) &&
          (!q || (e.getAttribute("data-kernel") || "").toLowerCase().indexOf(q) >= 0);
        e.hidden = !ok;
        if (ok && e.tagName === "TR") { n += 1; }
      });
      count.textContent = n + " of " + rows.length + " rows";
    }
    select.addEventListener("change", apply);
    input.addEventListener("input", apply);
    box.hidden = false;
    apply();
  }

  // ---- a row's PTX view -------------------------------------------------------------------------
  function prepare(side) {
    var lines = side.text.split("\n");
    if (lines.length && lines[lines.length - 1] === "") { lines.pop(); }
    var f = new Int32Array(lines.length).fill(-1), l = new Int32Array(lines.length), at = 0;
    side.runs.forEach(function (run) {
      for (var k = 0; k < run[0] && at < lines.length; k += 1, at += 1) { f[at] = run[1]; l[at] = run[2]; }
    });
    return { label: side.label, lines: lines, files: side.files, f: f, l: l };
  }

  function addCells(tr, side, s, i, cls) {
    var num = el("td", "n"), src = el("td", "s"), txt = el("td", "t" + (cls ? " " + cls : ""));
    if (i >= 0) {
      num.textContent = i + 1;
      var f = side.f[i];
      if (f >= 0) {
        var file = side.files[f];
        src.textContent = side.l[i];
        src.title = file.name + ":" + side.l[i];
        src.setAttribute("data-at", s + ":" + f + ":" + side.l[i]);
        if (file.src) { src.className = "s link"; }
      }
      txt.textContent = side.lines[i];
    } else {
      txt.className = "t gap";
    }
    tr.appendChild(num);
    tr.appendChild(src);
    tr.appendChild(txt);
  }

  function lineRow(sides, pair, cls) {
    var tr = el("tr", cls || null);
    pair.forEach(function (i, s) { addCells(tr, sides[s], s, i, i >= 0 ? cls : null); });
    return tr;
  }

  // unchanged lines d in [a, b) of an equal stretch that starts at i1 (old) and j1 (new)
  function equalRows(sides, i1, j1, a, b) {
    var out = [];
    for (var d = a; d < b; d += 1) {
      var same = sides[0].lines[i1 + d] === sides[1].lines[j1 + d];
      out.push({ pair: [i1 + d, j1 + d], cls: same ? null : "ren" });
    }
    return out;
  }

  // the rows of two aligned sides, as a list of segments: a line of each side, or a folded stretch
  function segments(sides, ops) {
    var out = [];
    ops.forEach(function (op, k) {
      var tag = op[0], i1 = op[1], i2 = op[2], j1 = op[3], j2 = op[4], n, d;
      if (tag === "e") {
        var lead = k === 0 ? 0 : CONTEXT, tail = k === ops.length - 1 ? 0 : CONTEXT;
        n = i2 - i1;
        if (n > lead + tail + 2) {
          out = out.concat(equalRows(sides, i1, j1, 0, lead));
          out.push({ fold: [i1, j1, lead, n - tail] });
          out = out.concat(equalRows(sides, i1, j1, n - tail, n));
        } else {
          out = out.concat(equalRows(sides, i1, j1, 0, n));
        }
        return;
      }
      n = Math.max(i2 - i1, j2 - j1);
      for (d = 0; d < n; d += 1) {
        var a = i1 + d < i2 ? i1 + d : -1, b = j1 + d < j2 ? j1 + d : -1;
        out.push({ pair: [a, b], cls: a >= 0 && b >= 0 ? "chg" : a >= 0 ? "del" : "ins" });
      }
    });
    return out;
  }

  function foldRow(span, label, open) {
    var tr = el("tr", "fold"), td = el("td"), btn = el("button", null, label);
    td.colSpan = span;
    btn.type = "button";
    btn.addEventListener("click", function () { open(tr); });
    td.appendChild(btn);
    tr.appendChild(td);
    return tr;
  }

  function drawTwo(table, sides, ops) {
    var body = el("tbody");
    segments(sides, ops).forEach(function (seg) {
      if (!seg.fold) { body.appendChild(lineRow(sides, seg.pair, seg.cls)); return; }
      var f = seg.fold;
      body.appendChild(foldRow(6, "⋯ " + (f[3] - f[2]) + " unchanged lines", function (tr) {
        var frag = doc.createDocumentFragment();
        equalRows(sides, f[0], f[1], f[2], f[3]).forEach(function (r) { frag.appendChild(lineRow(sides, r.pair, r.cls)); });
        tr.parentNode.replaceChild(frag, tr);
      }));
    });
    table.appendChild(body);
  }

  function drawOne(table, side) {
    var body = el("tbody"), at = 0;
    function more() {
      var end = Math.min(side.lines.length, at + CHUNK), frag = doc.createDocumentFragment();
      for (; at < end; at += 1) { var tr = el("tr"); addCells(tr, side, 0, at, null); frag.appendChild(tr); }
      body.appendChild(frag);
      if (at < side.lines.length) {
        body.appendChild(foldRow(3, "⋯ " + (side.lines.length - at) + " more lines", function (fold) {
          body.removeChild(fold);
          more();
        }));
      }
    }
    more();
    table.appendChild(body);
  }

  function sourcePane(sides) {
    var pane = el("div", "source"), head = el("div", "srchead"), pick = el("select"), body = el("div", "srcbody");
    var choices = [];
    sides.forEach(function (side, s) {
      side.files.forEach(function (file, f) {
        if (!file.src) { return; }
        var o = el("option", null, side.label + ": " + file.name);
        o.value = String(choices.length);
        pick.appendChild(o);
        choices.push({ s: s, f: f, src: file.src });
      });
    });
    if (!choices.length) { return null; }
    head.appendChild(el("span", "dim", "source "));
    head.appendChild(pick);
    pane.appendChild(head);
    pane.appendChild(body);
    var drawn = {}, current = null;
    function show(s, f, line) {
      var k = -1;
      choices.forEach(function (c, i) { if (c.s === s && c.f === f) { k = i; } });
      if (k < 0) { return false; }
      var c = choices[k];
      pick.value = String(k);
      if (!drawn[k]) {
        var text = sources[c.src].split("\n"), ol = el("ol", "srclines");
        text.forEach(function (t, i) {
          var li = el("li", null, t === "" ? " " : t);
          li.setAttribute("data-at", s + ":" + f + ":" + (i + 1));
          ol.appendChild(li);
        });
        drawn[k] = ol;
      }
      if (current !== drawn[k]) { body.textContent = ""; body.appendChild(drawn[k]); current = drawn[k]; }
      all("li.hl", current).forEach(function (li) { li.classList.remove("hl"); });
      var target = current.children[line - 1];
      if (target) {
        target.classList.add("hl");
        body.scrollTop = Math.max(0, target.offsetTop - body.clientHeight / 3);
      }
      return true;
    }
    pick.addEventListener("change", function () { var c = choices[+pick.value]; show(c.s, c.f, 0); });
    return { node: pane, show: show, body: body, first: choices[choices.length - 1] };
  }

  function highlight(root, at) {
    all(".hl", root).forEach(function (e) { e.classList.remove("hl"); });
    all('td[data-at="' + at + '"]', root).forEach(function (td) { td.parentNode.classList.add("hl"); });
  }

  // a log keeps each text once, all in one deflated block ("texts": {"z": base64 of zlib data}) of
  // JSON (html_texts.py): the distinct lines with their numbers masked ("forms", "mark"), and per
  // text its base and its lines ("texts": the base's runs `-1 - k, n`, or an own line's form) and
  // what its numbers add to their guesses ("nums": `zeros, residual` pairs)
  var bundles = {}, sources = {};
  function rebuilt(block) {
    var kinds = new Map(), kept = [], out = [];
    var forms = block.forms.map(function (f) {   // its parts between numbers, and each number's kind
      var parts = f.split(block.mark), kind = [];
      for (var k = 0; k + 1 < parts.length; k += 1) {
        var what = parts[k].slice(-2);
        if (!kinds.has(what)) { kinds.set(what, kinds.size); }
        kind.push(kinds.get(what));
      }
      return { parts: parts, kind: kind };
    });
    var seen = forms.map(function (f) { return new Array(f.kind.length).fill(0); });   // the last number at each place
    block.texts.forEach(function (item, i) {
      var base = item[0] >= 0 ? kept[item[0]] : null, ops = item[1], nums = block.nums[i], p = 0, zeros = -1;
      var ids = [], values = [], lines = [], shift = new Array(kinds.size).fill(0);
      function residual() {   // zeros at the end are left out
        if (zeros < 0) { zeros = p < nums.length ? nums[p++] : Infinity; }
        if (zeros > 0) { zeros -= 1; return 0; }
        zeros = -1;
        return nums[p++];
      }
      // a line of form `id`: on a line shared with the base (`from`: its numbers) a number's guess
      // is the base's shifted as the last of its kind was; on an own line, the last seen at its place
      function line(id, from) {
        var form = forms[id], parts = form.parts, last = seen[id], own = [], text = parts[0];
        for (var k = 0; k < last.length; k += 1) {
          var n, what = form.kind[k];
          if (from) {
            n = from[k] + shift[what] + residual();
            shift[what] = n - from[k];
          } else {
            n = last[k] + residual();
          }
          last[k] = n;
          own.push(n);
          text += n + parts[k + 1];
        }
        ids.push(id);
        values.push(own);
        lines.push(text);
      }
      for (var q = 0; q < ops.length; q += 1) {
        if (ops[q] >= 0) { line(ops[q], null); continue; }
        for (var k = -1 - ops[q], end = k + ops[q + 1]; k < end; k += 1) { line(base.ids[k], base.values[k]); }
        q += 1;
      }
      kept.push({ ids: ids, values: values });
      out.push(lines.join("\n"));
    });
    return out;
  }
  function textOf(ref) {     // t-N: the texts block's item N; v-N: the views block's
    var name = ref.charAt(0) === "v" ? "views" : "texts";
    if (bundles[name] === undefined) {
      var bytes = Uint8Array.from(atob(data(name).z), function (c) { return c.charCodeAt(0); });
      var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
      bundles[name] = new Response(stream).text().then(function (t) { return rebuilt(JSON.parse(t)); });
    }
    return bundles[name].then(function (all) { return all[+ref.slice(2)]; });
  }
  function sourceReady(id) {   // a source file's text, in `sources` before its view is drawn
    var d = data(id);
    if (!d || !d.ref) { sources[id] = d ? d.text : ""; return null; }
    return textOf(d.ref).then(function (t) { sources[id] = t; });
  }

  function renderView(box) {
    if (box.getAttribute("data-done")) { return; }
    box.setAttribute("data-done", "1");
    var given = data(box.getAttribute("data-view"));
    box.textContent = "";
    if (!given) { return; }
    // a log's view is a text of the shared block too
    (given.ref ? textOf(given.ref).then(JSON.parse) : Promise.resolve(given)).then(function (v) {
      var files = [];
      v.sides.forEach(function (s) { s.files.forEach(function (f) { if (f.src) { files.push(sourceReady(f.src)); } }); });
      return Promise.all(v.sides.map(function (s) {
        return s.ref ? textOf(s.ref).then(function (t) { s.text = t; }) : null;
      }).concat(files)).then(function () { drawView(box, v); });
    });
  }

  function drawView(box, v) {
    var sides = v.sides.map(prepare);
    var table = el("table", "ptx " + (sides.length === 2 ? "two" : "one")), head = el("tr");
    sides.forEach(function (side) {
      var th = el("th", null, side.label + " (" + side.lines.length + " lines)");
      th.colSpan = 3;
      head.appendChild(th);
    });
    var thead = el("thead");
    thead.appendChild(head);
    table.appendChild(thead);
    if (sides.length === 2) { drawTwo(table, sides, v.ops); } else { drawOne(table, sides[0]); }
    var grid = el("div", "viewgrid"), code = el("div", "code");
    code.appendChild(table);
    grid.appendChild(code);
    var kind = v.kind || "PTX", click = kind === "PTX" ? " Click a source line number to see it." : "";
    box.appendChild(el("p", "dim", sides.length === 2
      ? "Old and new normalised " + kind + ", aligned; changed lines marked, lines that differ only in register numbers faint; unchanged stretches folded." + click
      : "Normalised " + kind + "." + click));
    box.appendChild(grid);            // in the page before the source pane scrolls to a line
    var pane = sourcePane(sides);
    if (pane) {
      grid.appendChild(pane.node);
      table.addEventListener("click", function (ev) {
        var td = ev.target.closest ? ev.target.closest("td.link") : null;
        if (!td) { return; }
        var at = td.getAttribute("data-at"), p = at.split(":");
        highlight(grid, at);
        pane.show(+p[0], +p[1], +p[2]);
      });
      pane.body.addEventListener("click", function (ev) {
        var li = ev.target.closest ? ev.target.closest("li[data-at]") : null;
        if (!li) { return; }
        highlight(grid, li.getAttribute("data-at"));
        li.classList.add("hl");
      });
      var first = all("td.link", table)[0];
      if (first) {
        var p = first.getAttribute("data-at").split(":");
        pane.show(+p[0], +p[1], +p[2]);
      } else {
        pane.show(pane.first.s, pane.first.f, 0);
      }
    } else {
      grid.classList.add("nosource");
    }
  }

  function openRow(details) {
    var box = details.querySelector(".view[data-view]");    // a row's first view: its PTX
    if (box) { renderView(box); }
  }

  function openHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id ? doc.getElementById(id) : null;
    if (target && target.tagName === "DETAILS") {
      target.hidden = false;
      target.open = true;
      openRow(target);
      target.scrollIntoView();
    }
  }

  all("table.sortable").forEach(makeSortable);
  setUpFilters();
  all("details.row").forEach(function (d) {
    d.addEventListener("toggle", function () { if (d.open) { openRow(d); } });
    if (d.open) { openRow(d); }
  });
  all("details.sass").forEach(function (d) {      // a row's SASS: drawn when its own fold opens
    d.addEventListener("toggle", function () { if (d.open) { openRow(d); } });
    if (d.open) { openRow(d); }
  });
  all("tr[data-href]").forEach(function (tr) {
    tr.addEventListener("click", function (ev) {
      if (ev.target.closest && ev.target.closest("a")) { return; }
      location.hash = tr.getAttribute("data-href");
    });
  });
  all(".nojs").forEach(function (e) { e.parentNode.removeChild(e); });
  window.addEventListener("hashchange", openHash);
  openHash();
  doc.body.setAttribute("data-ready", "1");
})();
