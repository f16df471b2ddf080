"""The timing rule of tools/gpu-check.sh's PyTorch peers, written once: the
median of CUDA-event timings after a warm-up (imported by its Python
sections, with tools/ on PYTHONPATH)."""


def median_ms(fn, warmup=5, runs=30):
    """Median of `runs` CUDA-event timings of fn() after `warmup` calls."""
    import torch
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        s, e = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        s.record(); fn(); e.record(); e.synchronize()
        times.append(s.elapsed_time(e))
    return sorted(times)[len(times) // 2]
