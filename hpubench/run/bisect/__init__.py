"""``hpubench bisect``: from a red gate to the commit that caused it (git worktrees, interleaved runs)."""
