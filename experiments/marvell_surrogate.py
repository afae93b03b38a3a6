#!/usr/bin/python3
"""Marvell s=4 on dumped clean cut gradients: real rows vs a Gaussian surrogate
with the same class means and isotropic variances (the model Marvell assumes).

For each chosen step of a `splitguard train --protect none --dump DIR` run it
prints the class-variance ratio u/v, the share of each class's within-class
variance held by its top 10% of rows, Marvell's own worst-case AUC bound
(solved by `splitguard marvell solve` with P = 4·||Delta||^2), and the norm
attack's AUC after Marvell noise on the real rows, on the Gaussian surrogate,
and without noise. Standard library only (experiments/images.md).

Usage: marvell_surrogate.py DUMP_DIR SPLITGUARD_BINARY STEP,STEP,...
"""
import ast, json, math, random, struct, subprocess, sys
from array import array

def npy(path):
    with open(path, 'rb') as f:
        raw = f.read()
    assert raw[:6] == b'\x93NUMPY'
    major = raw[6]
    if major == 1:
        hl = struct.unpack('<H', raw[8:10])[0]; off = 10
    else:
        hl = struct.unpack('<I', raw[8:12])[0]; off = 12
    hdr = ast.literal_eval(raw[off:off+hl].decode())
    code = {'<f8': 'd', '<f4': 'f', '<u8': 'Q', '<i8': 'q', '|u1': 'B'}[hdr['descr']]
    a = array(code); a.frombytes(raw[off+hl:])
    return a, hdr['shape']

def auc(scores, y):
    pairs = sorted(zip(scores, y))
    # Mann-Whitney with ties ½
    ranks = [0.0]*len(pairs); i = 0
    while i < len(pairs):
        j = i
        while j+1 < len(pairs) and pairs[j+1][0] == pairs[i][0]: j += 1
        for k in range(i, j+1): ranks[k] = (i+j)/2 + 1
        i = j+1
    npos = sum(y); nneg = len(y)-npos
    rs = sum(r for r, (_, l) in zip(ranks, pairs) if l == 1)
    return (rs - npos*(npos+1)/2)/(npos*nneg)

def marvell(u, v, d, g, p, s, exe):
    q = json.dumps({'u': u, 'v': v, 'd': d, 'g': g, 'p': p, 'P': s*g})
    out = subprocess.run([exe, 'marvell', 'solve'], input=q+'\n', capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[0])

def main(dump, exe, steps):
    rnd = random.Random(1)
    idx = [json.loads(l) for l in open(dump + '/index.jsonl')]
    print('step pos  u/v      top10%%share(pos,neg)  auc_bound  norm-AUC(real)  norm-AUC(gauss)  clean-norm-AUC')
    for e in idx:
        if e['step'] not in steps: continue
        y = [int(x) for x in npy(dump + '/' + e['labels'])[0]]
        G, (B, d) = npy(dump + '/' + e['cut_grad'])
        rows = [G[i*d:(i+1)*d] for i in range(B)]
        pos = [i for i in range(B) if y[i]]; neg = [i for i in range(B) if not y[i]]
        mean = lambda ids: [sum(rows[i][k] for i in ids)/len(ids) for k in range(d)]
        m1, m0 = mean(pos), mean(neg)
        dev = lambda i, m: sum((rows[i][k]-m[k])**2 for k in range(d))
        d1 = [dev(i, m1) for i in pos]; d0 = [dev(i, m0) for i in neg]
        v = sum(d1)/(d*len(pos)); u = sum(d0)/(d*len(neg))
        top = lambda ds: sum(sorted(ds)[-max(1, len(ds)//10):])/sum(ds)
        D = [a-b for a, b in zip(m1, m0)]; g = sum(x*x for x in D); nD = math.sqrt(g)
        sol = marvell(u, v, d, g, len(pos)/B, 4, exe)
        lam = {1: (sol['lam11'], sol['lam21']), 0: (sol['lam10'], sol['lam20'])}
        def noisy(x, c):
            l1, l2 = lam[c]; xi = rnd.gauss(0, 1)*math.sqrt(max(l1-l2, 0)); s2 = math.sqrt(l2)
            return [x[k] + xi*D[k]/nD + s2*rnd.gauss(0, 1) for k in range(d)]
        norm = lambda r: math.sqrt(sum(t*t for t in r))
        real = [norm(noisy(rows[i], y[i])) for i in range(B)]
        gauss = []
        for i in range(B):
            m, var = (m1, v) if y[i] else (m0, u)
            sd = math.sqrt(var)
            gauss.append(norm(noisy([m[k] + sd*rnd.gauss(0, 1) for k in range(d)], y[i])))
        clean = [norm(r) for r in rows]
        print('%4d %3d %8.3g  %.2f %.2f            %.3f      %.3f           %.3f            %.3f' % (
            e['step'], len(pos), u/v, top(d1), top(d0), sol['auc_bound'], auc(real, y), auc(gauss, y), auc(clean, y)))

if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2], set(int(s) for s in sys.argv[3].split(',')))
