import torch
import torch.distributed as dist

dist.init_process_group("gloo")  # launched with 2 ranks
DTYPES = [torch.bool, torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.float8_e4m3fn]
gathered, refused = [], []
for dtype in DTYPES:
    mine = torch.ones(2, dtype=dtype)
    parts = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
    try:
        dist.all_gather(parts, mine)
        gathered.append(str(dtype).removeprefix("torch."))
    except RuntimeError as error:  # gloo refuses the dtype on every rank alike, so no rank hangs
        refused.append(f"{str(dtype).removeprefix('torch.')} ({error})")
print("gathered:", " ".join(gathered))
print("refused:", ", ".join(refused))
dist.destroy_process_group()
