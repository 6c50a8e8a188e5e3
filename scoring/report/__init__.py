"""The call report: its model, the timeline figures, report.html, timeline.png."""
