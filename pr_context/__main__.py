from pr_context.cli import main

main()
