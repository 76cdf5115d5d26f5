#!/usr/bin/env python3
# Robustness smoke: `gateway --check` on randomly mutated copies of a config must exit 0 or 2, never crash.
# usage: tests/fuzz/fuzz_config.py GATEWAY_BIN CONFIG RUNS   (use the asan build to catch memory errors)
import os, random, subprocess, sys, tempfile
random.seed(11)
gateway, config, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
src = open(config, 'rb').read()
work = tempfile.mkdtemp()
case = os.path.join(work, 'case.yaml')
bad = 0; counts = {}
for it in range(runs):
    b = bytearray(src)
    for _ in range(random.randint(1, 6)):
        i = random.randrange(len(b)); op = random.random()
        if op < 0.4: b[i] = random.choice(b"{}[]:,-'\"&*!|>#%@ \n\t0123456789abcxyz\x00\xff")
        elif op < 0.7: del b[i:i + random.randint(1, 30)]
        else: b[i:i] = random.choice([b"{", b"[", b": ", b"\n  x: 1\n", b"&a ", b"*a", b"!!binary ", b"9999999999999999999999", b"-1", b"1e309", b"''", b"~"])
    open(case, 'wb').write(b)
    r = subprocess.run([gateway, '--check', case], capture_output=True, timeout=20)
    counts[r.returncode] = counts.get(r.returncode, 0) + 1
    if r.returncode not in (0, 2) or b'ERROR' in r.stderr or b'runtime error' in r.stderr:
        bad += 1; open(os.path.join(work, 'bad-%d.yaml' % it), 'wb').write(b); print(r.returncode, r.stderr[-500:])
print('exit codes', counts, 'bad', bad, '(failing cases kept in %s)' % work if bad else '')
sys.exit(1 if bad else 0)
