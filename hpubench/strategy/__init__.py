"""Strategy plugins: how the processes of a cell share the model (``runtime``)."""
