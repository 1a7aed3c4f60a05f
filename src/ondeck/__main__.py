from ondeck.entrypoints.cli import main

main()
