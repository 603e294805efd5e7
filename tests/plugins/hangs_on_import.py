"""A workload file whose import never finishes: its module body sleeps an hour (``--workloads-from``).

hpubench must give up on it after the plugin-import limit (HPUBENCH_PLUGIN_IMPORT_TIMEOUT) with one line
naming this file, not hold the run until a worker start-up timeout.
"""

import time

time.sleep(3600)
