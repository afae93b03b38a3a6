#!/bin/bash
# Builds devbin/ for run4.sh from the checkout's HEAD (run in the repository root, on a clean tree):
# sg (HEAD), sg-old (OLD, default 33fd7f4: the head before 2026-11-28's changes), sg-prepack (HEAD with
# prepack-b.patch applied) as static, stripped, gzipped builds, and psi.test.
set -euo pipefail
OLD=${OLD:-33fd7f4}
git diff --quiet && git diff --cached --quiet || { echo "build4.sh: the tree has changes; commit or stash them first" >&2; exit 1; }
mkdir -p devbin
b() { CGO_ENABLED=0 go build -ldflags='-s -w' -o "devbin/$1" ./cmd/splitguard && gzip -9f "devbin/$1"; }
b sg
git apply experiments/scaling/prepack-b.patch && { b sg-prepack; git checkout -- tensor/internal/sgemm; }
CGO_ENABLED=0 go test -c -o devbin/psi.test ./psi
w=$(mktemp -d); git worktree add -q --detach "$w" "$OLD"
(cd "$w" && CGO_ENABLED=0 go build -ldflags='-s -w' -o "$OLDPWD/devbin/sg-old" ./cmd/splitguard) && gzip -9f devbin/sg-old
git worktree remove --force "$w"
ls -l devbin
