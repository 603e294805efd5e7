from hpubench.present.cli.main import main

main()
