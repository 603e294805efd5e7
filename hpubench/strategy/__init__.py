"""Strategy plugins: how the processes of a cell share the model. ``spec`` declares each one (pure: names,
layouts, refusals, the registry and the ``hpubench.strategies`` entry-point group); ``runtime`` runs it."""
