#!/usr/bin/env python3
# Host-link bandwidth one way and both ways at once: pinned 1 GiB copies on two CUDA streams,
# best of 5, timed with CUDA events (needs torch with CUDA). Usage: python3 bench/link_bidir.py
import torch
n = 1 << 28
h1 = torch.empty(n, dtype=torch.float32).pin_memory(); h2 = torch.empty(n, dtype=torch.float32).pin_memory()
d1 = torch.empty(n, device='cuda'); d2 = torch.empty(n, device='cuda')
s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
def run(h2d, d2h):
    torch.cuda.synchronize(); e0 = torch.cuda.Event(enable_timing=True); e1 = torch.cuda.Event(enable_timing=True)
    e0.record()
    if h2d:
        with torch.cuda.stream(s1): d1.copy_(h1, non_blocking=True)
    if d2h:
        with torch.cuda.stream(s2): h2.copy_(d2, non_blocking=True)
    torch.cuda.synchronize(); e1.record(); torch.cuda.synchronize()
    return e0.elapsed_time(e1)
for name, a, b in [('h2d', 1, 0), ('d2h', 0, 1), ('both', 1, 1)]:
    ms = min(run(a, b) for _ in range(5))
    gb = (a + b) * n * 4 / 1e9
    print(f"{name}: {ms:.1f} ms, {gb/ms*1e3:.1f} GB/s total, {n*4/1e9/ms*1e3:.1f} GB/s per direction")
