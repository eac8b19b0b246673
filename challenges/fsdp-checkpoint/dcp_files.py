import os

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")
torch.manual_seed(0)
model = nn.Linear(8, 12)  # 12 rows: an equal shard on 2, 3, 4 or 6 ranks
fully_shard(model)
dcp.save({"model": model.state_dict()}, checkpoint_id="/tmp/ckpt")  # every rank writes
dist.barrier()
if dist.get_rank() == 0:
    print(sorted(os.listdir("/tmp/ckpt")))
dist.destroy_process_group()
