// RisingSpark dashboard: a job's fragment graph drawn as SVG. Data flows downwards: upstream jobs
// on top, then the job's fragments (boxes listing their executors), exchanges as arrows between
// them, and the jobs reading this one at the bottom.
"use strict";

(function () {
  const RS = window.RS;
  const BOX_W = 360, HEADER = 24, LINE = 16, FOOTER = 20, BAR = 28, GAP_X = 40, GAP_Y = 64, PAD = 16;
  const LINK_H = 44;

  function depths(graph) {
    const depth = {};
    const root = graph.fragments.length ? graph.fragments[0].fragment_id : null;
    if (root === null) return depth;
    depth[root] = 0;
    let changed = true;
    while (changed) {  // fragments form a tree below the root: relax until stable
      changed = false;
      for (const e of graph.exchanges) {
        if (depth[e.downstream_fragment_id] !== undefined && depth[e.upstream_fragment_id] === undefined) {
          depth[e.upstream_fragment_id] = depth[e.downstream_fragment_id] + 1;
          changed = true;
        }
      }
    }
    for (const f of graph.fragments) if (depth[f.fragment_id] === undefined) depth[f.fragment_id] = 0;
    return depth;
  }

  function boxHeight(f) {
    return HEADER + LINE * f.executors.length + FOOTER + (f.backfill ? BAR : 0);
  }

  function truncate(s, n) {
    return s.length > n ? s.slice(0, n - 1) + "…" : s;
  }

  function executorText(ex) {
    const detail = ex.detail.replace(/^Stream\w+\s*/, "").replace(/^\{\s*|\s*\}$/g, "");
    return detail ? `${ex.name}  ${detail}` : ex.name;
  }

  // Draws `graph` (the /api/jobs/{id}/fragments answer) into `container`; `onSelect(jobId)` is
  // called when a linked job is clicked.
  RS.drawFragmentGraph = function (container, graph, onSelect) {
    const depth = depths(graph);
    const maxDepth = Math.max(0, ...Object.values(depth));
    const hasUp = graph.upstream_jobs.length > 0;
    const layers = [];
    const place = (layer, item) => { (layers[layer] = layers[layer] || []).push(item); };
    for (const j of graph.upstream_jobs) place(0, { kind: "job", link: j, h: LINK_H, key: "up" + j.job_id });
    const base = hasUp ? 1 : 0;
    for (const f of graph.fragments) {
      place(base + maxDepth - depth[f.fragment_id], { kind: "fragment", f, h: boxHeight(f), key: "f" + f.fragment_id });
    }
    const downLayer = base + maxDepth + 1;
    for (const j of graph.downstream_jobs) place(downLayer, { kind: "job", link: j, h: LINK_H, key: "down" + j.job_id });

    const widest = Math.max(1, ...layers.map((l) => (l ? l.length : 0)));
    const width = PAD * 2 + widest * BOX_W + (widest - 1) * GAP_X;
    const pos = {};
    let y = PAD;
    for (const layer of layers) {
      if (!layer) continue;
      const h = Math.max(...layer.map((i) => i.h));
      const rowW = layer.length * BOX_W + (layer.length - 1) * GAP_X;
      let x = (width - rowW) / 2;
      for (const item of layer) { pos[item.key] = { x, y, w: BOX_W, h: item.h, item }; x += BOX_W + GAP_X; }
      y += h + GAP_Y;
    }
    const height = y - GAP_Y + PAD;
    const svg = RS.svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "fragment-graph",
      "data-job": graph.name });
    const defs = RS.svg("defs");
    const marker = RS.svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7,
      markerHeight: 7, orient: "auto-start-reverse" });
    marker.appendChild(RS.svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow-head" }));
    defs.appendChild(marker);
    svg.appendChild(defs);

    const arrow = (from, to, label, cls) => {
      const x1 = from.x + from.w / 2, y1 = from.y + from.h, x2 = to.x + to.w / 2, y2 = to.y;
      const my = (y1 + y2) / 2;
      svg.appendChild(RS.svg("path", { d: `M ${x1} ${y1} C ${x1} ${my}, ${x2} ${my}, ${x2} ${y2 - 2}`,
        class: "edge " + (cls || ""), "marker-end": "url(#arrow)" }));
      if (label) {
        svg.appendChild(RS.svg("text", { x: (x1 + x2) / 2 + 8, y: my + 4, class: "edge-label" }, label));
      }
    };
    for (const e of graph.exchanges) {
      const from = pos["f" + e.upstream_fragment_id], to = pos["f" + e.downstream_fragment_id];
      if (from && to) arrow(from, to, "exchange · " + e.dispatch, "exchange");
    }
    for (const j of graph.upstream_jobs) {
      arrow(pos["up" + j.job_id], pos["f" + j.local_fragment_id], "scan (backfill, then change log)", "link");
    }
    for (const j of graph.downstream_jobs) {
      arrow(pos["f" + j.local_fragment_id], pos["down" + j.job_id], "change log", "link");
    }

    for (const p of Object.values(pos)) {
      const g = RS.svg("g", { transform: `translate(${p.x},${p.y})` });
      if (p.item.kind === "job") {
        const j = p.item.link;
        g.setAttribute("class", "linked-job");
        g.setAttribute("data-job-id", j.job_id);
        g.appendChild(RS.svg("rect", { width: p.w, height: p.h, rx: 6, class: "job-box" }));
        g.appendChild(RS.svg("text", { x: 10, y: 18, class: "box-title" }, j.name));
        g.appendChild(RS.svg("text", { x: 10, y: 34, class: "box-foot" }, `job ${j.job_id} · fragment ${j.fragment_id}`));
        g.addEventListener("click", () => onSelect(j.job_id));
      } else {
        const f = p.item.f;
        g.setAttribute("class", "fragment" + (f.backfill ? " backfilling" : ""));
        g.setAttribute("data-fragment-id", f.fragment_id);
        g.appendChild(RS.svg("rect", { width: p.w, height: p.h, rx: 6, class: "fragment-box" }));
        g.appendChild(RS.svg("text", { x: 10, y: 17, class: "box-title" }, `Fragment ${f.fragment_id}`));
        g.appendChild(RS.svg("text", { x: p.w - 10, y: 17, class: "box-foot", "text-anchor": "end" },
          `×${f.parallelism === null ? "?" : f.parallelism}`));
        f.executors.forEach((ex, i) => {
          const t = RS.svg("text", { x: 12, y: HEADER + LINE * i + 12, class: "executor" }, truncate(executorText(ex), 54));
          t.appendChild(RS.svg("title", {}, ex.detail));
          g.appendChild(t);
        });
        let fy = HEADER + LINE * f.executors.length + 13;
        g.appendChild(RS.svg("text", { x: 10, y: fy, class: "box-foot" },
          `${f.parallelism === null ? "?" : f.parallelism} actors on ${f.node}`));
        if (f.backfill) {
          const b = f.backfill;
          const ratio = b.total_rows > 0 ? Math.min(1, b.consumed_rows / b.total_rows) : 0;
          fy += 8;
          g.appendChild(RS.svg("rect", { x: 10, y: fy, width: p.w - 20, height: 8, rx: 3, class: "bar-bg" }));
          g.appendChild(RS.svg("rect", { x: 10, y: fy, width: (p.w - 20) * ratio, height: 8, rx: 3, class: "bar-fill" }));
          g.appendChild(RS.svg("text", { x: 10, y: fy + 19, class: "box-foot" },
            `${b.progress} · ${RS.fmtCount(b.rows_per_second)} rows/s`));
        }
      }
      svg.appendChild(g);
    }
    container.replaceChildren(svg);
  };
})();
