from hpubench.cli import main

main()
