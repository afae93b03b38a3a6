#!/usr/bin/env python3
"""Old ranking against new, from two tables scripts/tdcs-tuned.py printed for the same sweep: OLD
without an extra sweep's attacks, NEW with them (e.g. ExPLoit joined from
experiments/defences-1m-tuned-exploit.yaml), and the defences whose T-DCS fell by more than LIMIT
(default 0.05) once the attacker was tuned, in NEW.

    python3 scripts/tdcs-tuned.py out/d1m norm,cosine,spectral > old.md
    python3 scripts/tdcs-tuned.py out/d1m norm,cosine,spectral,exploit out/d1m-exploit > new.md
    python3 scripts/tdcs-rank-change.py old.md new.md [LIMIT]
"""
import sys


def table(path):
    rows = {}
    for line in open(path):
        c = [x.strip() for x in line.strip().strip('|').split('|')]
        if len(c) < 8 or not c[0].isdigit():
            continue
        rows[c[1].strip('`')] = {'rank': int(c[0]), 'dcs': c[3], 'strongest': c[4],
                                 'td': c[5], 'tt': c[6], 'drop': c[7]}
    return rows


old, new = table(sys.argv[1]), table(sys.argv[2])
limit = float(sys.argv[3]) if len(sys.argv) > 3 else 0.05
print('| setting | old rank | old DCS vs strongest (attack) | new rank | new DCS vs strongest (attack) | T-DCS default → tuned (drop) |')
print('|---|---|---|---|---|---|')
fell = []
for name, n in sorted(new.items(), key=lambda kv: kv[1]['rank']):
    o = old.get(name, {'rank': '—', 'dcs': '—', 'strongest': '—'})
    print('| `%s` | %s | %s %s | %d | %s %s | %s → %s (%s) |' % (name, o['rank'], o['dcs'], o['strongest'],
          n['rank'], n['dcs'], n['strongest'], n['td'], n['tt'], n['drop']))
    if n['drop'] not in ('—', '') and float(n['drop']) < -limit:
        fell.append('%s (%s)' % (name, n['drop']))
missing = [k for k, n in new.items() if n['drop'] == '—']
print()
print('T-DCS fell by more than %g once the attacker was tuned: %s.' % (limit, ', '.join(fell) or 'none'))
if missing:
    print('Without T-DCS (a joined run not finished): %s.' % ', '.join(sorted(missing)))
