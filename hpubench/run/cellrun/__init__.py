"""One cell's run in three named steps, which ``hpubench.run.worker.run_cell`` chains:

- resolve (``hpubench.run.cellrun.resolve``): the cell's strings become objects (accelerator, strategy,
  prepared precision, workload and model, optimizer, training step, batches), as Lightning Fabric's
  connector does;
- measure (``hpubench.run.cellrun.measure``): warm-up and measured steps, with everything observed around
  them;
- record (``hpubench.run.cellrun.record``): the figures, the quality verdict and the record.

Each step returns what it learned about the run (``hpubench.run.cellrun.facts``) instead of writing into a
dict the others share; the record merges those facts once. Kept apart from ``hpubench.run.worker`` so each
step reads on its own and none grows past a screen.
"""
