from turnscope.cli.main import run

run()
