"""Multi-process cells (devices x nodes > 1) on torch.distributed, launched by torch's elastic agent.

The flow for one cell, on every node that takes part:

    Launcher (hpubench run)          hpubench.run.distributed.launch: writes a LaunchSpec, starts the agent in
    its
      |                              own session, enforces the cell's timeout on the whole tree, sweeps
      |                              leftovers, turns what came back into one CellResult
      -> agent process               hpubench.run.distributed.agent:
      torch.distributed.launcher.api.elastic_launch
         |                           with nproc_per_node = devices, max_restarts = 0, and the rendezvous
         |                           of hpubench.run.distributed.rendezvous (node 0 hosts one TCPStore per
         cell) -> one worker per device    hpubench.run.distributed.worker: rank variables from the agent,
         then the same
                                     hpubench.run.worker.run_cell as a single-device cell, with the DDP
                                     strategy

Only node 0 stores the record; every rank gathers all ranks' figures, so the record node 0's local rank 0
writes is the merged one (``hpubench.measure.ranks``).
"""

from __future__ import annotations
