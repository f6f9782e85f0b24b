// RisingSpark dashboard: formatting helpers and SVG line charts (no library).
"use strict";

const RS = window.RS || {};
window.RS = RS;

const SVG_NS = "http://www.w3.org/2000/svg";

RS.svg = function (tag, attrs, text) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
};

RS.escape = function (s) {
  return String(s === null || s === undefined ? "" : s).replace(/[&<>"']/g, (c) => ({
    "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
  })[c]);
};

RS.fmtCount = function (n) {
  if (n === null || n === undefined) return "–";
  const a = Math.abs(n);
  if (a >= 1e9) return (n / 1e9).toFixed(2) + "G";
  if (a >= 1e6) return (n / 1e6).toFixed(2) + "M";
  if (a >= 1e4) return (n / 1e3).toFixed(1) + "K";
  return String(Math.round(n));
};

RS.fmtBytes = function (n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 || Math.abs(n) >= 100 ? String(Math.round(n)) : n.toFixed(1)) + " " + units[i];
};

RS.fmtSeconds = function (s) {
  if (s === null || s === undefined) return "–";
  if (s < 1) return Math.round(s * 1000) + " ms";
  if (s < 60) return s.toFixed(1) + " s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + "m " + Math.round(s - m * 60) + "s";
  return Math.floor(m / 60) + "h " + (m % 60) + "m";
};

RS.fmtClock = function (unixSeconds) {
  const d = new Date(unixSeconds * 1000);
  return d.toTimeString().slice(0, 8);
};

// A line chart of `series` ([{name, color, points: [[unixSeconds, value]], dash?}]) over the last
// `windowS` seconds, into the <svg> `el` (viewBox 560x170).
RS.lineChart = function (el, series, opts) {
  const W = 560, H = 170, left = 58, right = 10, top = 8, bottom = 34;
  const now = opts.now || Date.now() / 1000;
  const t0 = now - opts.windowS;
  let yMax = opts.yMin || 0;
  for (const s of series) for (const [, v] of s.points) yMax = Math.max(yMax, v);
  yMax = yMax > 0 ? yMax * 1.1 : 1;
  const x = (t) => left + ((t - t0) / opts.windowS) * (W - left - right);
  const y = (v) => top + (1 - v / yMax) * (H - top - bottom);
  el.replaceChildren();
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    el.appendChild(RS.svg("line", { x1: left, x2: W - right, y1: y(v), y2: y(v), class: "grid" }));
    el.appendChild(RS.svg("text", { x: left - 4, y: y(v) + 3, class: "axis", "text-anchor": "end" }, opts.fmt(v)));
  }
  for (let i = 0; i <= 5; i++) {
    const t = t0 + (opts.windowS * i) / 5;
    const anchor = i === 0 ? "start" : i === 5 ? "end" : "middle";
    el.appendChild(RS.svg("text", { x: x(t), y: H - bottom + 12, class: "axis", "text-anchor": anchor },
      RS.fmtClock(t)));
  }
  let lx = left;
  for (const s of series) {
    const pts = s.points.filter(([t]) => t >= t0).map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`);
    if (pts.length === 1) pts.push(pts[0]);
    if (pts.length) {
      el.appendChild(RS.svg("polyline", {
        points: pts.join(" "), fill: "none", stroke: s.color, "stroke-width": 1.6,
        "stroke-dasharray": s.dash || "", class: "series", "data-series": s.name,
      }));
    }
    el.appendChild(RS.svg("rect", { x: lx, y: H - 12, width: 10, height: 4, fill: s.color }));
    const label = RS.svg("text", { x: lx + 14, y: H - 8, class: "legend" }, s.name);
    el.appendChild(label);
    lx += 24 + s.name.length * 6.2;
  }
  if (!series.some((s) => s.points.length)) {
    el.appendChild(RS.svg("text", { x: W / 2, y: H / 2, class: "axis", "text-anchor": "middle" }, "no samples yet"));
  }
};

RS.COLORS = ["#2f7ed8", "#e4572e", "#29a36a", "#9b59b6", "#f2a541", "#7f8c8d"];
