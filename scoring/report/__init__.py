"""The call report: its model read from a bundle (model, reading), the timeline laid out once as
figures (timeline, figure) and rendered as SVG and PNG (svg, png), and report.html (html: the
page; verdict, turns, measures: its sections; markup: their shared pieces)."""
