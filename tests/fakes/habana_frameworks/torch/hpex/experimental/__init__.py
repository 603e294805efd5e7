"""Double of ``habana_frameworks.torch.hpex.experimental``."""
