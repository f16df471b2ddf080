#!/usr/bin/env python3
"""Ring attention over torch.distributed on this machine: `--ranks`
processes (gloo over loopback), each holding a zigzag shard of one causal
sequence, against the same attention in one process.

    python python/examples/ring_attention.py --ranks 2 --seq 4096
    python python/examples/ring_attention.py --ranks 2 --agreement-cost

--timeout bounds every wait on a peer (ring_attention's timeout=; default
$ATTN_MLIR_RING_TIMEOUT, else 300 s). --agreement-cost measures what the
ranks' checks of each other cost: ring_attention makes two small
all-gathers per call (the agreement before the ring, and whether every
rank finished after it), printed against the call itself and against the
smallest all-gather the backend does.

Needs torch (`make torch-venv`, then build/peers-venv/bin/python). Each
process runs one thread (OMP_NUM_THREADS=1), so the ranks use one core each.
"""
import argparse
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def inputs(seq, heads, kv_heads, dim):
    import torch
    g = torch.Generator().manual_seed(0)
    return (torch.randn(1, heads, seq, dim, generator=g),
            torch.randn(1, kv_heads, seq, dim, generator=g),
            torch.randn(1, kv_heads, seq, dim, generator=g))


def median_us(fn, repeat):
    import time as _time
    fn()
    times = []
    for _ in range(repeat):
        t0 = _time.perf_counter()
        fn()
        times.append(_time.perf_counter() - t0)
    return sorted(times)[len(times) // 2] * 1e6


def agreement_cost(rank, world, q, k, v, timeout, repeat):
    """Median µs (rank 0's) of one agreement all-gather, of the smallest
    all-gather (one int64), and of a whole ring_attention call."""
    import torch
    import torch.distributed as dist
    from attn_mlir import distributed as ad
    one = torch.zeros(1, dtype=torch.int64)
    out = [torch.empty_like(one) for _ in range(world)]
    values = ad._ring_values(q, k, v, True, True, None, None)
    dist.barrier()
    raw = median_us(lambda: dist.all_gather(out, one), repeat)
    dist.barrier()
    wait = ad._timeout(timeout)
    agree = median_us(lambda: ad._agree(1, values, None, rank, world, wait), repeat)
    dist.barrier()
    call = median_us(lambda: ad.ring_attention(q, k, v, is_causal=True, timeout=timeout),
                     max(5, repeat // 20))
    return raw, agree, call


def rank_main(rank, world, port, args):
    import torch
    import torch.distributed as dist
    from attn_mlir import distributed as ad
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    q, k, v = (ad.shard_sequence(t) for t in inputs(args.seq, args.heads, args.kv_heads,
                                                   args.dim))
    # A first call compiles (or loads) the kernels; the timed one runs them.
    ad.ring_attention(*(t[:, :, :8] for t in (q, k, v)), is_causal=True,
                      timeout=args.timeout)
    if args.agreement_cost:
        raw, agree, call = agreement_cost(rank, world, q, k, v, args.timeout, 200)
        if rank == 0:
            print(f"{world} ranks (gloo, loopback), T={args.seq}: one agreement all-gather "
                  f"{agree:.0f} us (the smallest all-gather, one int64: {raw:.0f} us); "
                  f"ring_attention makes 2 per call: {2 * agree:.0f} us of {call:.0f} us "
                  f"({200 * agree / call:.2f}%)")
        dist.destroy_process_group()
        return
    dist.barrier()
    t0 = time.perf_counter()
    out = ad.ring_attention(q, k, v, is_causal=True, timeout=args.timeout)
    took = time.perf_counter() - t0
    whole = ad.gather_sequence(out, timeout=args.timeout)
    if rank == 0:
        import attn_mlir.torch as at
        q, k, v = inputs(args.seq, args.heads, args.kv_heads, args.dim)
        gqa = args.heads != args.kv_heads
        at.scaled_dot_product_attention(q[:, :, :8], k[:, :, :8], v[:, :, :8],
                                        is_causal=True, enable_gqa=gqa)
        t0 = time.perf_counter()
        ref = at.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
        single = time.perf_counter() - t0
        print(f"{world} ranks: {took:.2f} s (rank 0); 1 process, 1 thread: {single:.2f} s; "
              f"max abs difference {(whole - ref).abs().max().item():.2e}")
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds a rank waits for a peer (default: $ATTN_MLIR_RING_TIMEOUT, "
                         "else 300)")
    ap.add_argument("--agreement-cost", action="store_true",
                    help="measure the ranks' checks of each other instead")
    args = ap.parse_args()
    if args.ranks < 1 or args.seq % (2 * args.ranks):
        ap.error("--ranks must be >= 1 and --seq a multiple of 2 * ranks (zigzag shards)")
    try:
        import torch.multiprocessing as mp
    except ImportError:
        sys.exit("this example needs torch: `make torch-venv`, then run it with "
                 "build/peers-venv/bin/python")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(rank_main, args=(args.ranks, port, args), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
