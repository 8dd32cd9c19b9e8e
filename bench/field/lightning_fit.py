"""A PyTorch Lightning Trainer with gradient accumulation (2 micro-batches per optimizer
step), 40 optimizer steps. Truth: optimizer steps, the median GPU time between optimizer
steps (CUDA events recorded in a Callback), torch.cuda.max_memory_allocated."""
import os
import sys

import torch

try:
    import pytorch_lightning as pl
except ImportError:
    import lightning.pytorch as pl

sys.path.insert(0, os.path.dirname(__file__))
from common import cuda_step_times, med, truth

STEPS = int(os.environ.get("STEPS", "40"))


class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 100000

    def __getitem__(self, i):
        return torch.randn(1024), torch.randn(1024)


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(*[m for _ in range(6) for m in (torch.nn.Linear(1024, 1024), torch.nn.GELU())])

    def training_step(self, batch, i):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


class Clock(pl.Callback):
    def __init__(self):
        self.ev = []
        self.opt_steps = 0

    def on_before_optimizer_step(self, trainer, module, optimizer):
        self.opt_steps += 1

    def on_train_batch_end(self, trainer, module, outputs, batch, i):
        if (i + 1) % 2 == 0:  # an optimizer step happened in this batch
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            self.ev.append(e)


clock = Clock()
tr = pl.Trainer(accelerator="gpu", devices=1, max_steps=STEPS, accumulate_grad_batches=2,
                logger=False, enable_checkpointing=False, enable_progress_bar=False,
                enable_model_summary=False, callbacks=[clock])
tr.fit(Model(), torch.utils.data.DataLoader(Data(), batch_size=256, num_workers=0))
ms = cuda_step_times(clock.ev, 3)
truth(framework="lightning", optimizer_steps=clock.opt_steps, step_ms_median=med(ms),
      max_memory_allocated=torch.cuda.max_memory_allocated(), pid=os.getpid())
