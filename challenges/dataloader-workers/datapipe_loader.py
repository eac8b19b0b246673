import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.datapipes.iter import IterableWrapper

dist.init_process_group("gloo")  # launched with 2 ranks
rank = dist.get_rank()
if rank == 0:  # only rank 0 loops, as an evaluation pass would
    plain = DataLoader([1, 2, 3], batch_size=2)
    print("plain list:", [batch.tolist() for batch in plain], flush=True)
    piped = DataLoader(IterableWrapper([1, 2, 3]), batch_size=2)
    print("datapipe:", [batch.tolist() for batch in piped], flush=True)
print(f"rank {rank} done", flush=True)
