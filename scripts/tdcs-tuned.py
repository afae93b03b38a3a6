#!/usr/bin/env python3
"""T-DCS over the default and the tuned per-batch attacks, and the DCS against the strongest attack,
from a sweep directory's runs (summary.json), computed independently of the report (experiments/
defences.md, "The 1M-row file rerun with the tuned attacker").

    python3 scripts/tdcs-tuned.py SWEEP_DIR norm,cosine,spectral [EXTRA_DIR ...]

Each EXTRA_DIR is a sweep of the same runs (same names, seeds and data) with other attacks, e.g.
experiments/defences-1m-tuned-exploit.yaml's ExPLoit: its runs' leak figures join those of the run
of the same name (a run missing there is reported and left without them), so the strongest attack
is taken over both; the test AUC is the main sweep's (the extra runs train the same model).

AP = 2*q95|AUC - 1/2| of an attack at the cut, MP the selected model's test AUC, MP* the mean of the
unprotected runs ("none-seed=..."); DCS = 1/(1 + sqrt(AP^2/2 + (MP - MP*)^2/2)); T-DCS the mean DCS over
the attacks given (default) and over their tuned twins ("ATTACK_tuned"); the strongest attack is the one
of largest AP among every attack at the cut. Prints a markdown table, best first; a run lacking an
attack given (its joined run not finished) gets no T-DCS (—). On stderr: each joined run's batch counts
(expensive_every samples ExPLoit's batches) and any joined run whose test AUC differs from the main
sweep's (then it did not train the same model).
"""
import json, os, sys, math
root = sys.argv[1]
attacks = sys.argv[2].split(',')  # default per-batch attacks at the cut
runs = {}
for d in sorted(os.listdir(root)):
    p = os.path.join(root, d, 'summary.json')
    if not os.path.exists(p): continue
    s = json.load(open(p))
    runs[d] = s
for extra in sys.argv[3:]:
    for d, s in runs.items():
        p = os.path.join(extra, d, 'summary.json')
        if not os.path.exists(p):
            print('%s: no %s; its leak figures are left out' % (extra, d), file=sys.stderr)
            continue
        x = json.load(open(p))
        if x.get('test_auc_selected') != s.get('test_auc_selected'):
            print('%s/%s: test AUC %s, the main sweep\'s %s: not the same model' %
                  (extra, d, x.get('test_auc_selected'), s.get('test_auc_selected')), file=sys.stderr)
        for k, v in x['leak'].items():
            if k in s['leak']:
                sys.exit('%s/%s: leak %s is in both sweeps' % (extra, d, k))
            s['leak'][k] = v
        batches = sorted({v['batches'] for k, v in x['leak'].items() if k.endswith('/cut')})
        print('%s/%s: joined, its attacks scored %s batches at the cut' % (extra, d, batches), file=sys.stderr)
def mp(s): return s.get('test_auc_selected')
groups = {}
for d, s in runs.items():
    name = d.rsplit('-seed=', 1)[0]
    groups.setdefault(name, []).append(s)
mpstar = sum(mp(s) for s in groups['none']) / len(groups['none'])
def dcs(ap, m): return 1 / (1 + math.sqrt(0.5 * ap * ap + 0.5 * (m - mpstar) ** 2))
rows = []
for name, ss in groups.items():
    td, tt, sv, strongest, cost = [], [], [], [], []
    for s in ss:
        leak = s['leak']
        m = mp(s)
        if any(a + '/cut' not in leak or a + '_tuned/cut' not in leak for a in attacks):
            td.append(None); tt.append(None)  # an attack given is missing (its joined run unfinished)
        else:
            aps_d = [2 * leak[a + '/cut']['q95_abs'] for a in attacks]
            aps_t = [2 * leak[a + '_tuned/cut']['q95_abs'] for a in attacks]
            td.append(sum(dcs(a, m) for a in aps_d) / len(aps_d))
            tt.append(sum(dcs(a, m) for a in aps_t) / len(aps_t))
        allap = {k: 2 * v['q95_abs'] for k, v in leak.items() if k.endswith('/cut')}
        k = max(allap, key=lambda k: allap[k])
        sv.append(dcs(allap[k], m)); strongest.append('%s (%.3f)' % (k.replace('/cut', ''), allap[k]))
        cost.append(mpstar - m)
    comp = [s.get('eval_attacks_final', {}).get('completion/auc') for s in ss]
    compt = [s.get('eval_attacks_final', {}).get('completion_tuned/auc') for s in ss]
    avg = lambda v: None if None in v else sum(v) / len(v)
    rows.append((avg(sv), name, avg(td), avg(tt), strongest[0], avg(cost), comp[0], compt[0], len(ss)))
rows.sort(key=lambda r: -r[0])
print('| rank | setting | seeds | DCS vs strongest | strongest attack (AP) | T-DCS (default) | T-DCS (tuned) | drop | test-AUC cost | completion AUC default / tuned |')
print('|---|---|---|---|---|---|---|---|---|---|')
for i, r in enumerate(rows):
    f = lambda v: '—' if v is None else '%.4f' % v
    drop = '—' if r[2] is None else '%+.4f' % (r[3] - r[2])
    print('| %d | `%s` | %d | %.4f | %s | %s | %s | %s | %.4f | %s / %s |' % (i + 1, r[1], r[8], r[0], r[4], f(r[2]), f(r[3]), drop, r[5], f(r[6]), f(r[7])))
