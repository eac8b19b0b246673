# Inside a torchrun rank, multiprocessing children started with spawn and forkserver (fresh
# interpreters that re-import this file) work, inherit the rank's environment, and return
# results; torch.multiprocessing.spawn works there too. torch is imported only under __main__
# so that the children stay light.
import multiprocessing
import os


def square(value: int, results) -> None:
    results.put((os.environ.get("RANK"), value * value))


def torch_child(index: int, rank: int) -> None:
    print(f"rank {rank}: torch.multiprocessing child {index} ran", flush=True)


if __name__ == "__main__":
    rank = int(os.environ["RANK"])
    for method in ("spawn", "forkserver"):
        context = multiprocessing.get_context(method)
        results = context.Queue()
        child = context.Process(target=square, args=(rank + 2, results))
        child.start()
        env_rank, value = results.get(timeout=60)
        child.join()
        print(
            f"rank {rank}: {method} child saw RANK={env_rank}, returned {value}, "
            f"exit code {child.exitcode}",
            flush=True,
        )
    import torch.multiprocessing as tmp

    tmp.spawn(torch_child, args=(rank,), nprocs=1, join=True)
    print(f"rank {rank}: done", flush=True)
