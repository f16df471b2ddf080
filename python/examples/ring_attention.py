#!/usr/bin/env python3
"""Ring attention over torch.distributed on this machine: `--ranks`
processes (gloo over loopback), each holding a zigzag shard of one causal
sequence, against the same attention in one process.

    python python/examples/ring_attention.py --ranks 2 --seq 4096

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
    ad.ring_attention(*(t[:, :, :8].contiguous() for t in (q, k, v)), is_causal=True)
    dist.barrier()
    t0 = time.perf_counter()
    out = ad.ring_attention(q, k, v, is_causal=True)
    took = time.perf_counter() - t0
    whole = ad.gather_sequence(out)
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
