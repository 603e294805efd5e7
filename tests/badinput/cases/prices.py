"""Price files (``report --prices``)."""

from __future__ import annotations

from tests.badinput.cases.table import add

PRICE_FILES: list[tuple[str, str, str]] = [
    ("syntax", "[[price]\n", "invalid TOML"),
    ("unknown top key", "prices = 1\n", "unknown key"),
    ("price not array", '[price]\nname = "x"\n', "array of tables"),
    ("no name", "[[price]]\nusd_per_device_hour = 1.0\n", "name"),
    ("empty name", '[[price]]\nname = ""\n', "name"),
    (
        "dup name",
        '[[price]]\nname = "a"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = 1\n'
        '[[price]]\nname = "a"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = 1\n',
        "twice",
    ),
    ("new needs usd", '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "x"\n', "usd_per_device_hour"),
    ("new needs match", '[[price]]\nname = "new"\naccelerator = "cpu"\nusd_per_device_hour = 1\n', "match"),
    (
        "bad accelerator",
        '[[price]]\nname = "new"\naccelerator = "tpu"\nmatch = "x"\nusd_per_device_hour = 1\n',
        "accelerator",
    ),
    (
        "bad regex",
        '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "(["\nusd_per_device_hour = 1\n',
        "regular expression",
    ),
    (
        "negative usd",
        '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = -1\n',
        "usd_per_device_hour",
    ),
    (
        "zero usd",
        '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = 0\n',
        "usd_per_device_hour",
    ),
    (
        "nan usd",
        '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = nan\n',
        "usd_per_device_hour",
    ),
    (
        "inf usd",
        '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = inf\n',
        "usd_per_device_hour",
    ),
    (
        "string usd",
        '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = "1"\n',
        "usd_per_device_hour",
    ),
    ("unknown price key", '[[price]]\nname = "new"\ncost = 1\n', "cost"),
    ("nested past the parser", "x = " + "{a=" * 5000 + "1" + "}" * 5000 + "\n", "invalid TOML"),
    (
        "estimate string",
        '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = 1\n'
        'estimate = "yes"\n',
        "estimate",
    ),
    ("peak not array", '[peak]\nname = "x"\n', "array of tables"),
    ("peak unknown key", '[[peak]]\nname = "H100 SXM"\nbf17 = 3\n', "bf17"),
    ("peak negative", '[[peak]]\nname = "H100 SXM"\nbf16 = -3\n', "bf16"),
    ("peak string", '[[peak]]\nname = "H100 SXM"\nbf16 = "fast"\n', "bf16"),
    ("peak nan", '[[peak]]\nname = "H100 SXM"\nbf16 = nan\n', "bf16"),
    ("peak estimates", '[[peak]]\nname = "H100 SXM"\nestimates = ["fp64"]\n', "estimates"),
    (
        "instance zero",
        '[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "x"\nusd_per_device_hour = 1\n'
        "devices_per_instance = 0\n",
        "devices_per_instance",
    ),
]
for name, text, fragment in PRICE_FILES:
    add(
        "prices",
        name,
        ["report", "run", "-o", "r.html", "--prices", "p.toml"],
        fragment,
        files={"p.toml": text},
    )
add("prices", "missing file", ["report", "run", "-o", "r.html", "--prices", "nope.toml"], "nope.toml")
add(
    "prices",
    "not utf8",
    ["report", "run", "-o", "r.html", "--prices", "p.toml"],
    "UTF-8",
    files={"p.toml": b"\xff\xfe[[price]]\n"},
)
add(
    "prices",
    "directory",
    ["report", "run", "-o", "r.html", "--prices", "pdir"],
    "pdir",
    files={"pdir/a": "x"},
)
