package ui

// pageHTML is the live page: the report's stylesheet, four canvases and
// an inline script that draws them from /events (or by polling
// /api/state when server-sent events are unavailable).
const pageHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>splitguard live — {{.Title}}</title>
<style>{{css}}</style>
</head>
<body data-updates="0">
<header class="top"><h1>splitguard — live training</h1><span class="sub">{{.Title}} · protection {{.Protect}}</span></header>
<main>
<div class="kpis">
 <div class="kpi"><div class="k">status</div><div class="v" id="k-status">waiting</div></div>
 <div class="kpi"><div class="k">step</div><div class="v" id="k-step">—</div></div>
 <div class="kpi"><div class="k">train loss (recent)</div><div class="v" id="k-loss">—</div></div>
 <div class="kpi"><div class="k">last test AUC</div><div class="v" id="k-auc">—</div></div>
 <div class="kpi"><div class="k">elapsed</div><div class="v" id="k-time">—</div></div>
</div>
<div class="note" id="err" hidden></div>
<section class="card"><h2>Leak AUC per batch</h2><p class="lead">Every audited attack and passive layer, smoothed (each point is a mean over equal runs of batches; older points are merged as training goes on). 0.5 (dotted) is chance.</p>
<canvas class="chart" id="c-leak"></canvas><div class="legend" id="l-leak"></div></section>
<section class="card"><h2>Test AUC</h2><p class="lead">On the test split at every evaluation.</p>
<canvas class="chart" id="c-auc"></canvas></section>
<section class="card" id="s-extra" hidden><h2>At every evaluation: each passive party and the features</h2><p class="lead">Each passive party's contribution (validation AUC minus the AUC with its embedding at its mean) and the feature attacks' figures (R² and top-1 of the passive's features read by the active party), where the run measures them.</p>
<canvas class="chart" id="c-extra"></canvas><div class="legend" id="l-extra"></div></section>
<section class="card" id="s-integrity" hidden><h2>Integrity detectors</h2><p class="lead">Each detector's largest score over the training batches since the evaluation before (0: nothing suspicious; each detector has its own scale). A dashed line in a detector's colour is the score at which it ends the run.</p>
<canvas class="chart" id="c-integrity"></canvas><div class="legend" id="l-integrity"></div></section>
<section class="card"><h2>Training loss</h2><p class="lead">Mean BCE of each batch, smoothed.</p>
<canvas class="chart" id="c-loss"></canvas></section>
</main>
<footer>served by splitguard train --ui · updates by server-sent events</footer>
<script>
(function () {
  var methodColors = {{colors}};
  var palette = ['#0072b2','#d55e00','#009e73','#8844aa','#e69f00','#56b4e9','#cc79a7','#333333','#8c564b','#17becf','#bcbd22','#7f7f7f'];
  var mainColor = methodColors[{{.Method}}] || '#0072b2';
  function fmt(v, p) { return (v === null || v === undefined || isNaN(v)) ? '—' : Number(v).toFixed(p); }
  function draw(id, series, opt) {
    var c = document.getElementById(id), dpr = window.devicePixelRatio || 1;
    var W = c.clientWidth, H = c.clientHeight;
    c.width = W * dpr; c.height = H * dpr;
    var g = c.getContext('2d'); g.setTransform(dpr, 0, 0, dpr, 0, 0); g.clearRect(0, 0, W, H);
    var L = 56, R = 14, T = 12, B = 34, xmin = Infinity, xmax = -Infinity, ymin = Infinity, ymax = -Infinity;
    series.forEach(function (s) { s.pts.forEach(function (p) {
      xmin = Math.min(xmin, p[0]); xmax = Math.max(xmax, p[0]); ymin = Math.min(ymin, p[1]); ymax = Math.max(ymax, p[1]); }); });
    g.font = '12px system-ui, sans-serif'; g.fillStyle = '#5b6475';
    if (!isFinite(xmin)) { g.fillText('no data yet', L, T + 20); return; }
    if (opt.ref !== undefined) { ymin = Math.min(ymin, opt.ref - 0.02); ymax = Math.max(ymax, opt.ref + 0.02); }
    (opt.refs || []).forEach(function (r) { ymin = Math.min(ymin, r.y); ymax = Math.max(ymax, r.y); });
    if (opt.lo !== undefined) ymin = Math.max(ymin, opt.lo);
    if (opt.hi !== undefined) ymax = Math.min(ymax, opt.hi);
    if (xmax === xmin) xmax = xmin + 1;
    if (ymax - ymin < 1e-9) { ymax += 0.01; ymin -= 0.01; }
    var pad = 0.05 * (ymax - ymin); ymin -= pad; ymax += pad;
    function X(x) { return L + (x - xmin) / (xmax - xmin) * (W - L - R); }
    function Y(y) { return T + (1 - (y - ymin) / (ymax - ymin)) * (H - T - B); }
    g.strokeStyle = '#e3e6ec'; g.lineWidth = 1; g.textAlign = 'right'; g.textBaseline = 'middle';
    for (var i = 0; i <= 4; i++) { var y = ymin + i * (ymax - ymin) / 4;
      g.beginPath(); g.moveTo(L, Y(y)); g.lineTo(W - R, Y(y)); g.stroke(); g.fillText(y.toFixed(3), L - 6, Y(y)); }
    g.textAlign = 'center'; g.textBaseline = 'top';
    for (var j = 0; j <= 5; j++) { var x = xmin + j * (xmax - xmin) / 5; g.fillText(Math.round(x), X(x), H - B + 6); }
    g.fillText('training step (batch)', L + (W - L - R) / 2, H - 14);
    if (opt.ref !== undefined) { g.setLineDash([3, 3]); g.strokeStyle = '#999'; g.beginPath(); g.moveTo(L, Y(opt.ref)); g.lineTo(W - R, Y(opt.ref)); g.stroke(); g.setLineDash([]); }
    (opt.refs || []).forEach(function (r) { g.setLineDash([6, 4]); g.strokeStyle = r.color; g.lineWidth = 1; g.beginPath(); g.moveTo(L, Y(r.y)); g.lineTo(W - R, Y(r.y)); g.stroke(); g.setLineDash([]); });
    series.forEach(function (s) {
      g.strokeStyle = s.color; g.lineWidth = 1.7; g.beginPath();
      s.pts.forEach(function (p, k) { if (k) g.lineTo(X(p[0]), Y(p[1])); else g.moveTo(X(p[0]), Y(p[1])); });
      g.stroke();
      if (s.pts.length < 40) { g.fillStyle = s.color; s.pts.forEach(function (p) { g.beginPath(); g.arc(X(p[0]), Y(p[1]), 2.5, 0, 7); g.fill(); }); }
    });
  }
  var state = null, updates = 0;
  function render() {
    if (!state) return;
    var s = state, total = s.info.total_steps;
    document.getElementById('k-status').textContent = s.error ? 'failed' : (s.done ? 'finished' : 'training');
    document.getElementById('k-step').textContent = s.step + (total ? ' / ' + total : '');
    var lp = s.loss.length ? s.loss[s.loss.length - 1][1] : null;
    document.getElementById('k-loss').textContent = fmt(lp, 4);
    document.getElementById('k-auc').textContent = s.last_eval ? fmt(s.last_eval.TestAUC, 4) : '—';
    document.getElementById('k-time').textContent = Math.round(s.elapsed_s) + ' s';
    var e = document.getElementById('err'); e.hidden = !s.error; e.textContent = s.error || '';
    var leak = (s.keys || []).map(function (k, i) { return { name: k, pts: s.leak[k], color: palette[i % palette.length] }; });
    draw('c-leak', leak, { ref: 0.5, lo: 0, hi: 1 });
    var lg = document.getElementById('l-leak'); lg.innerHTML = '';
    leak.forEach(function (l) { var v = s.last_leak[l.name];
      var span = document.createElement('span');
      span.innerHTML = '<span class="swatch" style="background:' + l.color + '"></span>';
      span.appendChild(document.createTextNode(l.name + ' (last ' + fmt(v, 3) + ')')); lg.appendChild(span); });
    draw('c-auc', [{ name: 'test AUC', pts: s.eval_auc, color: mainColor }], {});
    var extra = (s.extra_keys || []).map(function (k, i) { return { name: k, pts: s.eval_extra[k], color: palette[i % palette.length] }; });
    document.getElementById('s-extra').hidden = !extra.length;
    if (extra.length) {
      draw('c-extra', extra, {});
      var lx = document.getElementById('l-extra'); lx.innerHTML = '';
      extra.forEach(function (l) { var p = l.pts.length ? l.pts[l.pts.length - 1][1] : null;
        var span = document.createElement('span');
        span.innerHTML = '<span class="swatch" style="background:' + l.color + '"></span>';
        span.appendChild(document.createTextNode(l.name + ' (last ' + fmt(p, 3) + ')')); lx.appendChild(span); });
    }
    var integ = (s.integrity_keys || []).map(function (k, i) { return { name: k, pts: s.integrity[k], color: palette[i % palette.length] }; });
    document.getElementById('s-integrity').hidden = !integ.length;
    if (integ.length) {
      var stops = s.info.integrity_stop || {}, alarms = s.info.integrity_alarm || {};
      var refs = integ.filter(function (l) { return stops[l.name] !== undefined; }).map(function (l) { return { y: stops[l.name], color: l.color }; });
      integ.forEach(function (l) { if (alarms[l.name] > 0 && alarms[l.name] !== stops[l.name]) refs.push({ y: alarms[l.name], color: l.color }); });
      draw('c-integrity', integ, { refs: refs });
      var li = document.getElementById('l-integrity'); li.innerHTML = '';
      integ.forEach(function (l) { var p = l.pts.length ? l.pts[l.pts.length - 1][1] : null;
        var span = document.createElement('span');
        span.innerHTML = '<span class="swatch" style="background:' + l.color + '"></span>';
        span.appendChild(document.createTextNode(l.name + ' (last ' + fmt(p, 3) + (alarms[l.name] > 0 ? ', alarms at ' + fmt(alarms[l.name], 3) : '') + (stops[l.name] !== undefined ? ', stops at ' + fmt(stops[l.name], 3) : '') + ')')); li.appendChild(span); });
    }
    draw('c-loss', [{ name: 'loss', pts: s.loss, color: mainColor }], {});
    document.body.dataset.updates = ++updates;
    document.body.dataset.step = s.step;
  }
  function set(s) { state = s; render(); }
  function poll() {
    fetch('/api/state', { cache: 'no-store' }).then(function (r) { return r.json(); }).then(function (s) {
      set(s); if (!s.done) setTimeout(poll, 1000); }).catch(function () { setTimeout(poll, 3000); });
  }
  if (window.EventSource) {
    var es = new EventSource('/events'), got = false;
    es.addEventListener('state', function (ev) { got = true; set(JSON.parse(ev.data)); });
    es.onerror = function () { if (!got) { es.close(); poll(); } };
  } else poll();
  window.addEventListener('resize', render);
})();
</script>
</body></html>
`
