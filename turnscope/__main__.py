from turnscope.cli.entry import run

run()
