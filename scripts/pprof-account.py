#!/usr/bin/env python3
"""Account a CPU profile's samples per step, by what the code does and by
the goroutine that ran it (docs/methods/wan.md, "Where the link run's
processor time went").

    go tool pprof -traces step.test link.pprof | python3 scripts/pprof-account.py STEPS

Reads `go tool pprof -traces` output on stdin; STEPS divides the sums (the
timed steps the profile covers, -planner-steps of TestLinkCPUAccount).
A sample goes to the first category, in the order below, one of whose
patterns matches one of its frames, scanning from the leaf; frames of
runtime.asyncPreempt are skipped, so a sample taken in the preemption
handler is charged to the loop it interrupted. Its role is the first role
whose pattern matches any frame.
"""
import re
import sys

CATEGORIES = [
    ("internal/par's idle workers spinning", r"internal/par\.pause"),
    ("the link emulator (linktest)", r"transport/linktest\."),
    ("int8 rounding, packing, unpacking (wire)", r"transport/wire\."),
    ("TLS", r"crypto/"),
    ("gRPC, HTTP/2, protobuf", r"google\.golang\.org/(grpc|protobuf)|golang\.org/x/net/http2"),
    ("collector and allocation", r"runtime\.(gcBgMarkWorker|gcDrain|mallocgc|bgsweep|bgscavenge|sweepone|memclrNoHeapPointers|scanobject|markroot)"),
    ("the measurement's own copies (bench/step)", r"bench/step\."),
    ("the parties' compute (model, tensor, data, party)", r"splitguard/(tensor|nn|model|data|protect|party|internal/vec|optim)"),
    ("system calls, network poller", r"syscall|internal/poll|runtime\.netpoll|net\."),
    ("scheduler, timers, futex", r"runtime\.(schedule|findRunnable|park|futex|notesleep|stopm|mcall|timer|runOneTimer|checkTimers|usleep|osyield|mPark|goready|ready|wakep|startm|sysmon|gopreempt|preempt)"),
]
ROLES = [
    ("the link emulator's pipes", r"transport/linktest\.\(\*Proxy\)\.pipe"),
    ("internal/par's workers (both parties' parts and spin)", r"internal/par\.worker"),
    ("active: gRPC server stream and TrainStep", r"grpc\.\(\*Server\)|active\.Serve|grpcnet\.\(\*service\)"),
    ("passive: party, client Send and Receive", r"passive\.\(\*Passive\)"),
    ("gRPC transports' readers and writers", r"transport\.\(\*http2(Client|Server)\)|newHTTP2(Client|Server)|\(\*loopyWriter\)"),
    ("collector, runtime background", r"runtime\.(gcBgMarkWorker|bgsweep|bgscavenge|sysmon|forcegchelper|runfinq)"),
]


def unit(v):
    m = re.match(r"([\d.]+)(ms|s|us|µs)$", v)
    return float(m.group(1)) * {"s": 1000, "ms": 1, "us": 1e-3, "µs": 1e-3}[m.group(2)]


def samples(lines):
    val, frames = None, []
    for line in lines:
        if line.startswith("-----"):
            if val is not None:
                yield val, frames
            val, frames = None, []
            continue
        if not line.strip() or re.match(r"^\s*\w+:\s", line):  # blank or a label line
            continue
        m = re.match(r"^\s*([\d.]+(?:ms|s|us|µs))\s+(\S.*)$", line)
        if m:
            val, frames = unit(m.group(1)), [m.group(2).strip()]
        elif val is not None:
            frames.append(line.strip())
    if val is not None:
        yield val, frames


def main():
    steps = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    by_cat, by_role, total = {}, {}, 0.0
    for val, frames in samples(sys.stdin):
        own = [f for f in frames if not f.startswith("runtime.asyncPreempt")]
        cat = next((name for f in own for name, pat in CATEGORIES if re.search(pat, f)), "other")
        role = next((name for name, pat in ROLES if any(re.search(pat, f) for f in frames)), "other")
        by_cat[cat] = by_cat.get(cat, 0) + val
        by_role[role] = by_role.get(role, 0) + val
        total += val
    for title, sums in (("what", by_cat), ("goroutine", by_role)):
        print(f"| {title} | ms per step | share |\n|---|---|---|")
        for k, v in sorted(sums.items(), key=lambda kv: -kv[1]):
            print(f"| {k} | {v / steps:.2f} | {100 * v / max(total, 1e-9):.0f}% |")
        print(f"| the profile's total | {total / steps:.2f} | |\n")


if __name__ == "__main__":
    main()
