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

STEPS is the number of training steps in the window (the run's steps less
the first tenth); the window runs from a tenth into the active party's
Train handler's life to its last transition. Roles come from the stack at
which a goroutine blocks.
"""
import collections
import re
import sys

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
    role, events, cur, stack = {}, [], None, []
    for line in open(path):
        if line.startswith('M='):
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
    handler = [t for _, t, gid, _, _ in events if role.get(gid) == 'active (Train handler)']
    if not handler:
        sys.exit('no Train handler in the trace')
    first, last = handler[0], handler[-1]
    start = first + (last - first) // 10
    since, waits = {}, collections.defaultdict(list)
    for _, t, gid, a, b in events:
        if t > last:
            break
        if b == 'Runnable':
            since[gid] = t
        elif a == 'Runnable' and b == 'Running' and gid in since:
            if t > start:
                waits[role.get(gid, 'other')].append((t - since[gid]) / 1e6)
            del since[gid]
    print(f'window {(last - start) / 1e6:.1f} ms, {steps} steps')
    print(f'{"role":26s} {"waits":>7s} {"median ms":>10s} {"p90 ms":>8s} {"ms per step":>12s}')
    for r, v in sorted(waits.items()):
        v.sort()
        print(f'{r:26s} {len(v):7d} {v[len(v) // 2]:10.3f} {v[int(len(v) * 0.9)]:8.3f} {sum(v) / steps:12.2f}')


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]))
