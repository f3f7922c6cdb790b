// capeval view: plain JavaScript, no dependencies, no build step.
//
// Every page's data is a script `data/<key>.js` calling window.capevalData(key, data),
// loaded on demand: that works from a server and from file:// alike. Everything
// that comes from rows, transcripts or files is put into the page as text
// (textContent, never innerHTML), so an agent's output can never become markup.
(function () {
  "use strict";

  const cache = new Map();
  const waiting = new Map();
  const PAGE_ROWS = 50;
  // Okabe-Ito, as the plots use.
  const COLOURS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"];

  window.capevalData = function (key, data) {
    cache.set(key, data);
    const done = waiting.get(key) || [];
    waiting.delete(key);
    done.forEach((w) => w.resolve(data));
  };

  function load(key) {
    if (cache.has(key)) return Promise.resolve(cache.get(key));
    return new Promise((resolve, reject) => {
      const first = !waiting.has(key);
      if (first) waiting.set(key, []);
      waiting.get(key).push({ resolve, reject });
      if (!first) return;
      const script = document.createElement("script");
      script.src = "data/" + encodeURIComponent(key) + ".js";
      script.onerror = () => {
        const failed = waiting.get(key) || [];
        waiting.delete(key);
        failed.forEach((w) => w.reject(new Error("no data for " + key)));
      };
      document.head.appendChild(script);
    });
  }

  // -- building the page: text nodes only --------------------------------------

  function h(tag, props, ...children) {
    const el = document.createElement(tag);
    for (const [name, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "class") el.className = value;
      else if (name === "href") el.setAttribute("href", safeHref(value));
      else if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
      else el.setAttribute(name, value === true ? "" : String(value));
    }
    append(el, children);
    return el;
  }

  function append(el, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  function safeHref(value) {
    const text = String(value);
    // Links are routes of this page or files the viewer serves, nothing else.
    return text.startsWith("#/") || text.startsWith("files/") ? text : "#/";
  }

  function svg(tag, attrs, ...children) {
    const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [name, value] of Object.entries(attrs || {})) el.setAttribute(name, String(value));
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined) continue;
      el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  function badge(text, kind, title) {
    return h("span", { class: "badge " + (kind || ""), title: title }, text);
  }

  function num(value, digits) {
    if (value === null || value === undefined) return "–";
    if (typeof value !== "number") return String(value);
    if (Number.isInteger(value)) return value.toLocaleString("en-US");
    return value.toLocaleString("en-US", { maximumFractionDigits: digits === undefined ? 1 : digits });
  }

  function pct(rate) {
    return rate === null || rate === undefined ? "–" : Math.round(rate * 100) + "%";
  }

  function ms(value) {
    if (value === null || value === undefined) return "–";
    return value >= 10000 ? num(value / 1000, 1) + " s" : num(value, 1) + " ms";
  }

  function interval(ci, digits) {
    if (!ci) return "";
    return "[" + ci.map((v) => num(v, digits === undefined ? 2 : digits)).join(", ") + "]";
  }

  function rateClass(rate) {
    if (rate === null || rate === undefined) return "";
    return "r" + Math.min(4, Math.floor(rate * 5));
  }

  function table(headers, rows, props) {
    return h(
      "table",
      props || {},
      h("thead", {}, h("tr", {}, headers.map((x) => (x instanceof Node ? x : h("th", {}, x))))),
      h("tbody", {}, rows)
    );
  }

  function facts(pairs) {
    return h(
      "dl",
      { class: "facts" },
      pairs.filter((p) => p[1] !== null && p[1] !== undefined && p[1] !== "").map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])
    );
  }

  function warnings(list) {
    if (!list || !list.length) return null;
    return h("ul", { class: "warnings", id: "warnings" }, list.map((w) => h("li", {}, w)));
  }

  function pager(total, page, go) {
    const pages = Math.max(1, Math.ceil(total / PAGE_ROWS));
    if (pages <= 1) return null;
    return h(
      "div",
      { class: "pager" },
      h("button", { type: "button", disabled: page <= 0, onclick: () => go(page - 1) }, "‹ previous"),
      "page " + (page + 1) + " of " + pages,
      h("button", { type: "button", disabled: page >= pages - 1, onclick: () => go(page + 1) }, "next ›")
    );
  }

  function show(...nodes) {
    const app = document.getElementById("app");
    app.replaceChildren();
    append(app, nodes);
  }

  // -- routing -------------------------------------------------------------------

  function parseHash() {
    const hash = location.hash.replace(/^#/, "") || "/";
    const [path, query] = hash.split("?");
    return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(query || "") };
  }

  function setParams(params) {
    const { parts } = parseHash();
    const query = params.toString();
    const target = "#/" + parts.map(encodeURIComponent).join("/") + (query ? "?" + query : "");
    if (location.hash !== target) history.replaceState(null, "", target);
  }

  async function route() {
    const { parts, params } = parseHash();
    try {
      if (parts.length === 0) await homePage();
      else if (parts[0] === "history") await historyPage();
      else if (parts[0] === "m") await matrixPage(+parts[1], params);
      else if (parts[0] === "c") await cellPage(+parts[1], +parts[2], params);
      else if (parts[0] === "r") await repeatPage(parts[1], +parts[2], params);
      else if (parts[0] === "paperclip") await paperclipPage(params);
      else if (parts[0] === "p") await paperclipCasePage(+parts[1]);
      else show(h("h1", {}, "No such page"), h("a", { href: "#/" }, "back to the runs"));
    } catch (err) {
      show(h("h1", {}, "Cannot show this page"), h("p", { class: "mismatch" }, String(err && err.message ? err.message : err)));
    }
    document.body.setAttribute("data-page", parts[0] || "home");
  }

  // -- home: the runs and comparisons -----------------------------------------------

  async function homePage() {
    const index = await load("index");
    const rows = index.matrices.map((m) =>
      h(
        "tr",
        {},
        h("td", {}, m.kind === "comparison" ? badge("baseline vs candidate", "bait") : badge("run")),
        h("td", {}, h("a", { href: "#/m/" + m.id, class: "matrix-link" }, m.title)),
        h("td", {}, m.startedAt ? m.startedAt.replace("T", " ").slice(0, 19) : ""),
        h("td", { class: "num" }, num(m.cells)),
        h("td", { class: "num" }, m.kind === "run" ? num(m.repeats) : ""),
        h("td", { class: "num" }, m.kind === "run" ? pct(m.repeats ? m.passed / m.repeats : null) : ""),
        h("td", {}, (m.variants || []).join(", ")),
        h(
          "td",
          {},
          m.kind === "comparison"
            ? [
                badge(m.clean ? "clean" : "not clean", m.clean ? "ok" : "failed"),
                " exit " + m.exitCode + " · ",
                Object.entries(m.summary)
                  .map(([k, v]) => k + " " + v)
                  .join(", "),
              ]
            : (m.sources || []).join(", ")
        )
      )
    );
    show(
      h("h1", {}, "Runs"),
      h("p", { class: "muted" }, "capeval " + index.version + " · results from " + (index.inputs.join(", ") || "(none)") +
        (index.baseline.length ? " · baseline " + index.baseline.join(", ") : "")),
      warnings(index.warnings),
      index.matrices.length
        ? table(["", "run", "started", "cells", "repeats", "passed", "variants", ""], rows, { id: "matrices" })
        : h("p", {}, "No result rows in the paths given."),
      h("p", {}, h("a", { href: "#/history" }, "History: every run and the pass-rate trend"), " · ",
        h("a", { href: "#/paperclip" }, "Paperclip scenario explorer"))
    );
  }

  // -- history --------------------------------------------------------------------------

  async function historyPage() {
    const index = await load("index");
    const matrixOf = new Map(index.matrices.filter((m) => m.kind === "run").map((m) => [m.runId, m.id]));
    const rows = index.runs.map((r) =>
      h(
        "tr",
        {},
        h("td", {}, matrixOf.has(r.runId) ? h("a", { href: "#/m/" + matrixOf.get(r.runId) }, r.runId) : r.runId),
        h("td", {}, (r.startedAt || "").replace("T", " ").slice(0, 19)),
        h("td", {}, (r.variants || []).join(", ")),
        h("td", { class: "num" }, num(r.cases)),
        h("td", { class: "num" }, num(r.repeats)),
        h("td", { class: "num" }, num(r.rows)),
        h("td", { class: "num" }, pct(r.passRate)),
        h("td", { class: "num" }, num(r.turnsUsed)),
        h("td", { class: "num" }, num(r.tokenInput)),
        h("td", { class: "num" }, num(r.tokenOutput)),
        h("td", { class: "num" }, ms(r.wallMs)),
        h("td", {}, (r.agents || []).join(", ")),
        h("td", {}, r.capevalVersion || ""),
        h("td", {}, r.gitCommit ? r.gitCommit.slice(0, 10) + (r.gitDirty ? "+dirty" : "") : "")
      )
    );
    show(
      h("h1", {}, "History"),
      h("h2", {}, "Pass-rate trend"),
      trendChart(index.runs, index.trend),
      h("h2", {}, "Runs"),
      table(["run", "started", "variants", "cases", "repeats", "rows", "pass rate", "turns", "tokens in", "tokens out", "wall", "agents", "capeval", "commit"], rows, { id: "runs" })
    );
  }

  function trendChart(runs, trend) {
    if (!runs.length) return h("p", { class: "muted" }, "No runs.");
    const W = 760, H = 260, L = 46, R = 16, T = 14, B = 40;
    const x = (i) => L + (runs.length === 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (runs.length - 1));
    const y = (rate) => T + (1 - rate) * (H - T - B);
    const position = new Map(runs.map((r, i) => [r.runId, i]));
    const variants = [...new Set(trend.map((t) => t.variantId))].sort();
    const parts = [];
    for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
      parts.push(svg("line", { x1: L, x2: W - R, y1: y(tick), y2: y(tick), stroke: "#e3e7ee" }));
      parts.push(svg("text", { x: L - 6, y: y(tick) + 4, "text-anchor": "end" }, Math.round(tick * 100) + "%"));
    }
    runs.forEach((r, i) => parts.push(svg("text", { x: x(i), y: H - B + 16, "text-anchor": "middle" }, "run " + (i + 1))));
    variants.forEach((v, k) => {
      const colour = COLOURS[k % COLOURS.length];
      // A run whose repeats of this variant all errored measured nothing: no point, not 0%.
      const points = trend.filter((t) => t.variantId === v && position.has(t.runId) && t.passRate !== null).map((t) => [x(position.get(t.runId)), y(t.passRate), t]);
      if (points.length > 1) parts.push(svg("polyline", { points: points.map((p) => p[0] + "," + p[1]).join(" "), fill: "none", stroke: colour, "stroke-width": 2 }));
      points.forEach(([px, py, t]) =>
        parts.push(svg("circle", { cx: px, cy: py, r: 4, fill: colour }, svg("title", {}, v + " · " + t.runId + ": " + t.passed + "/" + t.repeats + " passed (" + pct(t.passRate) + ")")))
      );
    });
    const legend = h("div", { class: "legend" }, variants.map((v, k) => {
      const swatch = h("i", {});
      swatch.style.background = COLOURS[k % COLOURS.length];
      return h("span", {}, swatch, v);
    }));
    return h("div", { id: "trend" }, svg("svg", { class: "chart", width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "pass rate per variant and run" }, parts), legend);
  }

  // -- matrix -------------------------------------------------------------------------

  function cellMatches(cell, f) {
    if (f.q) {
      const hay = (cell.caseId + " " + (cell.title || "") + " " + cell.variantId + " " + (cell.tier || "")).toLowerCase();
      if (!hay.includes(f.q.toLowerCase())) return false;
    }
    const bait = cell.bait;
    if (f.bait === "bait" && !bait) return false;
    if (f.bait === "misbehaving" && !(bait && bait.misbehaving)) return false;
    if (f.bait === "ok" && !(bait && bait.misbehaving === false)) return false;
    if (f.bait === "flag" && !(bait && bait.flag)) return false;
    const side = cell.sides.c || cell.sides.b;
    if (f.outcome === "failures" && !(side && side.outcomes.failed + side.outcomes.error > 0)) return false;
    if (f.outcome === "errors" && !(side && side.outcomes.error > 0)) return false;
    if (f.outcome === "passed" && !(side && side.passCount === side.repeats)) return false;
    if (f.status && f.status !== "all" && cell.status !== f.status) return false;
    return true;
  }

  function baitBadge(bait) {
    if (!bait) return null;
    const median = bait.candidateMedian;
    const words = bait.metric + " median " + num(median) + (bait.misbehaving ? " > " : " ≤ ") + num(bait.threshold);
    if (bait.flag) return badge("bait flag", "flag", "the baseline's " + bait.metric + " median " + num(bait.baselineMedian) + " did not exceed " + num(bait.threshold));
    if (bait.misbehaving === true) return badge("bait: misbehaving", "misbehaving", words);
    if (bait.misbehaving === false) return badge("bait: ok", "ok", words);
    return badge("bait: no stats", "bait", bait.metric + ": no captured behaviors");
  }

  function sideSummary(side, label) {
    if (!side) return h("div", { class: "counts" }, label ? label + ": –" : "–");
    const o = side.outcomes;
    return h(
      "div",
      {},
      label ? h("span", { class: "muted" }, label + " ") : null,
      h("span", { class: "rate" }, side.passCount + "/" + side.repeats),
      " ",
      pct(side.passRate),
      h("div", { class: "counts" }, "✓" + o.passed + " ✗" + o.failed + (o.error ? " ⚠" + o.error : ""))
    );
  }

  async function matrixPage(m, params) {
    const data = await load("matrix-" + m);
    const comparison = data.kind === "comparison";
    const f = {
      q: params.get("q") || "",
      bait: params.get("bait") || "all",
      outcome: params.get("outcome") || "all",
      status: params.get("status") || "all",
      sort: params.get("sort") || "case",
      page: +(params.get("page") || 0),
    };
    const byCase = new Map();
    for (const cell of data.cells) {
      if (!byCase.has(cell.caseId)) byCase.set(cell.caseId, new Map());
      byCase.get(cell.caseId).set(cell.variantId, cell);
    }
    const rateOf = (cell) => (cell ? (cell.sides.c || cell.sides.b).passRate : 2);
    let cases = data.cases.filter((c) => [...byCase.get(c).values()].some((cell) => cellMatches(cell, f)));
    const tierOf = (c) => [...byCase.get(c).values()][0].tier || "";
    if (f.sort === "tier") cases.sort((a, b) => tierOf(a).localeCompare(tierOf(b)) || a.localeCompare(b));
    else if (f.sort === "rate") cases.sort((a, b) => Math.min(...[...byCase.get(a).values()].map(rateOf)) - Math.min(...[...byCase.get(b).values()].map(rateOf)) || a.localeCompare(b));
    else if (f.sort.startsWith("v:")) {
      const v = f.sort.slice(2);
      cases.sort((a, b) => rateOf(byCase.get(a).get(v)) - rateOf(byCase.get(b).get(v)) || a.localeCompare(b));
    } else cases.sort((a, b) => a.localeCompare(b));
    const matching = data.cells.filter((cell) => cellMatches(cell, f)).length;
    const page = Math.min(f.page, Math.max(0, Math.ceil(cases.length / PAGE_ROWS) - 1));
    const shown = cases.slice(page * PAGE_ROWS, (page + 1) * PAGE_ROWS);

    const rerender = (changes) => {
      const next = new URLSearchParams(params);
      for (const [k, v] of Object.entries(changes)) {
        if (v === "" || v === "all" || (k === "page" && !v) || (k === "sort" && v === "case")) next.delete(k);
        else next.set(k, v);
      }
      if (!("page" in changes)) next.delete("page");
      setParams(next);
      matrixPage(m, next);
    };
    const select = (id, value, options, key) =>
      h("select", { id: id, onchange: (e) => rerender({ [key]: e.target.value }) },
        options.map(([v, label]) => h("option", { value: v, selected: v === value }, label)));

    const text = h("input", { id: "filter-text", type: "search", placeholder: "case, title, variant, tier", value: f.q });
    text.addEventListener("change", () => rerender({ q: text.value }));
    const filters = h(
      "div",
      { class: "filters" },
      h("label", {}, "filter", text),
      h("label", {}, "bait", select("filter-bait", f.bait, [["all", "any cell"], ["bait", "bait cells"], ["misbehaving", "misbehaving"], ["ok", "not misbehaving"], ["flag", "bait flag"]], "bait")),
      h("label", {}, "outcome", select("filter-outcome", f.outcome, [["all", "any"], ["failures", "has failures"], ["errors", "has errors"], ["passed", "all passed"]], "outcome")),
      comparison ? h("label", {}, "status", select("filter-status", f.status, [["all", "any"], ["regressed", "regressed"], ["improved", "improved"], ["unchanged", "unchanged"], ["new", "new"], ["missing", "missing"]], "status")) : null,
      h("label", {}, "sort", select("sort", f.sort.startsWith("v:") ? "case" : f.sort, [["case", "case"], ["tier", "tier"], ["rate", "lowest pass rate"]], "sort")),
      h("span", { class: "muted", id: "match-count" }, matching + " of " + data.cells.length + " cells, " + cases.length + " cases")
    );

    const head = [h("th", { class: "sortable", onclick: () => rerender({ sort: "case" }) }, "case")].concat(
      data.variants.map((v) => h("th", { class: "sortable", title: "sort by this variant's pass rate", onclick: () => rerender({ sort: "v:" + v }) }, v))
    );
    const body = shown.map((caseId) => {
      const cells = byCase.get(caseId);
      const any = [...cells.values()][0];
      return h(
        "tr",
        {},
        h("th", {}, caseId, h("div", { class: "counts" }, [any.tier, any.title].filter(Boolean).join(" · "))),
        data.variants.map((v) => {
          const cell = cells.get(v);
          if (!cell) return h("td", { class: "empty" }, "");
          const side = cell.sides.c || cell.sides.b;
          const match = cellMatches(cell, f);
          return h(
            "td",
            { class: "cell " + rateClass(side.passRate) + (match ? "" : " dim"), "data-key": cell.key },
            h(
              "a",
              { href: "#/c/" + m + "/" + cell.id, class: "cell-link", "data-key": cell.key },
              comparison ? [cell.status ? badge(cell.status, cell.status) : null, sideSummary(cell.sides.b, "base"), sideSummary(cell.sides.c, "cand")] : sideSummary(side),
              baitBadge(cell.bait)
            )
          );
        })
      );
    });
    show(
      h("div", { class: "crumbs" }, h("a", { href: "#/" }, "Runs"), "› ", data.title),
      h("h1", {}, comparison ? "Baseline vs candidate" : "Run " + data.title),
      comparison
        ? [
            facts([
              ["baseline", data.baseline.join(", ")],
              ["candidate", data.candidate.join(", ")],
              ["verdict", [badge(data.clean ? "clean" : "not clean", data.clean ? "ok" : "failed"), " gate exit code " + data.exitCode]],
              ["cells", Object.entries(data.summary).map(([k, v]) => k + " " + v).join(", ")],
            ]),
            data.baitFlags.length ? h("ul", { class: "warnings" }, data.baitFlags.map((l) => h("li", {}, l))) : null,
          ]
        : facts([
            ["started", data.startedAt],
            ["repeats", data.passed + " of " + data.repeats + " passed"],
            ["files", (data.sources || []).join(", ")],
          ]),
      filters,
      pager(cases.length, page, (p) => rerender({ page: p })),
      table(head, body, { class: "matrix", id: "matrix" }),
      pager(cases.length, page, (p) => rerender({ page: p }))
    );
  }

  // -- cell -----------------------------------------------------------------------------

  const SHORT = {
    shellCommandCount: "shell",
    envAssignmentCommandCount: "env",
    chainSegmentCount: "chain",
    maxChainSegmentsPerCommand: "maxChain",
    networkCommandCount: "net",
    webFetchToolCallCount: "webFetch",
    taskToolCallCount: "task",
    editViaShellCount: "editSh",
    repeatedSearchCount: "repSearch",
    longestToolOnlyStreak: "toolStreak",
    maxTurnDurationMs: "maxTurnMs",
  };

  async function cellPage(m, c, params) {
    const [index, data] = await Promise.all([load("index"), load("cell-" + m + "-" + c)]);
    const metrics = index.metrics.map((x) => x.metric);
    const adv = data.advisory || {};
    const sides = Object.keys(data.repeats).sort().reverse(); // candidate first
    const sideName = { c: data.matrix.kind === "comparison" ? "candidate" : "repeats", b: "baseline" };
    const advKey = { c: "candidate", b: "baseline" };

    const behaviorRows = metrics.map((metric) => {
      const verdict = (data.behaviors || []).find((b) => b.metric === metric);
      const ci = (adv.behaviors || {})[metric] || {};
      return h(
        "tr",
        {},
        h("td", {}, h("code", {}, metric)),
        h("td", {}, index.metrics.find((x) => x.metric === metric).direction),
        data.sides.b ? h("td", { class: "num" }, num(data.sides.b.medians[metric]), " ", h("span", { class: "muted" }, interval(ci.baselineCI, 1))) : null,
        h("td", { class: "num" }, num((data.sides.c || data.sides.b).medians[metric]), " ", h("span", { class: "muted" }, interval(ci.candidateCI, 1))),
        data.sides.b ? h("td", {}, verdict ? badge(verdict.verdict, verdict.verdict) : "", " ", h("span", { class: "muted" }, interval(ci.differenceCI, 1))) : null
      );
    });

    const repeatTables = sides.map((name) => {
      const all = data.repeats[name];
      let page = 0;
      const holder = h("div", {});
      const render = () => {
        const rows = all.slice(page * PAGE_ROWS, (page + 1) * PAGE_ROWS).map((r) =>
          h(
            "tr",
            { class: "repeat-row" },
            h("td", {}, h("a", { href: "#/r/" + r.key.split("-")[1] + "/" + r.key.split("-")[2] + "?m=" + m + "&c=" + c, class: "repeat-link", "data-outcome": r.outcome }, "repeat " + num(r.repeat))),
            h("td", {}, badge(r.outcome, r.outcome)),
            h("td", {}, r.status || ""),
            h("td", { class: "num" }, num(r.turnsUsed)),
            h("td", { class: "num" }, num(r.toolCallCount)),
            h("td", { class: "num" }, num(r.tokenInput)),
            h("td", { class: "num" }, num(r.tokenOutput)),
            h("td", { class: "num" }, ms(r.durationMs)),
            metrics.map((x) => h("td", { class: "num" }, r.metrics ? num(r.metrics[x]) : "–")),
            h("td", { class: "err" }, r.error || "")
          )
        );
        holder.replaceChildren(
          pager(all.length, page, (p) => { page = p; render(); }) || "",
          table(
            ["repeat", "outcome", "status", "turns", "calls", "tokens in", "tokens out", "duration"]
              .concat(metrics.map((x) => h("th", { title: x }, SHORT[x] || x)))
              .concat(["error"]),
            rows,
            { class: "repeats", "data-side": name }
          )
        );
      };
      render();
      const s = data.sides[name];
      const a = adv[advKey[name]] || {};
      return h(
        "section",
        {},
        h("h2", {}, sideName[name] + " (" + all.length + ")"),
        h("p", {}, s.passCount + "/" + s.repeats + " passed, Wilson 95% " + interval(a.wilson), a.passAtK ? " · pass@k " + Object.entries(a.passAtK).map(([k, v]) => k + ": " + num(v, 2)).join(", ") : "",
          s.mixed ? [" · ", badge("mixed provider/model", "failed")] : "", " · resolved " + s.resolved.join(", ")),
        holder
      );
    });

    const test = adv.exactTest;
    show(
      h("div", { class: "crumbs" }, h("a", { href: "#/" }, "Runs"), "› ", h("a", { href: "#/m/" + m }, data.matrix.title), "› ", data.key),
      h("h1", {}, data.caseId, " ", h("span", { class: "muted" }, "on " + data.variantId)),
      facts([
        ["title", data.title],
        ["tier", data.tier],
        ["status", data.status ? badge(data.status, data.status) : null],
        ["bait", data.bait ? [baitBadge(data.bait), " ", data.bait.metric + " threshold " + num(data.bait.threshold) +
          (data.bait.baselineMedian !== undefined ? ", baseline median " + num(data.bait.baselineMedian) : "") +
          ", median " + num(data.bait.candidateMedian)] : "none"],
        ["exact test", test ? test.test + " p=" + num(test.pValue, 4) + "; difference " + num(test.difference, 2) + " " + interval(test.differenceCI) : null],
        ["flaky baseline", adv.flakyBaseline ? "yes" : null],
      ]),
      h("h2", {}, "Behavior metrics (medians, bootstrap 95% intervals)"),
      table(["metric", "direction"].concat(data.sides.b ? ["baseline"] : []).concat([data.sides.b ? "candidate" : "median"]).concat(data.sides.b ? ["verdict, difference"] : []), behaviorRows, { id: "cell-metrics" }),
      repeatTables
    );
  }

  // -- repeat: the transcript -----------------------------------------------------------------

  function expandable(text, limit, cls) {
    if (text === null || text === undefined) return null;
    const pre = h("pre", { class: cls });
    if (text.length <= limit) {
      pre.textContent = text;
      return pre;
    }
    pre.textContent = text.slice(0, limit) + " …";
    let open = false;
    const button = h("button", { type: "button", class: "more" }, "show all " + num(text.length) + " characters");
    button.addEventListener("click", () => {
      open = !open;
      pre.textContent = open ? text : text.slice(0, limit) + " …";
      button.textContent = open ? "show less" : "show all " + num(text.length) + " characters";
    });
    return h("div", {}, pre, button);
  }

  // metric -> direction, from the transcript shown: `lower` metrics are marked
  // strongly, neutral ones (counted, never judged) lightly.
  const directions = new Map();

  function metricBadges(list) {
    return (list || []).map((metric) =>
      badge(metric, "metric " + (directions.get(metric) || ""), "counted toward " + metric + " (" + (directions.get(metric) || "") + ")"));
  }

  async function repeatPage(set, n, params) {
    const data = await load("repeat-" + set + "-" + n);
    const m = params.get("m"), c = params.get("c");
    const crumbs = h("div", { class: "crumbs" }, h("a", { href: "#/" }, "Runs"), "› ",
      m !== null ? [h("a", { href: "#/m/" + m }, "matrix"), "› "] : null,
      m !== null && c !== null ? [h("a", { href: "#/c/" + m + "/" + c }, data.resultKey || data.caseId), "› "] : null,
      "repeat " + num(data.repeat));
    const t = data.transcript;
    const stored = data.stored;
    let panel = null, turns = null;
    if (t) {
      t.metrics.forEach((x) => directions.set(x.metric, x.direction));
      const cursor = new Map();
      panel = h("div", { class: "metrics-panel", id: "metrics" }, t.metrics.map((x) => {
        const storedValue = stored ? stored[x.metric] : undefined;
        const differs = stored && storedValue !== x.total;
        return h(
          "button",
          {
            type: "button",
            class: "metric-jump" + (x.places.length ? " has" : ""),
            "data-metric": x.metric,
            disabled: !x.places.length,
            title: x.places.length ? "show the " + x.places.length + " place(s) that counted" : "nothing counted",
            onclick: () => jump(x, cursor),
          },
          h("span", {}, h("code", {}, x.metric)),
          h("span", {}, num(x.total), differs ? h("span", { class: "mismatch", title: "the row stores " + storedValue }, " (row: " + num(storedValue) + ")") : "",
            " · " + x.places.length + (x.places.every((p) => p.includes("c")) ? " call(s)" : " turn(s)") + (x.kind === "maximum" ? " at the max" : ""))
        );
      }));
      turns = h("section", { id: "transcript" }, t.turns.map(renderTurn));
    }
    const grader = data.grader
      ? h("details", { id: "grader" }, h("summary", {}, "Grader output (verify.log)" + (data.grader.truncated ? ", first part" : "")),
          h("pre", { id: "grader-log" }, data.grader.text), h("a", { href: data.grader.url, target: "_blank", rel: "noopener" }, "raw verify.log"))
      : h("p", { class: "muted", id: "grader" }, "No grader output among the artifacts.");
    const tokens = data.tokens ? Object.entries(data.tokens).map(([k, v]) => k + " " + num(v)).join(", ") : null;
    show(
      crumbs,
      h("h1", {}, data.caseId, " ", h("span", { class: "muted" }, "on " + data.variantId + ", repeat " + num(data.repeat)), " ", badge(data.outcome, data.outcome)),
      facts([
        ["status", data.fields.status],
        ["turns", num(data.fields.turnsUsed)],
        ["tool calls", num(data.fields.toolCallCount)],
        ["tokens", tokens],
        ["duration", ms(data.fields.durationMs) + " (agent " + ms(data.fields.agentDurationMs) + ", grader " + ms(data.fields.verifyDurationMs) + ")"],
        ["exit codes", "agent " + num(data.fields.agentExitCode) + ", grader " + num(data.fields.verifyExitCode)],
        ["bait", data.bait ? data.bait.metric + " threshold " + num(data.bait.threshold) : null],
        ["error", data.fields.error ? h("pre", {}, data.fields.error) : null],
        ["final text", data.fields.textPreview],
      ]),
      h("h2", {}, "Behavior metrics"),
      t
        ? [h("p", { class: "muted" }, "Computed from " + data.transcriptFile + " by the code that computes the row's metrics; click a metric to jump to the calls that counted."), panel]
        : h("p", { class: "muted" }, stored ? "Stored in the row: " + Object.entries(stored).map(([k, v]) => k + " " + num(v)).join(", ") : "The row has no behaviors (no turn stream captured)."),
      grader,
      h("h2", {}, "Transcript"),
      t ? turns : h("p", { class: "mismatch", id: "transcript-missing" }, data.transcriptError || "No transcript."),
      h("h2", {}, "Raw artifacts"),
      data.files.length
        ? h("ul", { id: "artifacts" }, data.files.map((f) => h("li", {}, h("a", { href: f.url, target: "_blank", rel: "noopener" }, f.name), h("span", { class: "muted" }, " " + num(f.size) + " bytes"))))
        : h("p", { class: "muted" }, "None."),
      h("details", {}, h("summary", {}, "Row fields"),
        table(["field", "value"], Object.entries(data.fields).map(([k, v]) => h("tr", {}, h("td", {}, h("code", {}, k)), h("td", {}, typeof v === "string" ? v : JSON.stringify(v)))), { id: "row-fields" }))
    );
  }

  function renderTurn(turn) {
    return h(
      "div",
      { class: "turn", id: turn.anchor, "data-metrics": turn.metrics.join(" ") },
      h("div", { class: "head" }, h("strong", {}, "turn " + turn.turnIndex), h("span", {}, ms(turn.durationMs)), metricBadges(turn.metrics)),
      turn.texts.filter((x) => x.trim()).map((x) => h("div", { class: "text" }, x)),
      turn.calls.map(renderCall)
    );
  }

  function renderCall(call) {
    return h(
      "div",
      { class: "call" + (call.metrics.length ? " counted" : ""), id: call.anchor, "data-metrics": call.metrics.join(" ") },
      h("div", { class: "head" }, h("span", { class: "name" }, call.name), h("span", { class: "muted" }, call.kind), metricBadges(call.metrics)),
      call.command !== null
        ? [
            expandable(call.command, 4000, "command"),
            h("div", { class: "muted" }, "chain segments (" + call.segments.length + "):"),
            h("ol", { class: "segments" }, call.segments.map((s) =>
              h("li", { class: "segment" + (s.metrics.length ? " counted" : ""), "data-metrics": s.metrics.join(" ") },
                h("code", {}, s.text), " ", h("span", { class: "muted" }, s.command ? "runs " + s.command : "runs no command"), s.heredoc ? [" ", badge("heredoc")] : "", " ", metricBadges(s.metrics))))
          ]
        : h("details", { open: call.arguments.length < 600 }, h("summary", {}, "arguments"), h("pre", { class: "args" }, call.arguments + (call.argumentsCut ? " …(cut)" : ""))),
      call.result !== null
        ? [h("div", { class: "muted" }, "result" + (call.resultCut ? " (cut)" : "") + ":"),
           call.result === "" ? h("div", { class: "muted" }, "(empty)") : expandable(call.result, 600, "result")]
        : null
    );
  }

  function jump(metric, cursor) {
    document.querySelectorAll(".hl").forEach((el) => el.classList.remove("hl"));
    const places = metric.places.map((id) => document.getElementById(id)).filter(Boolean);
    places.forEach((el) => el.classList.add("hl"));
    const k = ((cursor.get(metric.metric) ?? -1) + 1) % Math.max(1, places.length);
    cursor.set(metric.metric, k);
    if (places[k]) places[k].scrollIntoView({ block: "center" });
  }

  // -- paperclip explorer ---------------------------------------------------------------------------

  async function paperclipPage(params) {
    const data = await load("paperclip");
    const group = params.get("group") || "all";
    const cls = params.get("class") || "all";
    const q = params.get("q") || "";
    const rerender = (changes) => {
      const next = new URLSearchParams(params);
      for (const [k, v] of Object.entries(changes)) (v && v !== "all" ? next.set(k, v) : next.delete(k));
      setParams(next);
      paperclipPage(next);
    };
    const counts = new Map();
    data.cases.forEach((c) => counts.set(c.group, (counts.get(c.group) || 0) + 1));
    const text = h("input", { id: "pc-text", type: "search", placeholder: "case id, title, actor", value: q });
    text.addEventListener("change", () => rerender({ q: text.value }));
    const match = (c) =>
      (group === "all" || c.group === group) &&
      (cls === "all" || c.assertionClasses.includes(cls)) &&
      (!q || (c.caseId + " " + c.title + " " + c.actor + " " + c.taskMode).toLowerCase().includes(q.toLowerCase()));
    const shown = data.cases.filter(match);
    const sections = data.groups
      .filter((g) => shown.some((c) => c.group === g.code))
      .map((g) =>
        h("section", { class: "pc-group", "data-group": g.code },
          h("h2", {}, g.code + " — " + g.area, h("span", { class: "muted" }, " · grant " + g.grant)),
          table(["case", "title", "assertion classes", "actor", "task mode", "configurations", "verdict", "recorded", "live turns"],
            shown.filter((c) => c.group === g.code).map((c) =>
              h("tr", {},
                h("td", {}, h("a", { href: "#/p/" + c.id, class: "pc-case" }, c.caseId)),
                h("td", {}, c.title),
                h("td", {}, c.assertionClasses.map((x) => badge(x))),
                h("td", {}, c.actor),
                h("td", {}, c.taskMode),
                h("td", { class: "num" }, num(c.configurations)),
                h("td", {}, badge(c.passed ? "passed" : "failed", c.passed ? "passed" : "failed")),
                h("td", {}, c.recorded ? "yes" : ""),
                h("td", { class: "num" }, c.live ? num(c.live) : ""))))));
    show(
      h("h1", {}, "Paperclip scenario explorer"),
      data.problem ? h("p", { class: "mismatch" }, data.problem) : null,
      warnings(data.warnings),
      facts([
        ["derivative", data.derivative],
        ["recorded rows", data.recordedFiles.length ? data.recordedFiles.join(", ") : "none given: each case's configurations are run now, in process, on the mock control plane"],
        ["cases", data.cases.length + " in " + counts.size + " groups"],
      ]),
      h("div", { class: "filters" },
        h("label", {}, "group", h("select", { id: "pc-group", onchange: (e) => rerender({ group: e.target.value }) },
          h("option", { value: "all" }, "all groups"),
          data.groups.map((g) => h("option", { value: g.code, selected: g.code === group }, g.code + " — " + g.area + " (" + (counts.get(g.code) || 0) + ")")))),
        h("label", {}, "assertion class", h("select", { id: "pc-class", onchange: (e) => rerender({ class: e.target.value }) },
          h("option", { value: "all" }, "all classes"),
          data.assertionClasses.map((x) => h("option", { value: x, selected: x === cls }, x)))),
        h("label", {}, "filter", text),
        h("span", { class: "muted" }, shown.length + " of " + data.cases.length + " cases")),
      sections
    );
  }

  function diffTable(rows, id) {
    if (!rows.length) return h("p", { class: "muted" }, "Empty: nothing changed.");
    return table(["entity", "id", "field", "before", "after"],
      rows.map((r) => h("tr", { class: r.bookkeeping ? "bookkeeping" : "" },
        h("td", {}, r.entity), h("td", {}, h("code", {}, r.id)), h("td", {}, h("code", {}, r.field)),
        h("td", {}, h("code", {}, r.before)), h("td", {}, h("code", {}, r.after)))),
      { class: "state-diff", id: id });
  }

  function failureList(failures) {
    if (!failures || !failures.length) return null;
    return h("ul", { class: "warnings" }, failures.map((f) =>
      h("li", {}, "[" + f.assertionClass + "] " + (f.operation || "-") + " decision=" + (f.decision || "-") + (f.reason ? " (" + f.reason + ")" : "") + ": " + f.message)));
  }

  async function paperclipCasePage(i) {
    const data = await load("pcase-" + i);
    const plan = data.plan;
    const configs = data.configurations.map((cfg) =>
      h("section", { class: "config", "data-grants": cfg.grants },
        h("h2", {}, "Configuration: " + cfg.grants + " ", badge(cfg.passed ? "passed" : "failed", cfg.passed ? "passed" : "failed")),
        cfg.planError ? h("p", { class: "mismatch" }, cfg.planError) : [
          facts([
            ["claims", (cfg.claims || []).join(", ") || "none"],
            ["control plane", (cfg.controlPlaneActions || []).join(", ") || "nothing"],
          ]),
          h("h3", {}, "Operations and their authorization"),
          cfg.calls.length
            ? table(["#", "operation", "step", "decision", "reason", "result", "arguments"],
                cfg.calls.map((call, k) => h("tr", {},
                  h("td", { class: "num" }, k + 1),
                  h("td", {}, h("code", {}, call.operation), h("div", { class: "counts" }, call.source)),
                  h("td", {}, call.kind),
                  h("td", {}, badge(call.decision, call.decision)),
                  h("td", {}, call.reason, call.missingClaims.length ? h("div", { class: "counts" }, "missing " + call.missingClaims.join(", ")) : null),
                  h("td", {}, call.ok ? "ok" : "refused", call.error ? " · " + call.error : "", call.detail ? h("div", { class: "counts" }, call.detail) : null, call.replayed ? " · replayed" : "", call.entityId ? h("div", { class: "counts" }, call.entityId) : null),
                  h("td", {}, h("code", {}, call.arguments)))),
                { class: "calls" })
            : h("p", { class: "muted" }, "No call: the plan makes none in this configuration."),
          h("h3", {}, "Field-level state diff"),
          diffTable(cfg.stateDiff, "diff-" + cfg.grants),
          failureList(cfg.failures),
          cfg.recorded
            ? h("details", { open: !cfg.recorded.sameAsComputed }, h("summary", {}, "Recorded row " + (cfg.recorded.sameAsComputed ? "(the same as computed now)" : "(differs from what this capeval computes)")),
                facts([
                  ["passed", String(cfg.recorded.passed)],
                  ["headline", (cfg.recorded.operation || "-") + " " + (cfg.recorded.authorizationDecision || "")],
                  ["operations", (cfg.recorded.operations || []).map((op, k) => op + " " + ((cfg.recorded.decisions || [])[k] || "")).join(", ")],
                ]),
                diffTable(cfg.recorded.stateDiff, "recorded-diff-" + cfg.grants),
                failureList(cfg.recorded.failures))
            : null,
        ]));
    show(
      h("div", { class: "crumbs" }, h("a", { href: "#/paperclip" }, "Paperclip explorer"), "› ", h("a", { href: "#/paperclip?group=" + encodeURIComponent(data.group) }, data.group), "› ", data.caseId),
      h("h1", {}, data.caseId, " ", h("span", { class: "muted" }, data.title)),
      facts([
        ["group", data.group + " — " + data.groupArea + " (legacy group " + data.legacyGroup + ")"],
        ["assertion classes", data.assertionClasses.map((x) => badge(x))],
        ["actor", data.actor],
        ["task mode", data.taskMode],
        ["fixture", data.fixture],
        ["disposition", data.disposition],
        ["scenario", data.scenario],
        ["expected outcome", data.expectedOutcome],
        ["evidence", h("ul", {}, data.expectedSemantics.map((x) => h("li", {}, h("code", {}, x))))],
      ]),
      h("h2", {}, "Grants"),
      facts([
        ["group grant", data.groupGrant],
        ["required grants", data.requiredGrants.join(", ") || "none"],
        ["configurations", data.configurations.map((c) => c.grants).join(", ")],
      ]),
      h("h2", {}, "The fake agent's plan"),
      plan
        ? [h("p", { class: "muted" }, "fixture " + plan.fixture + ", seed " + plan.seed + ", run task " + (plan.runTask || "none") + ", role " + plan.role + ", task mode " + plan.taskMode),
           table(["#", "kind", "operation", "evidence", "gated", "expected", "arguments"], plan.steps.map((s, k) => h("tr", {},
             h("td", { class: "num" }, k + 1), h("td", {}, s.kind), h("td", {}, h("code", {}, s.operation)), h("td", {}, s.source),
             h("td", {}, s.gated ? "yes" : ""), h("td", {}, s.error || s.refusal || ""), h("td", {}, h("code", {}, s.arguments)))), { id: "plan" })]
        : h("p", { class: "mismatch" }, data.planError),
      configs,
      data.live.length
        ? [h("h2", {}, "Live turns"), table(["outcome", "agent", "grants", "operation", "surface", "calls", "diff size", "exit", "duration", "model"],
            data.live.map((r) => h("tr", {},
              h("td", {}, ((o) => badge(o, o === "passed" ? "passed" : "failed"))(r.outcome || (r.passed ? "passed" : "failed")), failureList(r.failures)),
              h("td", {}, r.agent || "codex"), h("td", {}, r.grants || ""),
              h("td", {}, r.operation), h("td", {}, (r.surface || []).join(", ")),
              h("td", {}, (r.operations || []).map((op, k) => op + " " + ((r.decisions || [])[k] || "")).join(", ")),
              h("td", { class: "num" }, num(r.stateDiffSize)), h("td", { class: "num" }, num(r.agentExitCode ?? r.codexExitCode)),
              h("td", { class: "num" }, ms(r.durationMs)), h("td", {}, r.model || ""))), { id: "live" })]
        : null,
      data.journals.map((j, k) => h("section", { class: "journal" },
        h("h2", {}, "Control-plane journal " + (k + 1)),
        facts([["file", j.file], ["granted", String(j.granted)], ["surface", (j.surface || []).join(", ")]]),
        j.errors.length ? h("ul", { class: "warnings" }, j.errors.map((e) => h("li", {}, e))) : null,
        j.calls.length
          ? table(["#", "operation", "on surface", "decision", "reason", "result", "arguments", "state diff"],
              j.calls.map((call, n) => h("tr", {},
                h("td", { class: "num" }, n + 1), h("td", {}, h("code", {}, call.operation)), h("td", {}, call.onSurface ? "yes" : "no"),
                h("td", {}, badge(call.decision, call.decision)), h("td", {}, call.reason),
                h("td", {}, call.ok ? "ok" : "refused", call.error ? " · " + call.error : "", call.detail ? h("div", { class: "counts" }, call.detail) : null),
                h("td", {}, h("code", {}, call.arguments)),
                h("td", {}, call.stateDiff.length ? h("details", {}, h("summary", {}, call.stateDiff.length + " change(s)"), diffTable(call.stateDiff, null)) : "none"))),
              { class: "journal-calls" })
          : h("p", { class: "muted" }, "No call was made."))),
      data.live.length || data.journals.length ? null : h("p", { class: "muted" }, "No live turn recorded for this case.")
    );
  }

  window.addEventListener("hashchange", route);
  route();
})();
