"""The call report: its model read from a bundle (model, reading), the timeline laid out once as
figures (timeline, figure) and rendered as SVG and PNG (svg, png), and report.html (html: the
page; verdict, turns, measures: its sections; markup: their shared pieces)."""

# The page's file name, here so a caller that only names it (turnscope open) does not import
# the page's modules (0.6 s) to learn it.
REPORT = "report.html"

__all__ = ["REPORT"]
