from ondeck.cli import main

main()
