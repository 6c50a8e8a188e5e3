"""What the CLI's commands do, as functions of the public API that return typed results: run a
suite, score one against references, a load test, add a fixture, gate a scorecard, calibrate
devices, the demo call, a placed call's summary. The CLI parses its flags, calls one of these
and renders what it returns; a script calls the same functions (``turnscope.api``)."""
