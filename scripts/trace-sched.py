#!/usr/bin/env python3
"""Scheduler latency per goroutine role in a traced run over the emulated link.

How long each kind of goroutine waited for a processor (Runnable -> Running)
in a two-party run traced in one process: the parties' compute, gRPC's
writers and readers, the link proxy's reader and writer, internal/par's
workers. Issue 30, docs/methods/wan.md ("The serial chain of the WAN k = 4
row").

    go test -c -o step.test ./bench/step
    ./step.test -test.run 'TestPlannerPredictsLink/20ms/.*k=4' -planner-check -test.trace trace.out
    go tool trace -d=parsed trace.out > trace.txt
    python3 scripts/trace-sched.py trace.txt STEPS

STEPS is the number of training steps in the window. Where the trace holds
the region "link run" (bench/step.MeasureOverLink marks each run over the
link with it), the window is the last such region: all its steps, warm-up
included (-planner-steps N gives N + 2). Otherwise it runs from a tenth into
the active party's Train handler's life to its last transition (the run's
steps less the first tenth). Roles come from the stack at which a goroutine
blocks. A second table splits the waits of gRPC's writers and readers and
of the proxy's reader by the goroutine that woke them ("netpoll": the
network poller, no goroutine).
"""
import collections
import re
import sys

REGION = re.compile(r'^M=-?\d+ P=-?\d+ G=-?\d+ Region(Begin|End) Time=(\d+) .*Type="link run"')
TRANSITION = re.compile(r'^M=-?\d+ P=-?\d+ G=(-?\d+) StateTransition Time=(\d+) GoID=(\d+) (\w+)->(\w+)')
ROLES = [  # first match wins: stack fragment, role
    ('linktest.(*Proxy).pipe.func1', 'proxy writer'),
    ('linktest.(*Proxy).pipe', 'proxy reader'),
    ('http2Client).reader', 'gRPC reader, passive'),
    ('http2Server).HandleStreams', 'gRPC reader, active'),
    ('loopyWriter', 'gRPC writer (both)'),
    ('grpcnet.(*service).Train', 'active (Train handler)'),
    ('party/passive', 'passive'),
    ('par.worker', 'internal/par worker'),
]


def role_of(stack):
    text = ' '.join(stack)
    for frag, name in ROLES:
        if frag in text:
            return name
    return None


def main(path, steps):
    role, events, cur, stack, region = {}, [], None, [], []
    for line in open(path):
        if line.startswith('M='):
            r = REGION.match(line)
            if r:
                region.append((r.group(1), int(r.group(2))))
            if cur and cur[3] == 'Running' and cur[4] == 'Waiting':
                r = role_of(stack)
                if r:
                    role.setdefault(cur[2], r)
            stack, cur = [], None
            m = TRANSITION.match(line)
            if m:
                waker, t, gid, a, b = m.groups()
                cur = (waker, int(t), gid, a, b)
                events.append(cur)
        elif line.startswith('TransitionStack'):
            stack = []
        elif line.startswith('\t') and cur is not None:
            stack.append(line.strip())
    begins = [t for kind, t in region if kind == 'Begin']
    ends = [t for kind, t in region if kind == 'End']
    if begins and ends and ends[-1] > begins[-1]:
        start, last = begins[-1], ends[-1]
    else:
        handler = [t for _, t, gid, _, _ in events if role.get(gid) == 'active (Train handler)']
        if not handler:
            sys.exit('no Train handler in the trace')
        first, last = handler[0], handler[-1]
        start = first + (last - first) // 10
    since, waits, byWaker = {}, collections.defaultdict(list), collections.defaultdict(list)
    for waker, t, gid, a, b in events:
        if t > last:
            break
        if b == 'Runnable':
            since[gid] = (t, waker)
        elif a == 'Runnable' and b == 'Running' and gid in since:
            t0, w = since.pop(gid)
            if t > start:
                r = role.get(gid, 'other')
                waits[r].append((t - t0) / 1e6)
                if r.startswith(('gRPC', 'proxy reader')):
                    byWaker[(r, 'netpoll' if w == '-1' else role.get(w, 'other'))].append((t - t0) / 1e6)
    print(f'window {(last - start) / 1e6:.1f} ms, {steps} steps')
    print(f'{"role":26s} {"waits":>7s} {"median ms":>10s} {"p90 ms":>8s} {"ms per step":>12s}')
    for r, v in sorted(waits.items()):
        v.sort()
        print(f'{r:26s} {len(v):7d} {v[len(v) // 2]:10.3f} {v[int(len(v) * 0.9)]:8.3f} {sum(v) / steps:12.2f}')
    print()
    print(f'{"role, woken by":50s} {"waits":>7s} {"median ms":>10s} {"p90 ms":>8s} {"ms per step":>12s}')
    for (r, w), v in sorted(byWaker.items()):
        v.sort()
        print(f'{r + ", by " + w:50s} {len(v):7d} {v[len(v) // 2]:10.3f} {v[int(len(v) * 0.9)]:8.3f} {sum(v) / steps:12.2f}')


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]))
