from pr_context.cli import run

run()
