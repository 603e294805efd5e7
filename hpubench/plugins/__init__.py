"""Loading what users add: installed packages' entry points and Python files named on the command line."""
