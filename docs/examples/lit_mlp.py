"""A small LightningModule for docs/integrations.md: an MLP classifier on synthetic data.

Runs under ``pytorch_lightning``, else ``lightning.pytorch``: a Trainer takes modules of its own package only.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

try:
    import pytorch_lightning as pl
except ImportError:
    import lightning.pytorch as pl


class LitMLP(pl.LightningModule):
    def __init__(self, features: int = 64, width: int = 256, classes: int = 10, batch_size: int = 64) -> None:
        super().__init__()
        self.batch_size = batch_size
        layers = [nn.Linear(features, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU()]
        self.net = nn.Sequential(*layers, nn.Linear(width, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)

    def train_dataloader(self) -> DataLoader:
        g = torch.Generator().manual_seed(0)
        x = torch.randn(8192, 64, generator=g)
        y = torch.randint(0, 10, (8192,), generator=g)
        return DataLoader(TensorDataset(x, y), batch_size=self.batch_size, shuffle=True)
