// RisingSpark dashboard: polls meta's JSON API and renders jobs, fragments, nodes, barriers and
// storage. No framework and no build step.
"use strict";

(function () {
  const RS = window.RS;
  const $ = (id) => document.getElementById(id);
  const state = { selected: null, jobs: [], failures: 0 };
  const WINDOW_S = 300;

  async function getJson(path) {
    const r = await fetch(path, { cache: "no-store" });
    if (!r.ok) {
      let message = r.statusText;
      try { message = (await r.json()).message || message; } catch (e) { /* not JSON */ }
      throw new Error(`${path}: ${message}`);
    }
    return r.json();
  }

  function showError(err) {
    const banner = $("error-banner");
    if (err) {
      banner.textContent = "Cannot reach meta: " + err.message;
      banner.hidden = false;
      $("live").classList.add("stale");
    } else {
      banner.hidden = true;
      $("live").classList.remove("stale");
    }
  }

  // ---- jobs ---------------------------------------------------------------------------------------
  function progressCell(job) {
    if (!job.backfill.length) {
      return job.status === "Created" ? '<span class="muted">done</span>' : '<span class="muted">–</span>';
    }
    return job.backfill.map((b) => {
      const pct = b.total_rows > 0 ? Math.min(100, (100 * b.consumed_rows) / b.total_rows) : 0;
      const eta = b.eta_seconds === null ? "–" : RS.fmtSeconds(b.eta_seconds);
      const rate = b.rows_per_second === null ? "–" : RS.fmtCount(b.rows_per_second);
      const where = b.fragment_id === null ? "" : `fragment ${b.fragment_id}`;
      const from = b.upstream ? ` ← ${RS.escape(b.upstream)}` : "";
      return `<div class="progress" role="progressbar" aria-valuemin="0" aria-valuemax="100"
          aria-valuenow="${pct.toFixed(2)}" data-job="${RS.escape(job.name)}" data-fragment="${b.fragment_id ?? ""}"
          data-consumed="${b.consumed_rows}" data-total="${b.total_rows}">
          <div class="progress-track"><div class="progress-fill" style="width:${pct.toFixed(2)}%"></div></div>
          <div class="progress-text">${b.queued ? RS.escape(b.progress) : `${pct.toFixed(2)}% · ${RS.fmtCount(b.consumed_rows)}/${RS.fmtCount(b.total_rows)} rows`}${b.waiting_for && b.waiting_for.length ? ` · waiting for ${RS.escape(b.waiting_for.join(", "))}` : ""}</div>
          <div class="progress-meta muted">${where}${from} · ${rate} rows/s · ETA ${eta}${b.rate_limit ? ` · limit ${RS.escape(b.rate_limit)}` : ""}</div>
        </div>`;
    }).join("");
  }

  function renderJobs(jobs) {
    state.jobs = jobs;
    const rows = jobs.map((j) => {
      const sel = j.id === state.selected ? " selected" : "";
      const par = j.parallelism === null ? "–" : j.parallelism + (j.adaptive ? " (adaptive)" : "");
      const rate = j.backfill_rate_limit === null ? "" :
        `<div class="muted">${j.backfill_rate_adaptive ? "adaptive " : ""}rate limit ${RS.fmtCount(j.backfill_rate_limit)}/s</div>`;
      return `<tr class="job${sel}" data-job-id="${j.id}" data-job="${RS.escape(j.name)}" data-status="${j.status}">
        <td>${j.id}</td><td><b>${RS.escape(j.name)}</b></td><td>${j.kind === "table" ? "table" : "materialized view"}</td>
        <td><span class="badge ${j.status.toLowerCase()}">${j.status}</span></td><td>${j.create_type}</td>
        <td>${j.backfill_type || "–"}</td><td>${RS.escape(j.resource_group)}</td><td>${par}${rate}</td>
        <td class="progress-col">${progressCell(j)}</td>
        <td class="statement" title="${RS.escape(j.statement)}">${RS.escape(j.statement)}</td></tr>`;
    });
    document.querySelector("#jobs tbody").innerHTML = rows.join("");
    $("jobs-empty").hidden = jobs.length > 0;
    if (state.selected === null) {
      const creating = jobs.find((j) => j.status === "Creating");
      const pick = creating || jobs[jobs.length - 1];
      if (pick) select(pick.id);
    } else if (!jobs.some((j) => j.id === state.selected)) {
      state.selected = null;
      $("fragment-graph").replaceChildren();
      $("fragments-title").textContent = "— choose a job above";
    }
  }

  function select(jobId) {
    state.selected = jobId;
    for (const tr of document.querySelectorAll("#jobs tr.job")) {
      tr.classList.toggle("selected", Number(tr.dataset.jobId) === jobId);
    }
    refreshFragments();
  }

  async function refreshFragments() {
    if (state.selected === null) return;
    const id = state.selected;
    const graph = await getJson(`/api/jobs/${id}/fragments`);
    if (state.selected !== id) return;
    $("fragments-title").textContent = `— ${graph.name} (job ${graph.job_id}, ${graph.status}): ` +
      `${graph.fragments.length} fragments, ${graph.exchanges.length} exchanges`;
    RS.drawFragmentGraph($("fragment-graph"), graph, select);
  }

  // ---- nodes ----------------------------------------------------------------------------------------
  function renderNodes(data) {
    document.querySelector("#nodes tbody").innerHTML = data.nodes.map((n) => `<tr data-node="${RS.escape(n.id)}">
      <td><b>${RS.escape(n.id)}</b></td><td>${n.role}</td><td>${RS.escape(n.resource_group || "–")}</td>
      <td>${RS.escape(n.address || "in process")}</td><td>${RS.escape(n.process)} (pid ${n.pid})</td>
      <td>${n.parallelism === null ? "–" : n.parallelism}</td></tr>`).join("");
    const proc = data.processes[0];
    if (!proc) return;
    const components = proc.samples.length ? Object.keys(proc.samples[proc.samples.length - 1].cpu_cores) : [];
    const used = components.filter((c) => proc.samples.some((s) => s.cpu_cores[c] > 0 || s.rss_bytes[c] > 0));
    const total = (s, field) => Object.values(s[field]).reduce((a, b) => a + b, 0);
    // other processes (serverless backfillers, while they exist): one line each, their total
    const others = data.processes.slice(1);
    const series = (field) => [
      { name: "total", color: "#333", points: proc.samples.map((s) => [s.at, total(s, field)]) },
      ...used.map((c, i) => ({ name: c, color: RS.COLORS[i % RS.COLORS.length], points: proc.samples.map((s) => [s.at, s[field][c] || 0]) })),
      ...others.map((p, i) => ({ name: p.nodes[0], color: RS.COLORS[(used.length + i) % RS.COLORS.length], points: p.samples.map((s) => [s.at, total(s, field)]) })),
    ];
    RS.lineChart($("cpu-chart"), series("cpu_cores"), { windowS: WINDOW_S, fmt: (v) => v.toFixed(1), yMin: 1 });
    RS.lineChart($("mem-chart"), series("rss_bytes"), { windowS: WINDOW_S, fmt: RS.fmtBytes });
    const last = proc.samples[proc.samples.length - 1];
    if (last) {
      const cpu = Object.values(last.cpu_cores).reduce((a, b) => a + b, 0);
      const mem = Object.values(last.rss_bytes).reduce((a, b) => a + b, 0);
      $("cpu-now").textContent = `— now ${cpu.toFixed(2)} of ${proc.cpu_count} cores (${proc.name})`;
      $("mem-now").textContent = `— now ${RS.fmtBytes(mem)} of ${RS.fmtBytes(proc.memory_total_bytes)}`;
    }
  }

  // ---- barriers and storage -----------------------------------------------------------------------
  function renderBarriers(b) {
    $("epoch").textContent = b.committed_epoch;
    $("epoch-time").textContent = b.committed_at_ms ? new Date(b.committed_at_ms).toISOString().replace("T", " ").slice(0, 23) : "";
    $("barrier-p50").textContent = RS.fmtSeconds(b.p50);
    $("barrier-p99").textContent = RS.fmtSeconds(b.p99);
    const last = b.recent[b.recent.length - 1];
    $("barrier-stats").innerHTML = `
      <span>committed epoch <b>${b.committed_epoch}</b></span>
      <span>barrier interval <b>${b.barrier_interval_ms} ms</b></span>
      <span>last ${Math.round(b.window_s / 60)} min: <b>${b.count}</b> barriers, p50 <b>${RS.fmtSeconds(b.p50)}</b>, p99 <b>${RS.fmtSeconds(b.p99)}</b></span>
      <span>last commit <b>${last ? RS.fmtSeconds(last.commit_s) : "–"}</b></span>
      <span>state cache hits <b>${b.state_cache_hit_rate === null ? "–" : (100 * b.state_cache_hit_rate).toFixed(1) + " %"}</b></span>
      ${b.last_error ? `<span class="error">last error: ${RS.escape(b.last_error)}</span>` : ""}`;
    RS.lineChart($("barrier-chart"), [
      { name: "p50", color: RS.COLORS[0], points: b.series.map((s) => [s.start + b.bucket_s / 2, s.p50]) },
      { name: "p99", color: RS.COLORS[1], points: b.series.map((s) => [s.start + b.bucket_s / 2, s.p99]) },
    ], { windowS: b.window_s, fmt: RS.fmtSeconds, yMin: b.barrier_interval_ms / 1000 });
  }

  // "L3 2 · 12 MB  L6 40 · 1.2 GB": SSTs and bytes of each level below L0 that holds any
  function levelCells(levels) {
    return levels.filter((l) => l.level > 0)
      .map((l) => `<span class="level">L${l.level} <b>${l.ssts}</b> · ${RS.fmtBytes(l.size_bytes)}</span>`).join(" ");
  }

  function renderStorage(s) {
    const maxL0 = Math.max(1, ...s.tables.map((t) => t.l0_sub_levels));
    document.querySelector("#storage tbody").innerHTML = s.tables.map((t) => `<tr data-table-id="${t.table_id}">
      <td>${t.table_id}</td><td>${RS.escape(t.job)}</td>
      <td><span class="l0-bar" style="width:${(60 * t.l0_sub_levels) / maxL0}px"></span> ${t.l0_sub_levels}</td>
      <td>${t.l0_ssts}</td><td>${levelCells(t.levels)}</td><td>${RS.fmtBytes(t.size_bytes)}</td><td>${RS.fmtCount(t.rows)}</td></tr>`).join("");
    const stalls = s.write_stalls.map((w) => `<span class="badge stalled"
      title="state table ${w.state_table_id}: ${w.l0_sub_levels} L0 sub-levels">write stall: ${RS.escape(w.name)}</span>`)
      .join(" ");
    $("storage-stats").innerHTML = `${stalls}
      <span>version <b>${s.version_id}</b></span>
      <span>compaction: <b>${s.compaction_tasks_total}</b> tasks, <b>${RS.fmtBytes(s.compaction_bytes_total)}</b> written</span>`;
    RS.lineChart($("storage-chart"), [
      { name: "deepest table", color: RS.COLORS[3], points: s.samples.map((x) => [x.at, x.max_l0_sub_levels]) },
      { name: "all tables", color: RS.COLORS[4], dash: "4 3", points: s.samples.map((x) => [x.at, x.total_l0_sub_levels]) },
    ], { windowS: WINDOW_S, fmt: (v) => v.toFixed(0), yMin: 4 });
    RS.lineChart($("compaction-chart"), [
      { name: "bytes written", color: RS.COLORS[2], points: s.samples.map((x) => [x.at, x.compaction_bytes]) },
    ], { windowS: WINDOW_S, fmt: RS.fmtBytes, yMin: 1024 });
  }

  // ---- polling ------------------------------------------------------------------------------------
  async function poll(fn, path, everyMs) {
    for (;;) {
      try {
        fn(await getJson(path));
        state.failures = 0;
        showError(null);
      } catch (err) {
        state.failures += 1;
        showError(err);
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  }

  document.querySelector("#jobs tbody").addEventListener("click", (ev) => {
    const tr = ev.target.closest("tr.job");
    if (tr) select(Number(tr.dataset.jobId));
  });
  poll(renderJobs, "/api/jobs", 1000);
  poll(renderBarriers, "/api/barriers", 2000);
  poll(renderStorage, "/api/storage", 2000);
  poll(renderNodes, "/api/nodes", 2000);
  (async function fragmentsLoop() {
    for (;;) {
      await new Promise((r) => setTimeout(r, 2000));
      try { await refreshFragments(); } catch (err) { showError(err); }
    }
  })();
})();
