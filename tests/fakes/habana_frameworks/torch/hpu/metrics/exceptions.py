"""Double of ``habana_frameworks.torch.hpu.metrics.exceptions``."""


class MetricNotFound(Exception):
    """Raised by ``metric_localcontext`` for a name no metric is registered under."""
