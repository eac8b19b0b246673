# The PyTorch tutorial pattern, run as `python snippet.py`: no torchrun variables in the parent,
# mp.spawn starts the ranks (fresh interpreters that re-import this file as __mp_main__, hence
# the __main__ guard), each sets MASTER_ADDR/MASTER_PORT and joins with an explicit rank.
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def worker(rank: int, world_size: int, port: int) -> None:
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    total = torch.tensor([rank + 1.0])
    dist.all_reduce(total)
    print(f"worker {rank}: __name__={__name__} RANK={os.environ.get('RANK')} sum={total.item()}")
    dist.destroy_process_group()


if __name__ == "__main__":
    print("parent: RANK =", os.environ.get("RANK"), "WORLD_SIZE =", os.environ.get("WORLD_SIZE"))
    mp.spawn(worker, args=(2, free_port()), nprocs=2, join=True)
    print("parent: every worker joined")
