"""The pre-warmed fork server: the server, the child it forks per cell, the launcher's client, and the wire
between them."""
