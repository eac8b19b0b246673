import torch
import torch.distributed as dist
from torch.distributed.constants import default_pg_nccl_timeout, default_pg_timeout

torch.cuda.set_device(0)
dist.init_process_group("nccl")
print(f"nccl {default_pg_nccl_timeout}, gloo {default_pg_timeout}")
dist.destroy_process_group()
